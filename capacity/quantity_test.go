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

func TestValidateQuantityConstructed(t *testing.T) {
	if err := capacity.ValidateQuantity(*resource.NewScaledQuantity(1, -12)); !errors.Is(err, capacity.ErrUnboundedQuantity) {
		t.Errorf("1p: got %v, want ErrUnboundedQuantity", err)
	}
	if err := capacity.ValidateQuantity(resource.Quantity{}); err != nil {
		t.Errorf("zero Quantity: got %v", err)
	}
}
