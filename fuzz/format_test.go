package fuzz_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator/manifest"
	"github.com/dralloc/dralloc/fuzz"
)

// A drawn cluster's String reads back, with allocator/manifest, as the same objects.
func TestPropClusterStringReadsBack(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := fuzz.ClusterGen(fuzz.AllOptions()).Draw(rt, "cluster")
		objs, err := manifest.Decode(strings.NewReader(c.String()), "cluster.yaml", manifest.Options{})
		if err != nil {
			rt.Fatalf("decode: %v", err)
		}
		back := &fuzz.Cluster{Nodes: objs.Nodes, Slices: objs.Slices, Classes: objs.Classes, TaintRules: objs.TaintRules}
		for _, cl := range objs.Claims {
			if cl.Status.Allocation != nil {
				back.Allocated = append(back.Allocated, cl)
			} else {
				back.Claims = append(back.Claims, cl)
			}
		}
		for _, o := range []*fuzz.Cluster{back} {
			for _, n := range o.Nodes {
				n.TypeMeta = metav1.TypeMeta{}
			}
			for _, s := range o.Slices {
				s.TypeMeta = metav1.TypeMeta{}
			}
			for _, s := range o.Classes {
				s.TypeMeta = metav1.TypeMeta{}
			}
			for _, s := range o.TaintRules {
				s.TypeMeta = metav1.TypeMeta{}
			}
			for _, s := range append(o.Allocated, o.Claims...) {
				s.TypeMeta = metav1.TypeMeta{}
			}
		}
		for _, pair := range []struct {
			what      string
			got, want any
		}{
			{"nodes", back.Nodes, c.Nodes}, {"slices", back.Slices, c.Slices}, {"classes", back.Classes, c.Classes},
			{"taint rules", back.TaintRules, c.TaintRules}, {"allocated claims", back.Allocated, c.Allocated}, {"claims", back.Claims, c.Claims},
		} {
			if !equality.Semantic.DeepEqual(pair.got, pair.want) {
				rt.Fatalf("%s differ after reading back", pair.what)
			}
		}
	})
}
