// Command moduleproxy writes a folder that serves this repository's modules as a Go module proxy, so that
// they can be installed by version before anything is published:
//
//	cd fuzz/upstream && go run ./cmd/moduleproxy -o /tmp/proxy -version v0.1.0
//	GOPROXY=file:///tmp/proxy,https://proxy.golang.org GONOSUMDB=github.com/dralloc \
//	  go install github.com/dralloc/dralloc/examples/dractl/kubectl-dra@v0.1.0
//
// Every module of the go.work at the repository root but the library is served from the work tree at
// -version; the library at each version those modules require, from the commit the version names.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dralloc/dralloc/fuzz/upstream/internal/modproxy"
)

func main() {
	out := flag.String("o", "", "the proxy folder to write (created if missing)")
	version := flag.String("version", "v0.1.0", "the version the work tree's modules are served at")
	repo := flag.String("repo", "../..", "the repository root (the folder of go.work)")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: moduleproxy -o DIR [-version v0.1.0] [-repo ../..]")
		os.Exit(2)
	}
	root, err := filepath.Abs(*repo)
	if err == nil {
		*out, err = filepath.Abs(*out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "moduleproxy:", err)
		os.Exit(1)
	}
	served, err := modproxy.Serve(*out, root, *version)
	if err != nil {
		fmt.Fprintln(os.Stderr, "moduleproxy:", err)
		os.Exit(1)
	}
	var lines []string
	for _, m := range served {
		lines = append(lines, "  "+m.String())
	}
	fmt.Printf("served from file://%s:\n%s\n", filepath.ToSlash(*out), strings.Join(lines, "\n"))
}
