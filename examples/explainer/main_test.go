package main

import (
	"testing"
	"time"
)

// The flags are refused before anything starts where client-go's leader election would refuse them.
func TestLeaseTimingsValidate(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name  string
		l     leaseTimings
		valid bool
	}{
		{"kube-scheduler's defaults", leaseTimings{15 * s, 10 * s, 2 * s}, true},
		{"duration equal to the renew deadline", leaseTimings{10 * s, 10 * s, 2 * s}, false},
		{"renew deadline exactly 1.2 retry periods", leaseTimings{15 * s, 12 * s, 10 * s}, false},
		{"renew deadline just over 1.2 retry periods", leaseTimings{15 * s, 12*s + 1, 10 * s}, true},
		{"zero retry period", leaseTimings{15 * s, 10 * s, 0}, false},
	} {
		if err := tc.l.validate(); (err == nil) != tc.valid {
			t.Errorf("%s: %v, want valid %v", tc.name, err, tc.valid)
		}
	}
}
