package pods

import "testing"

// TestReasonSumWording: how a group words what differs between its nodes.
func TestReasonSumWording(t *testing.T) {
	short := func(held, matching int, holder, free, values string) *reasonTemplate {
		r := &reasonTemplate{}
		r.add(countSlot, held, "")
		r.lit(" of ")
		r.add(totalSlot, matching, "")
		r.lit(" matching ")
		r.add(nounSlot, matching, "device")
		r.lit(" allocated to ")
		r.add(nameSlot, 0, holder)
		r.lit(", ")
		r.add(quantitySlot, 0, free)
		r.lit(" free (")
		r.add(detailSlot, 0, values)
		r.lit(")")
		return r
	}
	for _, tc := range []struct {
		name  string
		nodes []*reasonTemplate
		want  string
	}{
		{"one node reads as the node", []*reasonTemplate{short(1, 1, "ResourceClaim a/x", "5Gi", "v: 1")},
			"1 of 1 matching device allocated to ResourceClaim a/x, 5Gi free (v: 1)"},
		{"nodes that agree read as each of them", []*reasonTemplate{short(2, 4, "ResourceClaim a/x", "5Gi", "v: 1"), short(2, 4, "ResourceClaim a/x", "5Gi", "v: 1")},
			"2 of 4 matching devices allocated to ResourceClaim a/x, 5Gi free (v: 1)"},
		{"counts as ranges, the plural once one differs, quantities as a range", []*reasonTemplate{
			short(1, 1, "ResourceClaim a/x", "5Gi", "v: 1"), short(3, 2, "ResourceClaim a/y", "512Mi", "v: 2"), short(2, 8, "ResourceClaim a/z", "10Gi", "v: 1")},
			"1–3 of the matching devices allocated to ResourceClaim a/x and 2 others, 512Mi–10Gi free (different per node)"},
		{"a total that agrees is kept", []*reasonTemplate{short(1, 8, "ResourceClaim a/x", "5Gi", "v"), short(3, 8, "ResourceClaim a/x", "5Gi", "v")},
			"1–3 of 8 matching devices allocated to ResourceClaim a/x, 5Gi free (v)"},
		{"a quantity that does not parse is named", []*reasonTemplate{short(1, 1, "ResourceClaim a/x", "lots", "v"), short(1, 1, "ResourceClaim a/x", "5Gi", "v")},
			"1 of 1 matching device allocated to ResourceClaim a/x, lots and 1 other free (v)"},
	} {
		s := newReasonSum(tc.nodes[0])
		for _, n := range tc.nodes {
			if n.key() != tc.nodes[0].key() {
				t.Fatalf("%s: keys differ: %s, %s", tc.name, n.key(), tc.nodes[0].key())
			}
			s.add(n)
		}
		if got := s.String(); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
	tooSmall := func(has int, holders ...string) *reasonTemplate {
		r := &reasonTemplate{}
		r.lit("needs 8 devices, ")
		r.add(mostSlot, has, "")
		r.lit(" matching; held by ")
		r.names(holders)
		return r
	}
	for _, tc := range []struct {
		name  string
		nodes []*reasonTemplate
		want  string
	}{
		{"one node has", []*reasonTemplate{tooSmall(4, "x")}, "needs 8 devices, the node has 4 matching; held by x"},
		{"one node's several holders", []*reasonTemplate{tooSmall(4, "x", "y")}, "needs 8 devices, the node has 4 matching; held by x and 1 other"},
		{"nodes that differ have at most", []*reasonTemplate{tooSmall(2, "x"), tooSmall(4, "y", "x"), tooSmall(3, "z")},
			"needs 8 devices, the nodes have at most 4 matching; held by x and 2 others"},
	} {
		s := newReasonSum(tc.nodes[0])
		for _, n := range tc.nodes {
			s.add(n)
		}
		if got := s.String(); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
	a, b := &reasonTemplate{}, &reasonTemplate{}
	a.lit("tainted by DeviceTaintRule rule-a")
	b.lit("tainted by DeviceTaintRule rule-b")
	if a.key() == b.key() {
		t.Error("two taint rules share a key")
	}
}
