//go:build unix

package manifest

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestHostileInputs: input built to hang the loader, run it out of memory or make it answer
// wrongly gets a clean error: an *Error naming the file, wrapping the package's sentinel.
func TestHostileInputs(t *testing.T) {
	var forty, daemons []string
	for i := range 40 {
		forty = append(forty, deploymentYAML(fmt.Sprintf("web%d", i), 100000))
	}
	for i := range 30 {
		daemons = append(daemons, daemonSetYAML(fmt.Sprintf("agent%d", i)), nodeYAML(fmt.Sprintf("node%d", i)))
	}
	nested := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n    a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	for c, prev := 'b', 'a'; c <= 'j'; c, prev = c+1, c {
		nested += fmt.Sprintf("    %c: &%c [%s]\n", c, c, strings.TrimSuffix(strings.Repeat("*"+string(prev)+", ", 10), ", "))
	}
	const template = "  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec: {containers: [{name: c, image: i}]}\n"
	for _, tc := range []struct {
		name, input string
		opts        Options
		is          error
	}{
		{"an alias bomb", aliasBomb(10<<10, 50000), Options{}, ErrTooLarge},
		{"aliases of aliases, 10⁹ scalars", nested, Options{}, ErrTooLarge},
		{"an alias in its own anchor", "apiVersion: v1\nkind: Pod\nmetadata: &m {name: p, x: *m}\n", Options{}, ErrDecode},
		{"one endless line", strings.Repeat("x", 2<<20), Options{MaxBytes: 1 << 20}, ErrTooLarge},
		{"half a million empty documents", strings.Repeat("---\n", 1<<19), Options{MaxBytes: 1 << 20}, ErrTooLarge},
		{"YAML nested 100,000 deep", strings.Repeat("[", 100000) + strings.Repeat("]", 100000), Options{}, ErrDecode},
		{"JSON nested 100,000 deep", "{\"a\": " + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + "}", Options{}, ErrDecode},
		{"40 Deployments of 100,000 replicas", stream(forty...), Options{MaxPods: 1000}, ErrTooManyPods},
		{"a Job of 2³¹-1 pods", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  parallelism: 2147483647\n  completions: 2147483647\n  template: {spec: {restartPolicy: Never, containers: [{name: c, image: i}]}}\n", Options{}, ErrTooManyPods},
		{"30 DaemonSets on 30 Nodes", stream(daemons...), Options{MaxPods: 800}, ErrTooManyPods},
		{"a StatefulSet with the last ordinal", "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: s}\nspec:\n  replicas: 2147483647\n  ordinals: {start: 2147483647}\n" + template, Options{}, ErrTooManyPods},
		{"names that a suffix source repeats", stream(replicaSetYAML("web", 3)), Options{Suffix: func(string, int) string { return "bcdfg" }}, ErrNameConflict},
		{"a StatefulSet pod named like another pod", stream(podYAML("s-0"), "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: s, namespace: ns}\nspec:\n  replicas: 1\n"+template), Options{}, ErrNameConflict},
		{"negative replicas", deploymentYAML("web", -1), Options{}, ErrInvalid},
		{"100,000 copies of a template of 10,000 variables", envDeployment("web", 100000, 10000), Options{}, ErrTooLarge},
		{"a quantity whose parse takes minutes", "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {capacity: {cpu: \"1e-100000000\"}}\n", Options{}, ErrDecode},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(strings.NewReader(tc.input), "hostile.yaml", tc.opts)
			var e *Error
			if !errors.Is(err, tc.is) || !errors.As(err, &e) || e.Source.File != "hostile.yaml" {
				t.Fatalf("got %v, want an *Error naming hostile.yaml wrapping %v", err, tc.is)
			}
		})
	}
}

// TestHostileFiles: files that would block or never end are refused before they are read.
func TestHostileFiles(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	dir := tree(t, map[string]string{"a.yaml": podYAML("a")}, map[string]string{"zero.yaml": "/dev/zero", "loop": "."})
	for _, tc := range []struct {
		name string
		path string
		is   error
	}{
		{"a link to /dev/zero in a directory", dir, ErrNotRegular},
		{"/dev/zero given as the path", "/dev/zero", ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadSoon(t, []string{tc.path}, Options{MaxBytes: 1 << 20})
			if !errors.Is(err, tc.is) {
				t.Fatalf("got %v, want an error wrapping %v", err, tc.is)
			}
		})
	}
}
