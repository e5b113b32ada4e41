// Package modproxy serves this repository's modules from a folder laid out as a Go module proxy (the
// GOPROXY protocol over file://), so that `go install github.com/dralloc/dralloc/...@version` can be run
// for real before anything is published: the library at the version the other modules require, read from
// the git commit that version names, and the modules that sit beside it (kubectl-dra, the explainer,
// packing, fuzz/upstream) from the work tree at a version chosen by the caller.
//
// Module zips are made with golang.org/x/mod/zip, with the files the go command itself would put in them
// (git archive of the commit; in the work tree, what git tracks or would track), so the h1: hashes the go
// command computes from them are those of the go.sum files in the repository.
//
// It may import the standard library and golang.org/x/mod; the install tests of this module and
// cmd/moduleproxy (the script's entry point) import it.
package modproxy
