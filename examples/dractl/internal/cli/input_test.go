package cli

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExitStatuses: bad input is 3, dractl's own failure 2 (the status Go's runtime exits with on
// a fatal error, which no recover can catch), so that one is never taken for the other.
func TestExitStatuses(t *testing.T) {
	boom := &command{name: "boom", summary: "panics", flags: func(*flag.FlagSet) any { return nil },
		run: func(*env, any) (int, error) { panic("boom") }}
	saved := commands
	commands = append(append([]*command(nil), commands...), boom)
	t.Cleanup(func() { commands = saved })

	code, _, errOut := dractl(t, nodeAndPod, "boom", "-f", "-")
	if code != 2 || !strings.HasPrefix(errOut, "dractl: internal error: boom\n") || !strings.Contains(errOut, "goroutine ") {
		t.Errorf("a panic: exit %d, stderr:\n%s\nwant exit 2, the panic and its stack", code, errOut)
	}
	code, _, errOut = dractl(t, "kind: Pod\n", "explain", "-f", "-")
	if code != 3 || !strings.Contains(errOut, "apiVersion: cannot decode: required field is missing") {
		t.Errorf("bad input: exit %d, stderr %q; want 3", code, errOut)
	}
	code, _, _ = dractl(t, "", "explain")
	if code != 3 {
		t.Errorf("bad usage: exit %d, want 3", code)
	}
	_, usage, _ := dractl(t, "", "--help")
	if !strings.Contains(strings.Join(strings.Fields(usage), " "), "2 dractl failed (a bug, or out of memory), 3 bad input or usage") {
		t.Errorf("the usage does not document the exit statuses:\n%s", usage)
	}
}

// TestHostileInput: input that would hang dractl or run it out of memory is refused as bad input,
// naming what is wrong.
func TestHostileInput(t *testing.T) {
	var bomb strings.Builder
	bomb.WriteString("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations: {a: &x " + strings.Repeat("x", 10<<10) + "}\nspec:\n  containers: [")
	for i := range 50000 {
		if i > 0 {
			bomb.WriteString(",")
		}
		bomb.WriteString("*x")
	}
	bomb.WriteString("]\n")
	var deployments []string
	for i := range 40 {
		deployments = append(deployments, fmt.Sprintf(
			"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web%d}\nspec:\n  replicas: 100000\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec: {containers: [{name: c, image: i}]}\n", i))
	}
	negative := "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: s}\nspec:\n  replicas: 2\n  ordinals: {start: -5}\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec: {containers: [{name: c, image: i}]}\n"

	dir := t.TempDir()
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.yaml")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, stdin string
		args        []string
		want        string
	}{
		{"an alias bomb", bomb.String(), []string{"explain", "-f", "-"},
			"dractl explain: -: document 1: too large: more than 67108864 bytes (Options.MaxBytes) once its YAML aliases are expanded"},
		{"4 million replicas in 9 KB", strings.Join(deployments, "---\n"), []string{"place", "-f", "-", "--max-pods", "1000"},
			"dractl place: -: document 1: Deployment default/web0: spec.replicas: too many pods: 100000 pods, more than Options.MaxPods (1000)"},
		{"a link to /dev/zero in a directory", "", []string{"lint", "-f", dir},
			"dractl lint: open " + filepath.Join(dir, "zero.yaml") + ": not a regular file: character device"},
		{"stdin over --max-bytes", nodeAndPod, []string{"explain", "-f", "-", "--max-bytes", "10"},
			"dractl explain: -: too large: more than 10 bytes (Options.MaxBytes)"},
		{"a negative first ordinal", negative, []string{"explain", "-f", "-"},
			"dractl explain: -: document 1: StatefulSet default/s: spec.ordinals.start: invalid object"},
		{"a limit that is not positive", nodeAndPod, []string{"explain", "-f", "-", "--max-pods", "0"},
			"dractl explain: --max-bytes and --max-pods must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := dractl(t, tc.stdin, tc.args...)
			if code != exitBadInput || !strings.HasPrefix(errOut, tc.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d and %q", code, errOut, exitBadInput, tc.want)
			}
		})
	}
}

// TestLinkedDirectory: a link to a directory, as a mounted ConfigMap is, reads the directory.
func TestLinkedDirectory(t *testing.T) {
	abs, err := filepath.Abs(reasons)
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "cluster")
	if err := os.Symlink(abs, link); err != nil {
		t.Fatal(err)
	}
	wantCode, want, wantErr := dractl(t, "", "place", "-f", reasons)
	code, out, errOut := dractl(t, "", "place", "-f", link)
	if code != wantCode || out != want || errOut != wantErr || !strings.Contains(out, "kind: List") {
		t.Errorf("through a link: exit %d, stdout:\n%s\nstderr: %s\nwant exit %d and:\n%s", code, out, errOut, wantCode, want)
	}
}
