package livetest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeScript puts a scripts/kube-apiserver with the body in a fresh directory and works from there, so
// that the plane starts it; it logs its steps to calls.log.
func fakeScript(t *testing.T, body string) string {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\necho \"$1\" >>" + filepath.Join(root, "calls.log") + "\n" + body + "\n"
	if err := os.WriteFile(filepath.Join(root, "scripts", "kube-apiserver"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join(root, "scripts"))
	t.Setenv("DRALLOC_APISERVER", "")
	return root
}

// tests stands for a testing.M: it records that the tests ran, and exits with code.
type tests struct {
	ran  bool
	code int
}

func (m *tests) Run() int {
	m.ran = true
	return m.code
}

const kubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`

func TestRunStartsStopsAndHandsAClient(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kubeconfig"), []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	root := fakeScript(t, `case "$1" in start) cp `+filepath.Join(dir, "kubeconfig")+` "$2/kubeconfig";; esac; exit 0`)
	p := &Plane{Name: "kube-apiserver"}
	var log strings.Builder
	if code := p.run(&tests{code: 3}, &log); code != 3 {
		t.Errorf("exit code %d, want the tests' 3 (log %q)", code, log.String())
	}
	var sub *testing.T
	t.Run("client", func(t *testing.T) { sub = t; p.Client(t) })
	if p.client == nil || sub.Skipped() {
		t.Error("no clientset made from the plane's kubeconfig")
	}
	b, err := os.ReadFile(filepath.Join(root, "calls.log"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Fields(string(b)), []string{"start", "stop"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("steps %q, want %q", got, want)
	}
}

func TestRunWithoutAPlaneSkipsTheTests(t *testing.T) {
	fakeScript(t, `echo "/x/bin/kube-apiserver is not built: run it build" >&2; exit 1`)
	p := &Plane{Name: "kube-apiserver"}
	m := &tests{}
	var log strings.Builder
	if code := p.run(m, &log); code != 0 || !m.ran {
		t.Fatalf("code %d, ran %v: the tests run (and skip) when no plane can be built", code, m.ran)
	}
	if !strings.Contains(log.String(), "kube-apiserver tests skip") || !strings.Contains(p.skip, "not built") {
		t.Errorf("log %q, skip %q: want the reason", log.String(), p.skip)
	}
	var sub *testing.T
	t.Run("client", func(t *testing.T) { sub = t; p.Client(t); t.Error("Client returned without a plane") })
	if !sub.Skipped() {
		t.Error("a test asking for a client did not skip")
	}
}

func TestRunFailsWhenABuiltPlaneDoesNotStart(t *testing.T) {
	fakeScript(t, `case "$1" in start) echo "etcd exited" >&2; exit 1;; esac; exit 0`)
	p := &Plane{Name: "kube-apiserver"}
	m := &tests{}
	var log strings.Builder
	if code := p.run(m, &log); code != 1 || m.ran {
		t.Fatalf("code %d, ran %v: want 1 without running the tests", code, m.ran)
	}
	if !strings.Contains(log.String(), "etcd exited") {
		t.Errorf("log %q does not say why", log.String())
	}
}
