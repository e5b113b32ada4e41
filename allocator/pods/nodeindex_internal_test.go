package pods

import (
	"context"
	"errors"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dralloc/dralloc/allocator"
)

// TestNodeIndexBoundsShapes records more shapes than maxShapes: the index keeps at most maxShapes, and
// a shape it keeps still skips its full nodes.
func TestNodeIndexBoundsShapes(t *testing.T) {
	snap := allocator.NewSnapshot(allocator.Options{})
	for i := range 3 {
		if err := snap.AddOrUpdateNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	c := New(snap, Options{})
	nodes := c.nodeList(snap)
	rev := snap.Revision()
	for k := range maxShapes + 10 {
		v := c.fullIdx.lookup(rev, nodes, fmt.Sprint(k))
		if v == nil {
			t.Fatal("no view of the index at the snapshot's revision")
		}
		c.fullIdx.record(v, rev, []int{0})
	}
	if n := len(c.fullIdx.shapes); n > maxShapes {
		t.Fatalf("index holds %d shapes, want at most %d", n, maxShapes)
	}
	last := c.fullIdx.lookup(rev, nodes, fmt.Sprint(maxShapes+9))
	if !last.skip(0) || last.skip(1) || last.first != 1 {
		t.Fatalf("last shape: skip(0)=%v skip(1)=%v first=%d, want true false 1", last.skip(0), last.skip(1), last.first)
	}
}

// churnCluster is a Cluster on nodes n0…n3 with two whole GPUs each, filled with one pod a GPU (pods
// p-0…p-7, one shape), then asked for one more pod, which fits nowhere: every node is known full for
// the shape. It returns the pods' nodes by pod name.
func churnCluster(t *testing.T, choice Choice, fabric bool) (*Cluster, map[string]string) {
	t.Helper()
	const driver = "gpu.example.com"
	snap := allocator.NewSnapshot(allocator.Options{})
	for i := range 4 {
		name := fmt.Sprintf("n%d", i)
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		n.Status.Allocatable = v1.ResourceList{v1.ResourcePods: resource.MustParse("110"), v1.ResourceCPU: resource.MustParse("32")}
		must(t, snap.AddOrUpdateNode(n))
		must(t, snap.AddOrUpdateSlice(&resourceapi.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-gpus"},
			Spec: resourceapi.ResourceSliceSpec{Driver: driver, NodeName: &name, Pool: resourceapi.ResourcePool{Name: name, Generation: 1, ResourceSliceCount: 1},
				Devices: []resourceapi.Device{{Name: "gpu-0"}, {Name: "gpu-1"}}},
		}))
	}
	must(t, snap.AddOrUpdateClass(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}, Spec: resourceapi.DeviceClassSpec{
		Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "` + driver + `"`}}}}}))
	requests := []resourceapi.DeviceRequest{{Name: "gpu",
		Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}}}
	if fabric {
		// A pool of network-attached devices every node sees: freeing one changes every node's answer.
		all := true
		must(t, snap.AddOrUpdateSlice(&resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "fabric"}, Spec: resourceapi.ResourceSliceSpec{
			Driver: "nic.example.com", AllNodes: &all, Pool: resourceapi.ResourcePool{Name: "fabric", Generation: 1, ResourceSliceCount: 1},
			Devices: []resourceapi.Device{{Name: "nic-0"}, {Name: "nic-1"}, {Name: "nic-2"}, {Name: "nic-3"}, {Name: "nic-4"}, {Name: "nic-5"}, {Name: "nic-6"}, {Name: "nic-7"}}}}))
		must(t, snap.AddOrUpdateClass(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "nic"}, Spec: resourceapi.DeviceClassSpec{
			Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "nic.example.com"`}}}}}))
		requests = append(requests, resourceapi.DeviceRequest{Name: "nic",
			Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "nic", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}})
	}
	suffix := 0
	c := New(snap, Options{Choice: choice, Workers: 1, NameSuffix: func() string { suffix++; return fmt.Sprintf("x%04d", suffix) }})
	must(t, c.AddOrUpdateTemplate(&resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "one"},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: requests}}}}))
	on := map[string]string{}
	for k := range 9 {
		p := churnPod(fmt.Sprintf("p-%d", k))
		pl, err := c.Place(context.Background(), p)
		if k == 8 {
			if !errors.Is(err, ErrNoNode) {
				t.Fatalf("%s on a full fleet: %v, want %v", p.Name, err, ErrNoNode)
			}
			break
		}
		must(t, err)
		must(t, c.Assume(pl))
		on[p.Name] = pl.Node
	}
	return c, on
}

func churnPod(name string) *v1.Pod {
	tmpl := "one"
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)}}
	p.Spec.Containers = []v1.Container{{Name: "main"}}
	p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &tmpl}}
	return p
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// onlyShape returns the index's one shape and its rank index (nil for FirstFit).
func onlyShape(t *testing.T, c *Cluster) (*shapeFull, *rank) {
	t.Helper()
	x := &c.fullIdx
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.ok {
		t.Fatal("the index was emptied")
	}
	if len(x.shapes) != 1 {
		t.Fatalf("index holds %d shapes, want 1", len(x.shapes))
	}
	for key, s := range x.shapes {
		return s, x.ranks[key]
	}
	return nil, nil
}

// TestNodeIndexKeptOverRemove removes one pod of a full fleet: the index is not emptied, it forgets
// only that the freed node was full (FirstFit's prefix ends there; the rank index asks that node again
// and no other), and the next pod of the shape lands on the freed node, for each Choice.
func TestNodeIndexKeptOverRemove(t *testing.T) {
	for _, choice := range []Choice{FirstFit, BestFit, Spread} {
		t.Run(choice.String(), func(t *testing.T) {
			c, on := churnCluster(t, choice, false)
			s, rk := onlyShape(t, c)
			if s.first != 4 {
				t.Fatalf("full fleet: first = %d, want 4", s.first)
			}
			gen := c.fullIdx.gen
			victim := "p-3"
			freed := on[victim]
			pos := int(freed[1] - '0') // nodes n0…n3, in order
			must(t, c.Remove(churnPod(victim)))

			s, rk2 := onlyShape(t, c)
			if c.fullIdx.gen != gen+1 {
				t.Errorf("generation %d after the removal, want %d", c.fullIdx.gen, gen+1)
			}
			if c.fullIdx.rev != c.snap.Revision() {
				t.Errorf("index at revision %v, the snapshot at %v", c.fullIdx.rev, c.snap.Revision())
			}
			if s.first != pos {
				t.Errorf("first = %d after freeing %s, want %d", s.first, freed, pos)
			}
			for i := range 4 {
				if full := s.full[0]&(1<<i) != 0; full != (i != pos) {
					t.Errorf("node n%d known full: %v, want %v", i, full, i != pos)
				}
			}
			if choice != FirstFit {
				if rk == nil || rk2 != rk {
					t.Fatal("the rank index was dropped")
				}
				rk.mu.Lock()
				for i := range 4 {
					want := stateFull
					if i == pos {
						want = statePending
					}
					if rk.state[i] != want {
						t.Errorf("rank state of n%d = %d, want %d", i, rk.state[i], want)
					}
				}
				if len(rk.dirty) != 1 || int(rk.dirty[0]) != pos || rk.rebuild || rk.gen != c.fullIdx.gen {
					t.Errorf("rank: dirty %v, rebuild %v, generation %d; want [%d], false, %d", rk.dirty, rk.rebuild, rk.gen, pos, c.fullIdx.gen)
				}
				rk.mu.Unlock()
			}

			pl, err := c.Place(context.Background(), churnPod("again"))
			must(t, err)
			if pl.Node != freed {
				t.Fatalf("the next pod went to %s, want the freed %s", pl.Node, freed)
			}
			if choice != FirstFit {
				rk.mu.Lock()
				if rk.state[pos] != stateFits || len(rk.dirty) != 0 || rk.rebuild {
					t.Errorf("after the placement: state %d, dirty %v, rebuild %v; want the freed node asked from the rank index", rk.state[pos], rk.dirty, rk.rebuild)
				}
				rk.mu.Unlock()
			}
			must(t, c.Assume(pl))
			if _, err := c.Place(context.Background(), churnPod("more")); !errors.Is(err, ErrNoNode) {
				t.Fatalf("full again: %v, want %v", err, ErrNoNode)
			}
		})
	}
}

// TestNodeIndexFreedByDeletePod forgets a pod on a node (DeletePod) whose claims stay allocated, and
// records a bound pod anew: the snapshot does not change, the index keeps its revision and forgets
// only that the node was full.
func TestNodeIndexFreedByDeletePod(t *testing.T) {
	c, on := churnCluster(t, Spread, false)
	rev := c.fullIdx.rev
	c.DeletePod("default", "p-0")
	s, rk := onlyShape(t, c)
	pos := int(on["p-0"][1] - '0')
	if c.fullIdx.rev != rev || s.full[0] != 0b1111&^(1<<pos) || s.first != min(pos, 4) {
		t.Fatalf("after DeletePod: revision %v (was %v), full %04b, first %d", c.fullIdx.rev, rev, s.full[0], s.first)
	}
	rk.mu.Lock()
	if rk.state[pos] != statePending {
		t.Errorf("rank state of the node = %d, want pending", rk.state[pos])
	}
	rk.mu.Unlock()
	// The node's GPUs are still allocated: the pod fits nowhere, and the node is known full again.
	if _, err := c.Place(context.Background(), churnPod("again")); !errors.Is(err, ErrNoNode) {
		t.Fatalf("%v, want %v", err, ErrNoNode)
	}
}

// TestNodeIndexEmptiedByRemoveOfSharedDevice removes a pod that held a network-attached device, which
// every node sees: which nodes it frees cannot be told, and the index is emptied.
func TestNodeIndexEmptiedByRemoveOfSharedDevice(t *testing.T) {
	for _, choice := range []Choice{FirstFit, BestFit, Spread} {
		t.Run(choice.String(), func(t *testing.T) {
			c, on := churnCluster(t, choice, true)
			onlyShape(t, c)
			must(t, c.Remove(churnPod("p-5")))
			if c.fullIdx.ok {
				t.Fatal("the index survived freeing a device of a pool every node sees")
			}
			pl, err := c.Place(context.Background(), churnPod("again"))
			must(t, err)
			if pl.Node != on["p-5"] {
				t.Fatalf("the next pod went to %s, want %s", pl.Node, on["p-5"])
			}
		})
	}
}
