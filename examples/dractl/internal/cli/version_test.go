package cli

import (
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersionOf: the version report names the module and its version, the commit and whether the
// tree was modified, the library, and the Kubernetes API read, from the build information.
func TestVersionOf(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.0",
		Main:      debug.Module{Path: "github.com/dralloc/dralloc/examples/dractl/kubectl-dra", Version: "v0.4.0"},
		Deps: []*debug.Module{
			{Path: "github.com/dralloc/dralloc", Version: "v0.4.0"},
			{Path: "k8s.io/api", Version: "v0.37.2"},
			{Path: "k8s.io/client-go", Version: "v0.37.2"},
		},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abc"}, {Key: "vcs.modified", Value: "true"}},
	}
	const want = `kubectl dra v0.4.0
  module:  github.com/dralloc/dralloc/examples/dractl/kubectl-dra
  commit:  0123abc (modified)
  dralloc: v0.4.0
  API:     resource.k8s.io/v1 (k8s.io/api v0.37.2)
  go:      go1.26.0
`
	if got := versionOf(bi).text("kubectl dra"); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// Built from a checkout without VCS stamping: no commit, the version "(devel)".
	bi = &debug.BuildInfo{Main: debug.Module{Path: "github.com/dralloc/dralloc"}, Deps: []*debug.Module{{Path: "k8s.io/api", Version: "v0.37.2"}}}
	if got, want := versionOf(bi).text("dractl"), "dractl (devel)\n  module:  github.com/dralloc/dralloc\n  API:     resource.k8s.io/v1 (k8s.io/api v0.37.2)\n"; got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestVersionCommand: version needs no input and says which API it reads; a flag it does not
// take is bad input. A test binary carries no dependencies in its build information, so the
// k8s.io/api version is checked on a built kubectl-dra (TestVersionBuilt there).
func TestVersionCommand(t *testing.T) {
	code, out, errOut := dractl(t, "", "version")
	if code != exitOK || errOut != "" || !strings.HasPrefix(out, "dractl ") || !strings.Contains(out, "API:     resource.k8s.io/v1 (") {
		t.Errorf("version: status %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, _ = dractl(t, "", "version", "-o", "json")
	if code != exitOK || !strings.Contains(out, `"api": "resource.k8s.io/v1"`) {
		t.Errorf("version -o json: status %d, stdout %q", code, out)
	}
	if code, _, errOut = dractl(t, "", "version", "-f", "x"); code != exitBadInput || !strings.Contains(errOut, "the only flag is -o") {
		t.Errorf("version -f x: status %d, stderr %q", code, errOut)
	}
}

// twoPending are a node and two pending pods, train (app=train) and web (app=web).
var twoPending = nodeAndPod[:strings.Index(nodeAndPod, "---")] + `---
apiVersion: v1
kind: Pod
metadata:
  name: train
  labels: {app: train}
spec:
  containers:
  - name: c
    image: busybox
---
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  containers:
  - name: c
    image: busybox
`

// TestSelector: -l narrows the pending pods decided, as kubectl get -l narrows what it lists;
// the messages for no pod to decide say why: no pods at all, none matching, or all have a node.
func TestSelector(t *testing.T) {
	onlyNode := nodeAndPod[:strings.Index(nodeAndPod, "---")]
	for _, tc := range []struct {
		name, stdin string
		args        []string
		code        int
		out, err    string
	}{
		{"-l decides the pods it matches", twoPending, []string{"place", "-o", "text", "-l", "app=train"}, exitOK, "Pod default/train goes to node n1\n", ""},
		{"--selector with a set", twoPending, []string{"explain", "--selector", "app in (web)"}, exitOK, "Pod default/web fits on node n1\n", ""},
		{"no pod matches", twoPending, []string{"explain", "-l", "app=db"}, exitOK, "No pending pods in the input match the selector app=db.\n", ""},
		{"no pods at all is said so", onlyNode, []string{"explain"}, exitOK, "No pods in the input.\n", ""},
		{"no pods at all, place", onlyNode, []string{"place", "-o", "text"}, exitOK, "No pods in the input.\n", ""},
		{"a selector that does not parse is bad input", twoPending, []string{"explain", "-l", "app=("}, exitBadInput, "", `dractl explain: --selector "app=(": `},
	} {
		code, out, errOut := dractl(t, tc.stdin, append(tc.args, "-f", "-")...)
		if code != tc.code || out != tc.out || !strings.HasPrefix(errOut, tc.err) || (tc.err == "" && errOut != "") {
			t.Errorf("%s: status %d, stdout %q, stderr %q; want %d, %q, %q", tc.name, code, out, errOut, tc.code, tc.out, tc.err)
		}
	}
}
