package scaling_test

import (
	"testing"

	"github.com/dralloc/dralloc/allocator/scaling"
	"github.com/dralloc/dralloc/inventory"
)

func TestUtilisationOfAPartitionedGPU(t *testing.T) {
	a100 := profile(t, "dgxa100")
	h100 := profile(t, "dgxh100")
	a, h := instance(t, a100, "a100-1"), instance(t, h100, "h100-1")
	c := newCluster(t, []inventory.Instance{a, h})
	bind(t, c, claimPod("mig-demo", "mig-devices"))
	bind(t, c, extPod("three", 3))
	sl := append(a.Slices[:len(a.Slices):len(a.Slices)], h.Slices...)
	old := a.Slices[1].DeepCopy() // an older generation is not counted
	old.Spec.Pool.Generation = 0
	old.Name = "old"
	u := scaling.Utilisation(append(sl, old), c.Snapshot().Claims(""))
	want := []scaling.NodeUse{{Node: "a100-1", Devices: 8 * 25, Allocated: 4}, {Node: "h100-1", Devices: 8 * 29, Allocated: 3}}
	if len(u.Nodes) != 2 || u.Nodes[0] != want[0] || u.Nodes[1] != want[1] {
		t.Fatalf("nodes %+v, want %+v", u.Nodes, want)
	}
	// The demo's four MIG devices are on one GPU and take all its 98 multiprocessors
	// (14+14+28+42) and all 8 memory slices.
	used := map[string]int64{}
	for _, cu := range u.Pools[0].Counters {
		if cu.Used.Value() > 0 {
			used[cu.CounterSet+"/"+cu.Counter] = cu.Used.Value()
		}
	}
	for _, name := range []string{"multiprocessors", "memory-slice-0", "memory-slice-7"} {
		found := false
		for k, v := range used {
			if k[len(k)-len(name):] == name {
				found = true
				if name == "multiprocessors" && v != 98 {
					t.Errorf("%s used %d, want 98", k, v)
				}
			}
		}
		if !found {
			t.Errorf("counter %s unused, want used by the demo (used: %v)", name, used)
		}
	}
}
