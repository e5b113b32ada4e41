package main

import (
	"io"
	"slices"
	"testing"

	"github.com/dralloc/dralloc/allocator/verify"
)

func rules(v []verify.Violation) []verify.Rule {
	var out []verify.Rule
	for _, x := range v {
		out = append(out, x.Rule)
	}
	return out
}

func TestVerifyAndAudit(t *testing.T) {
	f, err := admission(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	// train holds gpu-0 to gpu-3 and serve gpu-4 (FirstFit in device order): dralloc's proposal (gpu-5,
	// gpu-6) is valid; reusing gpu-4 breaks exclusive use; a free MIG device breaks the class and the
	// count, and nothing else.
	want := map[string][]verify.Rule{
		"computed by dralloc":                    nil,
		"takes gpu-4, which another claim holds": {verify.RuleInUse},
		"a MIG device, one device only":          {verify.RuleClass, verify.RuleResultCount},
	}
	if len(f.verdicts) != len(want) {
		t.Errorf("%d proposals checked, want %d", len(f.verdicts), len(want))
	}
	for name, w := range want {
		if got := rules(f.verdicts[name]); !slices.Equal(got, w) {
			t.Errorf("%s: %v, want %v", name, got, w)
		}
	}

	// Pods through claims are missed; pods through nvidia.com/gpu are seen, running (its claim is the
	// one the pod's extendedResourceClaimStatus names) or pending.
	type entry struct {
		pod                  string
		declared, claim, ext int64
		missed               bool
	}
	var got []entry
	for _, e := range f.audit {
		var declared int64
		for _, d := range e.Declared {
			declared += d.Count
		}
		got = append(got, entry{e.Pod, declared, e.ClaimDevices, e.ExtendedDevices, e.Missed})
	}
	wantAudit := []entry{
		{"ml/train", 0, 4, 0, true},
		{"ml/serve", 1, 0, 1, false},
		{"ml/sweep", 0, 4, 0, true},
		{"ml/batch", 2, 0, 2, false},
	}
	if !slices.Equal(got, wantAudit) {
		t.Errorf("audit %+v, want %+v", got, wantAudit)
	}
}
