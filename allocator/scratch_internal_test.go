package allocator

import (
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRecentNamesJoin: join answers parent + "/" + name whether the pair is remembered, evicted or new,
// and pairs that differ in either name, or only in where the slash falls, never share an answer.
func TestRecentNamesJoin(t *testing.T) {
	var r recentNames
	pairs := [][2]string{{"gpu", "whole"}, {"gpu", "mig"}, {"gpu/whole", "x"}, {"gpu", "whole/x"}, {"nic", "whole"}, {"a", "b"}}
	for round := range 3 {
		for i, p := range pairs {
			// Fresh strings with the same bytes: a remembered pair must match by value, not only by pointer.
			parent, name := strings.Clone(p[0]), strings.Clone(p[1])
			if round == 1 && i%2 == 0 {
				parent, name = p[0], p[1]
			}
			if got, want := r.join(parent, name), p[0]+"/"+p[1]; got != want {
				t.Fatalf("round %d: join(%q, %q) = %q, want %q", round, parent, name, got, want)
			}
			// Asked again at once, the pair is remembered.
			if got, want := r.join(parent, name), p[0]+"/"+p[1]; got != want {
				t.Fatalf("round %d, again: join(%q, %q) = %q, want %q", round, parent, name, got, want)
			}
		}
	}
	if got := r.join("", ""); got != "/" {
		t.Fatalf(`join("", "") = %q, want "/"`, got)
	}
}

// TestLimitTextNamesTheRequestAskedFor: the remembered object and field are those of the claim and
// request asked for, whichever was asked before, equal names in fresh strings included.
func TestLimitTextNamesTheRequestAskedFor(t *testing.T) {
	claim := func(ns, name string) *resourceapi.ResourceClaim {
		return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	var l limitText
	for _, tc := range []struct {
		claim         *resourceapi.ResourceClaim
		ri            int
		object, field string
	}{
		{claim("default", "train"), 0, "ResourceClaim default/train", "spec.devices.requests[0]"},
		{claim("default", "train"), 0, "ResourceClaim default/train", "spec.devices.requests[0]"},
		{claim("default", "train"), 12, "ResourceClaim default/train", "spec.devices.requests[12]"},
		{claim(strings.Clone("default"), strings.Clone("train")), 12, "ResourceClaim default/train", "spec.devices.requests[12]"},
		{claim("other", "train"), 12, "ResourceClaim other/train", "spec.devices.requests[12]"},
		{claim("other", "serve"), 12, "ResourceClaim other/serve", "spec.devices.requests[12]"},
		{claim("default", "train"), 0, "ResourceClaim default/train", "spec.devices.requests[0]"},
		{claim("", ""), 1, "ResourceClaim /", "spec.devices.requests[1]"},
	} {
		object, field := l.of(&claimState{claim: tc.claim}, tc.ri)
		if object != tc.object || field != tc.field {
			t.Errorf("of(%s/%s, %d) = %q, %q, want %q, %q", tc.claim.Namespace, tc.claim.Name, tc.ri, object, field, tc.object, tc.field)
		}
	}
}
