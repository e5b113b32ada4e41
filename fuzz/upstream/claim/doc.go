// Package claim compares dralloc's inventory/claim device metadata documents with the documents
// k8s.io/dynamic-resource-allocation writes: its api/metadata types, path helpers and scheme, and the way
// kubeletplugin's metadata writer groups devices per request and encodes one document per apiVersion.
//
// Imports (tests only): the upstream module, and of dralloc inventory/claim, allocator and fuzz.
package claim
