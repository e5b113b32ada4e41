package capacity_test

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dralloc/dralloc/capacity"
)

func TestValidateQuantity(t *testing.T) {
	for _, tc := range []struct {
		name  string
		in    string
		valid bool
	}{
		{"plain integer", "8", true},
		{"binary suffix", "80Gi", true},
		{"milli value", "1500m", true},
		{"nano value", "1n", true},
		{"negative value within bounds", "-5", true},
		{"zero", "0", true},
		{"zero at the smallest exponent", "0e-9", true},
		{"zero at a small exponent", "0e-8", true},
		{"zero below the smallest exponent", "0e-10", false},
		{"zero at a large exponent", "0e33", true},
		{"zero at a larger exponent", "0e35", true},
		{"zero at the largest exponent", "0e36", true},
		{"zero past the largest exponent", "0e37", false},
		{"zero with a milli suffix", "0m", true},
		{"zero with a binary suffix", "0Gi", true},
		{"exponent notation within bounds", "1e18", true},
		{"largest int64", "9223372036854775807", true},
		{"binary suffix capped by ParseQuantity", "16Ei", true},
		{"long mantissa with small exponent", "100000000000000000000e-2", true},
		{"largest int64 plus one", "9223372036854775808", true},
		{"exponent notation past int64", "1e19", true},
		{"largest exponent", "5e36", true},
		{"exponent past the largest", "1e37", false},
		{"huge decimal exponent", "1E100000000", false},
		{"zero with huge decimal exponent", "0E100000000", false},
		{"zero with tiny decimal exponent", "0e-100000000", false},
		{"long mantissa", "1000000000000000000000000000000000000000000000000000000000000000000000k", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := resource.ParseQuantity(tc.in)
			if err != nil {
				t.Fatalf("parse %q: %v", tc.in, err)
			}
			before := q.DeepCopy()
			err = capacity.ValidateQuantity(q)
			if tc.valid && err != nil {
				t.Errorf("ValidateQuantity(%s) = %v, want nil", tc.in, err)
			}
			if !tc.valid && !errors.Is(err, capacity.ErrUnboundedQuantity) {
				t.Errorf("ValidateQuantity(%s) = %v, want ErrUnboundedQuantity", tc.in, err)
			}
			if q.Cmp(before) != 0 && tc.valid {
				t.Errorf("quantity changed")
			}
		})
	}
}

// Zero, which drivers publish for every engine a partition lacks, is checked without allocating, as
// other integers are.
func TestValidateQuantityZeroDoesNotAllocate(t *testing.T) {
	for _, s := range []string{"0", "0m", "0Gi", "16", "80Gi"} {
		q := resource.MustParse(s)
		if n := testing.AllocsPerRun(100, func() { _ = capacity.ValidateQuantity(q) }); n != 0 {
			t.Errorf("ValidateQuantity(%s): %v allocations, want 0", s, n)
		}
	}
}

func TestValidateQuantityConstructed(t *testing.T) {
	if err := capacity.ValidateQuantity(*resource.NewScaledQuantity(1, -12)); !errors.Is(err, capacity.ErrUnboundedQuantity) {
		t.Errorf("1p: got %v, want ErrUnboundedQuantity", err)
	}
	if err := capacity.ValidateQuantity(resource.Quantity{}); err != nil {
		t.Errorf("zero Quantity: got %v", err)
	}
}
