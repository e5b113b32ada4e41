package inventory_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/dralloc/dralloc/inventory"
)

func TestNormalizeVersion(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"580.95.05", "580.95.5", ""},
		{"550.54.15", "550.54.15", ""},
		{"12.4", "12.4.0", ""},
		{"9.0", "9.0.0", ""},
		{"10", "10.0.0", ""},
		{" 535.104.05 ", "535.104.5", ""},
		{"1.2.3.4", "", "more than three components"},
		{"12.x", "", "not a non-negative integer"},
		{"", "", "not a non-negative integer"},
		{"1..2", "", "not a non-negative integer"},
		{"-1.0", "", "not a non-negative integer"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := inventory.NormalizeVersion(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("= %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestDeviceNamesAreDNSLabels(t *testing.T) {
	for _, tc := range []struct {
		profile string
		id      int
		want    string
	}{
		{"1g.10gb", 19, "gpu-3-mig-1g10gb-19-6"},
		{"1g.10gb+me", 20, "gpu-3-mig-1g10gb-me-20-6"},
		{"1g.24gb+me.all", 15, "gpu-3-mig-1g24gb-meall-15-6"},
		{"1g.24gb-me", 13, "gpu-3-mig-1g24gb-me-13-6"},
		{"7G.80GB", 0, "gpu-3-mig-7g80gb-0-6"},
	} {
		got := inventory.MIGDeviceName(3, tc.profile, tc.id, 6)
		if got != tc.want {
			t.Errorf("MIGDeviceName(%q) = %q, want %q", tc.profile, got, tc.want)
		}
		if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
			t.Errorf("%q: %v", got, errs)
		}
	}
}
