package allocator_test

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
)

func TestLookups(t *testing.T) {
	snap := allocator.NewSnapshot(allocator.Options{})
	for _, c := range []struct{ ns, name string }{{"b", "z"}, {"a", "y"}, {"b", "x"}} {
		if err := snap.AddOrUpdateClaim(&resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: c.name}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"n2", "n1"} {
		_ = snap.AddOrUpdateNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
		_ = snap.AddOrUpdateClass(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "class-" + n}})
	}
	names := func(cs []*resourceapi.ResourceClaim) string {
		s := ""
		for _, c := range cs {
			s += c.Namespace + "/" + c.Name + " "
		}
		return s
	}
	tests := []struct{ name, got, want string }{
		{"claims of one namespace sorted by name", names(snap.Claims("b")), "b/x b/z "},
		{"claims of every namespace sorted by namespace and name", names(snap.Claims("")), "a/y b/x b/z "},
		{"claims of an unknown namespace", names(snap.Claims("c")), ""},
		{"nodes sorted by name", fmt.Sprint(snap.Nodes()[0].Name, snap.Nodes()[1].Name), "n1n2"},
		{"classes sorted by name", fmt.Sprint(snap.Classes()[0].Name, snap.Classes()[1].Name), "class-n1class-n2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
	if _, ok := snap.Claim("a", "y"); !ok {
		t.Error("Claim(a, y) not found")
	}
	if _, ok := snap.Claim("a", "z"); ok {
		t.Error("Claim(a, z) found")
	}
}

func ExampleSnapshot_Claims() {
	snap := allocator.NewSnapshot(allocator.Options{})
	_ = snap.AddOrUpdateClaim(&resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "train"}})
	_ = snap.AddOrUpdateClaim(&resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "serve"}})
	for _, c := range snap.Claims(metav1.NamespaceAll) {
		fmt.Println(c.Namespace + "/" + c.Name)
	}
	if c, ok := snap.Claim("team-a", "serve"); ok {
		fmt.Println("found", c.Name)
	}
	// Output:
	// team-a/serve
	// team-b/train
	// found serve
}

func ExampleSnapshot_Nodes() {
	snap := allocator.NewSnapshot(allocator.Options{})
	_ = snap.AddOrUpdateNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}})
	_ = snap.AddOrUpdateNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}})
	_ = snap.AddOrUpdateClass(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}})
	for _, n := range snap.Nodes() {
		fmt.Println(n.Name)
	}
	fmt.Println(len(snap.Classes()), snap.Classes()[0].Name)
	// Output:
	// node-a
	// node-b
	// 1 gpu
}
