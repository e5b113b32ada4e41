package cli

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
)

// versionInfo is what `version` prints: what was built, from which commit, and which Kubernetes
// API it reads, as `kubectl version` says what it is and which server it speaks to.
type versionInfo struct {
	// Module and Version are the main module as built: a tagged version when installed with
	// go install ...@version, "(devel)" when built from a checkout.
	Module  string `json:"module"`
	Version string `json:"version"`
	// Commit is the VCS revision the binary was built from, Modified whether the tree had changes;
	// empty when built without VCS stamping (-buildvcs=false, or from the module proxy).
	Commit   string `json:"commit,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	// Library is the version of github.com/dralloc/dralloc that decides, when it is a dependency.
	Library string `json:"library,omitempty"`
	// API is the group and version of the DRA objects read; KubernetesAPI the k8s.io/api module
	// their types come from.
	API           string `json:"api"`
	KubernetesAPI string `json:"kubernetesAPI"`
	Go            string `json:"go"`
}

// versionOf reads bi, the build information of the running binary.
func versionOf(bi *debug.BuildInfo) versionInfo {
	v := versionInfo{API: resourcev1.SchemeGroupVersion.String(), KubernetesAPI: "unknown", Version: "unknown"}
	if bi == nil {
		return v
	}
	v.Module, v.Version, v.Go = bi.Main.Path, cmp.Or(bi.Main.Version, "(devel)"), bi.GoVersion
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	for _, d := range bi.Deps {
		if d.Replace != nil && d.Replace.Version != "" {
			d = d.Replace
		}
		switch d.Path {
		case "k8s.io/api":
			v.KubernetesAPI = "k8s.io/api " + d.Version
		case "github.com/dralloc/dralloc":
			v.Library = d.Version
		}
	}
	return v
}

// text is the report as people read it.
func (v versionInfo) text(name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n", name, v.Version)
	if v.Module != "" {
		fmt.Fprintf(&b, "  module:  %s\n", v.Module)
	}
	if v.Commit != "" {
		modified := ""
		if v.Modified {
			modified = " (modified)"
		}
		fmt.Fprintf(&b, "  commit:  %s%s\n", v.Commit, modified)
	}
	if v.Library != "" {
		fmt.Fprintf(&b, "  dralloc: %s\n", v.Library)
	}
	fmt.Fprintf(&b, "  API:     %s (%s)\n", v.API, v.KubernetesAPI)
	if v.Go != "" {
		fmt.Fprintf(&b, "  go:      %s\n", v.Go)
	}
	return b.String()
}

// runVersion is the version command: args are its flags, -o json or -o text.
func runVersion(name string, args []string, stdout, stderr io.Writer) int {
	output := "text"
	switch strings.Join(args, " ") {
	case "", "-o text", "-otext", "--o=text", "-o=text":
	case "-o json", "-ojson", "--o=json", "-o=json":
		output = "json"
	case "-h", "--help", "-help":
		fmt.Fprintf(stdout, "print the version of %s, the commit it was built from and the Kubernetes API it reads\n\nUsage: %s version [-o text|json]\n", name, name)
		return exitOK
	default:
		fmt.Fprintf(stderr, "%s version: unexpected arguments %q: the only flag is -o text|json\n", name, args)
		return exitBadInput
	}
	bi, _ := debug.ReadBuildInfo()
	v := versionOf(bi)
	if output == "json" {
		data, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			fmt.Fprintf(stderr, "%s version: %v\n", name, err)
			return exitInternal
		}
		fmt.Fprintf(stdout, "%s\n", data)
		return exitOK
	}
	fmt.Fprint(stdout, v.text(name))
	return exitOK
}
