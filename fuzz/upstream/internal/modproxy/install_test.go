package modproxy_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dralloc/dralloc/fuzz/upstream/internal/modproxy"
)

// repoRoot is the root of the repository these tests run in.
func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not in a git work tree: %v", err)
	}
	root := strings.TrimSpace(string(out))
	if out, _ := exec.Command("git", "-C", root, "rev-parse", "--is-shallow-repository").Output(); strings.TrimSpace(string(out)) == "true" {
		t.Skip("a shallow clone may not hold the commit the modules require")
	}
	return root
}

// TestModulesRequireACommitOfTheLibrary: every module of the workspace but the library requires the library
// at a pseudo-version of a commit of this repository, with no replace directive, and the go.work replaces
// exactly that version with the work tree (so that the workspace never fetches it).
func TestModulesRequireACommitOfTheLibrary(t *testing.T) {
	root := repoRoot(t)
	dirs, paths, err := modproxy.Workspace(root)
	if err != nil {
		t.Fatal(err)
	}
	work, err := os.ReadFile(filepath.Join(root, "go.work"))
	if err != nil {
		t.Fatal(err)
	}
	nested := 0
	for i, d := range dirs {
		if paths[i] == modproxy.Library {
			continue
		}
		nested++
		v, err := modproxy.Required(filepath.Join(root, d, "go.mod"))
		if err != nil {
			t.Error(err)
			continue
		}
		if _, err := modproxy.CommitOf(root, v); err != nil {
			t.Errorf("%s/go.mod: %v", d, err)
		}
		if want := "replace " + modproxy.Library + " " + v + " => ./"; !strings.Contains(string(work), want) {
			t.Errorf("go.work has no %q for %s/go.mod", want, d)
		}
	}
	if nested < 4 {
		t.Errorf("go.work uses %d modules beside the library, want kubectl-dra, explainer, packing and fuzz/upstream: %v", nested, dirs)
	}
}

// TestGoInstallByVersion installs kubectl-dra, the explainer and packing by version from a proxy folder
// serving the work tree, as a user with a fresh module cache would, and runs what was installed.
func TestGoInstallByVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds three binaries with client-go")
	}
	root := repoRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	tmp := t.TempDir()
	proxy := filepath.Join(tmp, "proxy")
	const version = "v0.1.0"
	served, err := modproxy.Serve(proxy, root, version)
	if err != nil {
		t.Fatal(err)
	}
	lib := served[0]
	in := modproxy.Installer{Proxy: proxy, Dir: filepath.Join(tmp, "user"), Offline: true}

	bin, err := in.Install(ctx, modproxy.Library+"/examples/dractl/kubectl-dra@"+version)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, bin, "version").CombinedOutput()
	for _, want := range []string{
		"kubectl dra " + version + "\n",
		"  module:  " + modproxy.Library + "/examples/dractl/kubectl-dra\n",
		"  dralloc: " + lib.Version + "\n",
	} {
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("kubectl-dra version: %v, no %q in\n%s", err, want, out)
		}
	}

	for _, pkg := range []string{"examples/explainer", "examples/packing"} {
		bin, err := in.Install(ctx, modproxy.Library+"/"+pkg+"@"+version)
		if err != nil {
			t.Fatal(err)
		}
		// go version -m reads the build information the binary carries: the main module at the version
		// installed, the library at the version its go.mod requires.
		out, err := exec.CommandContext(ctx, "go", "version", "-m", bin).Output()
		if err != nil {
			t.Fatalf("go version -m %s: %v", bin, err)
		}
		for _, want := range []string{"\tmod\t" + modproxy.Library + "/" + pkg + "\t" + version + "\t", "\tdep\t" + modproxy.Library + "\t" + lib.Version + "\t"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("go version -m %s: no %q in\n%s", bin, want, out)
			}
		}
	}
}
