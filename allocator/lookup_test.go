package allocator_test

import (
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"pgregory.net/rapid"

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

func TestNodesFollowChanges(t *testing.T) {
	snap := allocator.NewSnapshot(allocator.Options{})
	names := func(s *allocator.Snapshot) string {
		out := ""
		for _, n := range s.Nodes() {
			out += n.Name + fmt.Sprint(n.Labels["v"]) + " "
		}
		return out
	}
	add := func(s *allocator.Snapshot, name, v string) {
		if err := s.AddOrUpdateNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"v": v}}}); err != nil {
			t.Fatal(err)
		}
	}
	add(snap, "b", "1")
	add(snap, "c", "1")
	add(snap, "a", "1")
	fork := snap.Fork()
	add(fork, "b", "2")
	_ = fork.DeleteNode("c")
	add(fork, "d", "1")
	_ = fork.DeleteNode("zz")
	tests := []struct{ name, got, want string }{
		{"adds keep the list sorted", names(snap), "a1 b1 c1 "},
		{"a fork's updates, deletes and adds do not show in the parent", names(fork), "a1 b2 d1 "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
	if err := fork.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := names(snap); got != "a1 b2 d1 " {
		t.Errorf("after commit: %q", got)
	}
}

// Nodes added in name order are appended to the list in place; a fork and its parent that both append
// after the fork each keep their own.
func TestNodesAppendedInOrderStayApart(t *testing.T) {
	snap := allocator.NewSnapshot(allocator.Options{})
	add := func(s *allocator.Snapshot, name string) {
		if err := s.AddOrUpdateNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	names := func(s *allocator.Snapshot) string {
		out := ""
		for _, n := range s.Nodes() {
			out += n.Name + " "
		}
		return out
	}
	for _, n := range []string{"n1", "n2", "n3", "n4", "n5"} {
		add(snap, n)
	}
	fork := snap.Fork()
	add(snap, "n6")
	add(fork, "n7")
	add(fork, "n8")
	add(snap, "n9")
	if got, want := names(snap), "n1 n2 n3 n4 n5 n6 n9 "; got != want {
		t.Errorf("parent: got %q, want %q", got, want)
	}
	if got, want := names(fork), "n1 n2 n3 n4 n5 n7 n8 "; got != want {
		t.Errorf("fork: got %q, want %q", got, want)
	}
}

func TestClaimsOwnedBy(t *testing.T) {
	yes, no := true, false
	owned := func(ns, name string, uid string, controller *bool) *resourceapi.ResourceClaim {
		c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if uid != "" {
			c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p", UID: types.UID(uid), Controller: controller}}
		}
		return c
	}
	snap := allocator.NewSnapshot(allocator.Options{})
	for _, c := range []*resourceapi.ResourceClaim{
		owned("ns", "b", "pod-1", &yes), owned("ns", "a", "pod-1", &yes), owned("other", "c", "pod-1", &yes),
		owned("ns", "not-controller", "pod-1", &no), owned("ns", "no-owner", "", nil), owned("ns", "moves", "pod-1", &yes),
	} {
		if err := snap.AddOrUpdateClaim(c); err != nil {
			t.Fatal(err)
		}
	}
	fork := snap.Fork()
	_ = fork.AddOrUpdateClaim(owned("ns", "moves", "pod-2", &yes))
	_ = fork.DeleteClaim("ns", "a")
	names := func(cs []*resourceapi.ResourceClaim) string {
		s := ""
		for _, c := range cs {
			s += c.Name + " "
		}
		return s
	}
	tests := []struct{ name, got, want string }{
		{"claims with the controlling owner in the namespace, sorted", names(snap.ClaimsOwnedBy("ns", "pod-1")), "a b moves "},
		{"another namespace", names(snap.ClaimsOwnedBy("other", "pod-1")), "c "},
		{"an owner without claims", names(snap.ClaimsOwnedBy("ns", "pod-3")), ""},
		{"in a fork, an update moves the claim to its new owner and a delete removes it", names(fork.ClaimsOwnedBy("ns", "pod-1")), "b "},
		{"the new owner", names(fork.ClaimsOwnedBy("ns", "pod-2")), "moves "},
		{"the parent does not see the fork's changes", names(snap.ClaimsOwnedBy("ns", "pod-1")), "a b moves "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
}

func ExampleSnapshot_ClaimsOwnedBy() {
	snap := allocator.NewSnapshot(allocator.Options{})
	yes := true
	_ = snap.AddOrUpdateClaim(&resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{
		Namespace: "default", Name: "train-gpu-x7k2p",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "train", UID: "uid-train", Controller: &yes}},
	}})
	for _, c := range snap.ClaimsOwnedBy("default", "uid-train") {
		fmt.Println(c.Name)
	}
	// Output: train-gpu-x7k2p
}

func TestDevice(t *testing.T) {
	slice := func(name string, gen int64, devices ...string) *resourceapi.ResourceSlice {
		node := "n1"
		s := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: resourceapi.ResourceSliceSpec{
			Driver: "d", NodeName: &node, Pool: resourceapi.ResourcePool{Name: "p", Generation: gen, ResourceSliceCount: 1}}}
		for _, d := range devices {
			s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: d})
		}
		return s
	}
	snap := allocator.NewSnapshot(allocator.Options{})
	_ = snap.AddOrUpdateSlice(slice("old", 1, "gone", "kept"))
	_ = snap.AddOrUpdateSlice(slice("new", 2, "kept", "added"))
	tests := []struct {
		id   allocator.DeviceID
		want bool
	}{
		{allocator.DeviceID{Driver: "d", Pool: "p", Device: "kept"}, true},
		{allocator.DeviceID{Driver: "d", Pool: "p", Device: "added"}, true},
		{allocator.DeviceID{Driver: "d", Pool: "p", Device: "gone"}, false}, // only in an older generation
		{allocator.DeviceID{Driver: "d", Pool: "other", Device: "kept"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.id.String(), func(t *testing.T) {
			d, ok := snap.Device(tt.id)
			if ok != tt.want || (ok && d.Name != tt.id.Device) {
				t.Errorf("got %v %v, want found=%v", d, ok, tt.want)
			}
		})
	}
}

func ExampleSnapshot_Device() {
	snap := allocator.NewSnapshot(allocator.Options{})
	_ = snap.AddOrUpdateSlice(gpuSlice("node-a", "H100", 2))
	d, ok := snap.Device(allocator.DeviceID{Driver: "gpu.example.com", Pool: "node-a", Device: "gpu-1"})
	fmt.Println(ok, d.Name, *d.Attributes["model"].StringValue)
	// Output: true gpu-1 H100
}

// A pool's counter sets, as a placement across nodes reads them to say how full a GPU partitioned by
// dynamic MIG already is.
func ExampleSnapshot_CounterSets() {
	snap := allocator.NewSnapshot(allocator.Options{})
	counters := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a-counters"},
		Spec: resourceapi.ResourceSliceSpec{
			Driver: "gpu.example.com", NodeName: ptr("node-a"),
			Pool: resourceapi.ResourcePool{Name: "node-a", Generation: 1, ResourceSliceCount: 1},
			SharedCounters: []resourceapi.CounterSet{{Name: "gpu-0", Counters: map[string]resourceapi.Counter{
				"memory-slices": {Value: resource.MustParse("7")},
			}}},
		},
	}
	_ = snap.AddOrUpdateSlice(counters)
	_ = snap.AddOrUpdateSlice(gpuSlice("node-b", "H100", 2)) // no counters
	sets := snap.CounterSets()
	c := sets[allocator.PoolID{Driver: "gpu.example.com", Pool: "node-a"}][0].Counters["memory-slices"]
	fmt.Println(len(sets), c.Value.String())
	// Output: 1 7
}

// TestCounterSets: the counter sets of the newest generation of each pool, node-local or not; a pool
// that no longer publishes any is left out.
func TestCounterSets(t *testing.T) {
	set := func(name string) resourceapi.CounterSet {
		return resourceapi.CounterSet{Name: name, Counters: map[string]resourceapi.Counter{"c": {Value: resource.MustParse("1")}}}
	}
	slice := func(name, pool string, node *string, gen int64, sets ...resourceapi.CounterSet) *resourceapi.ResourceSlice {
		s := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: resourceapi.ResourceSliceSpec{
			Driver: "d", NodeName: node, Pool: resourceapi.ResourcePool{Name: pool, Generation: gen, ResourceSliceCount: 1}, SharedCounters: sets,
		}}
		if node == nil {
			s.Spec.AllNodes = ptr(true)
		}
		return s
	}
	names := func(snap *allocator.Snapshot) map[string][]string {
		out := map[string][]string{}
		for id, sets := range snap.CounterSets() {
			for _, cs := range sets {
				out[id.Pool] = append(out[id.Pool], cs.Name)
			}
		}
		return out
	}
	snap := allocator.NewSnapshot(allocator.Options{})
	if got := names(snap); len(got) != 0 {
		t.Fatalf("empty snapshot: %v", got)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(snap.AddOrUpdateSlice(slice("a-1", "a", ptr("n1"), 1, set("old"))))
	must(snap.AddOrUpdateSlice(slice("a-2", "a", ptr("n1"), 2, set("x"), set("y"))))
	must(snap.AddOrUpdateSlice(slice("shared", "net", nil, 1, set("z"))))
	must(snap.AddOrUpdateSlice(slice("b", "b", ptr("n2"), 1)))
	want := map[string][]string{"a": {"x", "y"}, "net": {"z"}}
	if got := names(snap); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	must(snap.DeleteSlice("a-2"))
	must(snap.DeleteSlice("shared"))
	want = map[string][]string{"a": {"old"}}
	if got := names(snap); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after deletions: got %v, want %v", got, want)
	}
}

// The indexes behind ClaimsOwnedBy and ClaimsReservedFor give what a walk over every claim gives,
// through random adds, updates, deletes, batched updates and forks committed or discarded.
func TestPropClaimIndexes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		uids := []types.UID{"u1", "u2", "u3"}
		yes := true
		claimGen := func(t *rapid.T, label string) *resourceapi.ResourceClaim {
			c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{
				Namespace: rapid.SampledFrom([]string{"a", "b"}).Draw(t, label+"ns"),
				Name:      rapid.SampledFrom([]string{"x", "y", "z"}).Draw(t, label+"name"),
			}}
			if rapid.Bool().Draw(t, label+"owned") {
				c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p",
					UID: rapid.SampledFrom(uids).Draw(t, label+"owner"), Controller: &yes}}
			}
			// Reservations may name one consumer twice.
			for _, uid := range rapid.SliceOfN(rapid.SampledFrom(uids), 0, 3).Draw(t, label+"reserved") {
				c.Status.ReservedFor = append(c.Status.ReservedFor, resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: "p" + string(uid), UID: uid})
			}
			return c
		}
		root := allocator.NewSnapshot(allocator.Options{TrustAPIServer: true})
		snaps := []*allocator.Snapshot{root}
		for step := range rapid.IntRange(1, 30).Draw(t, "steps") {
			s := snaps[len(snaps)-1]
			switch rapid.IntRange(0, 5).Draw(t, fmt.Sprintf("op%d", step)) {
			case 0, 1:
				if err := s.AddOrUpdateClaim(claimGen(t, "add")); err != nil {
					t.Fatal(err)
				}
			case 2:
				_ = s.DeleteClaim(rapid.SampledFrom([]string{"a", "b"}).Draw(t, "delns"), rapid.SampledFrom([]string{"x", "y", "z"}).Draw(t, "delname"))
			case 3:
				c := claimGen(t, "upd")
				u := allocator.ClaimUpdate{Namespace: c.Namespace, Name: c.Name, Claim: c}
				if rapid.Bool().Draw(t, "delete") {
					u.Claim = nil
				}
				if err := s.UpdateClaims([]allocator.ClaimUpdate{u}); err != nil {
					t.Fatal(err)
				}
			case 4:
				snaps = append(snaps, s.Fork())
			case 5:
				if len(snaps) > 1 {
					snaps = snaps[:len(snaps)-1]
					if rapid.Bool().Draw(t, "commit") {
						if err := s.Commit(); err != nil {
							t.Fatal(err)
						}
					} else if err := s.Discard(); err != nil {
						t.Fatal(err)
					}
				}
			}
			for _, s := range snaps {
				for _, ns := range []string{"a", "b"} {
					for _, uid := range uids {
						var owned, held string
						for _, c := range s.Claims(ns) {
							if len(c.OwnerReferences) > 0 && c.OwnerReferences[0].UID == uid {
								owned += c.Name + " "
							}
							if slices.ContainsFunc(c.Status.ReservedFor, func(r resourceapi.ResourceClaimConsumerReference) bool { return r.UID == uid }) {
								held += c.Name + " "
							}
						}
						if got := joinNames(s.ClaimsOwnedBy(ns, uid)); got != owned {
							t.Fatalf("ClaimsOwnedBy(%s, %s) = %q, a walk gives %q", ns, uid, got, owned)
						}
						if got := joinNames(s.ClaimsReservedFor(ns, uid)); got != held {
							t.Fatalf("ClaimsReservedFor(%s, %s) = %q, a walk gives %q", ns, uid, got, held)
						}
					}
				}
			}
		}
	})
}

func joinNames(cs []*resourceapi.ResourceClaim) string {
	s := ""
	for _, c := range cs {
		s += c.Name + " "
	}
	return s
}

func ExampleSnapshot_ClaimsReservedFor() {
	snap := allocator.NewSnapshot(allocator.Options{TrustAPIServer: true})
	_ = snap.AddOrUpdateClaim(&resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shared-gpu"},
		Status: resourceapi.ResourceClaimStatus{ReservedFor: []resourceapi.ResourceClaimConsumerReference{
			{Resource: "pods", Name: "train-0", UID: "uid-train-0"}, {Resource: "pods", Name: "train-1", UID: "uid-train-1"}}},
	})
	for _, c := range snap.ClaimsReservedFor("default", "uid-train-1") {
		fmt.Println(c.Name)
	}
	// Output: shared-gpu
}
