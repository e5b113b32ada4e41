package modproxy_test

import (
	"archive/zip"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dralloc/dralloc/fuzz/upstream/internal/modproxy"
)

// gitRepo makes a repository in a temporary folder with one commit made at 2026-01-02T03:04:05Z: a library
// module at the root, with a LICENSE, and a module beside it in tool/ that has none.
func gitRepo(dir string) (string, error) {
	files := map[string]string{
		"go.mod":       "module " + modproxy.Library + "\n\ngo 1.26.0\n",
		"LICENSE":      "license\n",
		"lib.go":       "package dralloc\n",
		".gitignore":   "*.bin\n",
		"tool/go.mod":  "module " + modproxy.Library + "/tool\n\ngo 1.26.0\n",
		"tool/main.go": "package main\n",
	}
	for name, text := range files {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return "", err
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"commit", "-q", "-m", "first"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_COMMITTER_NAME=a",
			"GIT_COMMITTER_EMAIL=a@example.com", "GIT_AUTHOR_DATE=2026-01-02T03:04:05Z", "GIT_COMMITTER_DATE=2026-01-02T03:04:05Z",
			"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir, nil
}

// newRepo is gitRepo in a temporary folder of t.
func newRepo(t *testing.T) string {
	t.Helper()
	repo, err := gitRepo(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return repo
}

// zipNames is the file names in the zip the proxy at dir holds for modPath@v.
func zipNames(t *testing.T, dir, modPath, v string) []string {
	t.Helper()
	z, err := zip.OpenReader(filepath.Join(dir, filepath.FromSlash(modPath), "@v", v+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	var names []string
	for _, f := range z.File {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	return names
}

func TestCommitOf(t *testing.T) {
	repo := newRepo(t)
	v, err := modproxy.PseudoVersion(repo, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	hash, err := modproxy.CommitOf(repo, v)
	if err != nil || !strings.HasPrefix(v, "v0.0.0-20260102030405-") || !strings.HasSuffix(v, hash[:12]) {
		t.Fatalf("PseudoVersion %s, CommitOf: %s, %v", v, hash, err)
	}
	for _, tc := range []struct{ name, v, want string }{
		{"the time of another commit", strings.Replace(v, "20260102030405", "20260102030406", 1), "was made at 2026-01-02T03:04:05Z, the version says 2026-01-02T03:04:06Z"},
		{"a commit the repository lacks", "v0.0.0-20260102030405-0123456789ab", "git log -1"},
		{"a tag", "v0.1.0", "not a pseudo-version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := modproxy.CommitOf(repo, tc.v); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.v) {
				t.Errorf("CommitOf(%s) = %v, want an error naming the version and saying %q", tc.v, err, tc.want)
			}
		})
	}
}

// TestWriteServesWhatGitWould: the library's zip leaves out the module in tool/, tool's zip gets the root's
// LICENSE, and a work tree's zip has its untracked files but not the ignored ones.
func TestWriteServesWhatGitWould(t *testing.T) {
	repo := newRepo(t)
	for name, text := range map[string]string{"tool/new.go": "package main\n", "tool/tool.bin": "binary"} {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v, err := modproxy.PseudoVersion(repo, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	lib, err := modproxy.FromCommit(repo, "HEAD", "", modproxy.Library, v)
	if err != nil {
		t.Fatal(err)
	}
	tool, err := modproxy.FromWorkTree(repo, "tool", modproxy.Library+"/tool", "v0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	proxy := t.TempDir()
	if err := modproxy.Write(proxy, lib, tool); err != nil {
		t.Fatal(err)
	}
	p := modproxy.Library + "@" + v + "/"
	if got, want := zipNames(t, proxy, modproxy.Library, v), []string{p + ".gitignore", p + "LICENSE", p + "go.mod", p + "lib.go"}; !slices.Equal(got, want) {
		t.Errorf("library zip: %q, want %q", got, want)
	}
	p = modproxy.Library + "/tool@v0.1.0/"
	if got, want := zipNames(t, proxy, modproxy.Library+"/tool", "v0.1.0"), []string{p + "LICENSE", p + "go.mod", p + "main.go", p + "new.go"}; !slices.Equal(got, want) {
		t.Errorf("tool zip: %q, want %q", got, want)
	}
	list, err := os.ReadFile(filepath.Join(proxy, modproxy.Library, "@v", "list"))
	if err != nil || string(list) != v+"\n" {
		t.Errorf("list: %q, %v", list, err)
	}
	if _, err := modproxy.FromWorkTree(repo, "tool", modproxy.Library+"/other", "v0.1.0"); err == nil || !strings.Contains(err.Error(), `go.mod declares module "`+modproxy.Library+`/tool"`) {
		t.Errorf("FromWorkTree with the wrong module path: %v", err)
	}
}

// The pseudo-version of a commit is what modules beside the library require it at.
func ExamplePseudoVersion() {
	dir, err := os.MkdirTemp("", "modproxy")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	repo, err := gitRepo(dir)
	if err != nil {
		panic(err)
	}
	v, err := modproxy.PseudoVersion(repo, "HEAD")
	if err != nil {
		panic(err)
	}
	fmt.Println(v[:len("v0.0.0-20260102030405-")])
	// Output:
	// v0.0.0-20260102030405-
}
