package manifest

import (
	"bytes"
	"encoding/json"
	"io"

	corev1 "k8s.io/api/core/v1"
)

// A List (kubectl get -o yaml or -o json of many kinds) is most of the bytes of a dump: 5,000 nodes
// with their ResourceSlices and 10,000 pods are one List of 11 MB of JSON. Decoding it as a
// corev1.List copies every item into a RawExtension before the first item is decoded, so the
// document's bytes are held twice, and then its decoded objects besides. streamList decodes the
// items one by one, each straight from the document's bytes: what the List holds apart from its
// items (apiVersion, kind, metadata) is decoded first, as a List with no items, and each item is
// then decoded as before (document), from a sub-slice of data, not a copy.
//
// The answer is the one a corev1.List decode gives: the List without its items decodes as the
// List with them does (a RawExtension accepts any JSON value, so the items add no error of their
// own at the List's level), and each item's bytes are those the RawExtension would hold. Whatever
// is not plainly such a List (another kind, a typed list, an error at the List's level, items
// that are not an array) is left to the decode of the whole document, which reports it as before.

// listParts are the parts of a JSON object with an "items" array: the object with an empty
// array in the place of the items, and the items, sub-slices of the document.
type listParts struct {
	skeleton []byte
	items    [][]byte
}

// skipValue is a JSON value read and dropped: Decode checks it without copying it.
type skipValue struct{}

func (*skipValue) UnmarshalJSON([]byte) error { return nil }

// splitList splits the JSON document data, an object with the member "items" an array, into its
// parts; ok is false for any other document (a syntax error included: the decode of the whole
// document reports it).
func splitList(data []byte) (parts listParts, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return listParts{}, false
	}
	var skeleton bytes.Buffer
	skeleton.WriteByte('{')
	found := false
	// Each round reads one member of the object, so the loop ends with the document.
	for first := true; dec.More(); first = false {
		tok, err := dec.Token()
		if err != nil {
			return listParts{}, false
		}
		key, isString := tok.(string)
		if !isString {
			return listParts{}, false
		}
		if !first {
			skeleton.WriteByte(',')
		}
		name, err := json.Marshal(key)
		if err != nil {
			return listParts{}, false
		}
		skeleton.Write(name)
		skeleton.WriteByte(':')
		if key == "items" && !found && nextIsArray(data, dec.InputOffset()) {
			found = true
			if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
				return listParts{}, false
			}
			for dec.More() {
				start := dec.InputOffset()
				if err := dec.Decode(&skipValue{}); err != nil {
					return listParts{}, false
				}
				item := bytes.TrimLeft(data[start:dec.InputOffset()], ", \t\r\n")
				parts.items = append(parts.items, item)
			}
			if tok, err := dec.Token(); err != nil || tok != json.Delim(']') {
				return listParts{}, false
			}
			skeleton.WriteString("[]")
			continue
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return listParts{}, false
		}
		skeleton.Write(value)
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') || !found {
		return listParts{}, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return listParts{}, false // more after the object: not one document
	}
	skeleton.WriteByte('}')
	parts.skeleton = skeleton.Bytes()
	return parts, true
}

// nextIsArray reports whether the next value of data from offset, past white space and the colon
// after a key, begins an array.
func nextIsArray(data []byte, offset int64) bool {
	for i := offset; i < int64(len(data)); i++ {
		switch data[i] {
		case ' ', '\t', '\r', '\n', ':':
			continue
		case '[':
			return true
		}
		return false
	}
	return false
}

// streamList decodes data, a JSON document, as a List item by item (see above); handled is false
// when data is not plainly a List, and nothing was decoded: the caller decodes the whole document.
// dups are the field paths the document's YAML gave twice.
func (d *decoder) streamList(data []byte, src Source, dups []string) (handled bool, err error) {
	parts, ok := splitList(data)
	if !ok {
		return false, nil
	}
	_, ser := codec()
	obj, gvk, err := ser.Decode(parts.skeleton, nil, nil)
	if _, isList := obj.(*corev1.List); !isList || err != nil {
		return false, nil
	}
	listDups, itemDups := splitItemPaths(dups)
	if err := d.decodeError(obj, gvk, nil, src, listDups); err != nil {
		return true, err
	}
	return true, d.listItems(parts.items, src, func(i int) []string { return itemDups[i] })
}
