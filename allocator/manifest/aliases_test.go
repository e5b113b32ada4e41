package manifest

import (
	"errors"
	"runtime"
	"strings"
	"testing"
)

// aliasBomb is a Pod whose annotation refers n times to one anchored string of size bytes.
func aliasBomb(size, n int) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n    a: &x ")
	b.WriteString(strings.Repeat("x", size))
	b.WriteString("\nspec:\n  containers: [")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("*x")
	}
	b.WriteString("]\n")
	return b.String()
}

// TestDecodeRefusesAliasBombs: a 156 KiB document whose 10 KiB anchored string is referred to
// 50,000 times would be 500 MB of JSON; it is refused before it is expanded.
func TestDecodeRefusesAliasBombs(t *testing.T) {
	bomb := aliasBomb(10<<10, 50000)
	if len(bomb) > 160<<10 {
		t.Fatalf("the bomb is %d bytes", len(bomb))
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Decode(strings.NewReader(bomb), "bomb.yaml", Options{})
	runtime.ReadMemStats(&after)
	want := "bomb.yaml: document 1: too large: more than 67108864 bytes (Options.MaxBytes) once its YAML aliases are expanded"
	if !errors.Is(err, ErrTooLarge) || err.Error() != want {
		t.Fatalf("got %v, want %q", err, want)
	}
	// Refused before the expansion: far less allocated than the expanded document.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
		t.Errorf("allocated %d MiB to refuse a %d KiB document", alloc>>20, len(bomb)>>10)
	}
}

func TestDecodeAliases(t *testing.T) {
	for _, tc := range []struct {
		name, input string
		opts        Options
		err         string // "" for none
	}{
		{"aliases within the bound are expanded", `
apiVersion: v1
kind: Pod
metadata: {name: p, labels: &l {app: web}, annotations: *l}
`, Options{}, ""},
		{"nested aliases are measured without expanding them", `
apiVersion: v1
kind: Pod
metadata:
  name: p
  annotations:
    a: &a [x, x, x, x, x, x, x, x, x, x]
    b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
    c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
    d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
    e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
    f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]
    g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]
    h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]
    i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h, *h]
`, Options{MaxBytes: 1 << 20}, "input.yaml: document 1: too large: more than 1048576 bytes (Options.MaxBytes) once its YAML aliases are expanded"},
		{"the bound is Options.MaxBytes", aliasBomb(100, 100), Options{MaxBytes: 5000},
			"input.yaml: document 1: too large: more than 5000 bytes (Options.MaxBytes) once its YAML aliases are expanded"},
		{"the document is counted in the stream", "apiVersion: v1\nkind: Node\nmetadata: {name: node1}\n---\n" + aliasBomb(100, 100), Options{MaxBytes: 5000},
			"input.yaml: document 2: too large: more than 5000 bytes (Options.MaxBytes) once its YAML aliases are expanded"},
		{"an alias inside its own anchor", "apiVersion: v1\nkind: Pod\nmetadata: &m {name: p, x: *m}\n", Options{}, "input.yaml: document 1: cannot decode: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(strings.NewReader(tc.input), "input.yaml", tc.opts)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("got %v", err)
			case tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err)):
				t.Fatalf("got %v, want %q", err, tc.err)
			}
		})
	}
}
