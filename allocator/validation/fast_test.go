package validation

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
	"pgregory.net/rapid"
)

// The fast checks accept exactly what the apimachinery checks accept.
func TestPropFastChecksAgreeWithApimachinery(t *testing.T) {
	alphabet := []rune("aZz09_-.A/")
	rapid.Check(t, func(rt *rapid.T) {
		s := string(rapid.SliceOfN(rapid.SampledFrom(alphabet), 0, 12).Draw(rt, "s"))
		if long := rapid.IntRange(0, 5).Draw(rt, "long"); long > 0 {
			s = strings.Repeat("a", 60*long) + s // around the length limits
		}
		if got, want := isCIdentifier(s), len(validation.IsCIdentifier(s)) == 0; got != want {
			rt.Errorf("isCIdentifier(%q) = %v, apimachinery %v", s, got, want)
		}
		if got, want := isDNSLabel(s), len(validation.IsDNS1123Label(s)) == 0; got != want {
			rt.Errorf("isDNSLabel(%q) = %v, apimachinery %v", s, got, want)
		}
		if got, want := isDNSSubdomain(s), len(validation.IsDNS1123Subdomain(s)) == 0; got != want {
			rt.Errorf("isDNSSubdomain(%q) = %v, apimachinery %v", s, got, want)
		}
	})
}
