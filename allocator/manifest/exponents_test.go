package manifest

import (
	"regexp"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// longExponentRE is what hasLongExponent scans for, as the regular expression it replaced.
var longExponentRE = regexp.MustCompile(`[0-9.][eE][+-]?[0-9]{5,}`)

func TestHasLongExponent(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{`{"value":"1e-10000000"}`, true},
		{`{"value":1E+12345}`, true},
		{`{"value":".e12345"}`, true},
		{`{"value":"1e1234"}`, false},
		{`{"value":"1e+1234"}`, false},
		{`{"name":"e12345"}`, false},
		{`{"name":"xe12345"}`, false},
		{`{"value":"1e+-12345"}`, false},
		{`1e12345`, true},
		{`e`, false},
		{``, false},
	} {
		if got := hasLongExponent([]byte(tc.in)); got != tc.want {
			t.Errorf("hasLongExponent(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestPropHasLongExponentAgreesWithRegexp checks the scan by hand against the regular expression on
// strings drawn from the bytes that matter to it.
func TestPropHasLongExponentAgreesWithRegexp(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.SliceOfN(rapid.SampledFrom([]string{"0", "7", "9", ".", "e", "E", "+", "-", "x", `"`, "12345", "1e"}), 0, 40).Draw(t, "parts")
		in := strings.Join(parts, "")
		if got, want := hasLongExponent([]byte(in)), longExponentRE.MatchString(in); got != want {
			t.Fatalf("hasLongExponent(%q) = %v, the regular expression says %v", in, got, want)
		}
	})
}

// BenchmarkHasLongExponent scans 1 MiB of a JSON List of slices with no long exponent, by hand and
// with the regular expression it replaced.
func BenchmarkHasLongExponent(b *testing.B) {
	item := `{"name":"gpu-3","attributes":{"index":{"int":3},"model":{"string":"H100"}},"capacity":{"memory":{"value":"80Gi"}}},`
	data := []byte(strings.Repeat(item, 1<<20/len(item)))
	for _, scan := range []struct {
		name string
		has  func([]byte) bool
	}{{"scan", hasLongExponent}, {"regexp", longExponentRE.Match}} {
		b.Run(scan.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if scan.has(data) {
					b.Fatal("found a long exponent")
				}
			}
		})
	}
}
