package inventory_test

import (
	"errors"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/inventory"
)

// policy renders a capacity's value and request policy for comparison.
func policy(c resourceapi.DeviceCapacity) string {
	out := c.Value.String()
	if p := c.RequestPolicy; p != nil {
		out += " default=" + p.Default.String()
		if r := p.ValidRange; r != nil {
			out += " min=" + r.Min.String() + " max=" + r.Max.String() + " step=" + r.Step.String()
		}
	}
	return out
}

// NVIDIA's applyConsumableShares: memory rounded down to whole MiB with a
// request policy in 1Mi steps, a shares capacity for an integer option,
// allowMultipleAllocations on every GPU and MIG device of every mode.
func TestConsumableSharesFollowNVIDIAsOption(t *testing.T) {
	n := toyNode(1)
	n.GPUs[0].MemoryBytes = 20*gib + 12345 // not a whole number of MiB
	for _, c := range []struct {
		opt, memory, shares string
	}{
		{inventory.SharesMemory, "20Gi default=20Gi min=1Mi max=20Gi step=1Mi", "<absent>"},
		{inventory.SharesUnlimited, "20Gi default=0 min=0 max=20Gi step=1Mi", "<absent>"},
		{"4", "20Gi default=0 min=0 max=20Gi step=1Mi", "4 default=1 min=1 max=4 step=1"},
	} {
		for _, mode := range []inventory.Mode{inventory.ModeGPU, inventory.ModeStaticMIG, inventory.ModeDynamicMIG} {
			sl := mustSlices(t, n, inventory.Options{NodeName: "n", Mode: mode, ConsumableShares: c.opt})
			for _, d := range devices(sl) {
				if d.AllowMultipleAllocations == nil || !*d.AllowMultipleAllocations {
					t.Errorf("%s %s %s: allowMultipleAllocations not set", c.opt, mode, d.Name)
				}
				shares := "<absent>"
				if s, ok := d.Capacity[inventory.CapShares]; ok {
					shares = policy(s)
				}
				if shares != c.shares {
					t.Errorf("%s %s %s: shares %s, want %s", c.opt, mode, d.Name, shares, c.shares)
				}
				if d.Name == "gpu-0" && mode != inventory.ModeDynamicMIG {
					if got := policy(d.Capacity[inventory.CapMemory]); got != c.memory {
						t.Errorf("%s %s %s: memory %s, want %s", c.opt, mode, d.Name, got, c.memory)
					}
				}
				if d.Capacity[inventory.CapMemory].RequestPolicy == nil {
					t.Errorf("%s %s %s: memory has no request policy", c.opt, mode, d.Name)
				}
			}
		}
	}
	for _, off := range []string{"", inventory.SharesDisabled} {
		for _, d := range devices(mustSlices(t, n, inventory.Options{NodeName: "n", ConsumableShares: off})) {
			mem := d.Capacity[inventory.CapMemory]
			if d.AllowMultipleAllocations != nil || mem.RequestPolicy != nil || mem.Value.Value() != n.GPUs[0].MemoryBytes {
				t.Errorf("shares %q: device %s is shareable or its memory rounded", off, d.Name)
			}
		}
	}
	for _, bad := range []string{"0", "-2", "lots", "1.5"} {
		if _, err := inventory.Slices(n, inventory.Options{NodeName: "n", ConsumableShares: bad}); !errors.Is(err, inventory.ErrInvalidNode) {
			t.Errorf("shares %q: err = %v, want ErrInvalidNode", bad, err)
		}
	}
}

// KEP-6072's numaNode: an int, a one-element list under DRAListTypeAttributes,
// absent when sysfs does not know it (-1); MIG devices carry their parent's.
func TestNUMANodeAttributeFollowsNVIDIA(t *testing.T) {
	n := toyNode(2)
	zero, unknown := 1, -1
	n.GPUs[0].NUMANode, n.GPUs[1].NUMANode = &zero, &unknown
	for _, list := range []bool{false, true} {
		for _, mode := range []inventory.Mode{inventory.ModeGPU, inventory.ModeDynamicMIG} {
			for _, d := range devices(mustSlices(t, n, inventory.Options{NodeName: "n", Mode: mode, ListAttributes: list})) {
				a, ok := d.Attributes[inventory.AttrNUMANode]
				parent := str(d, "uuid")
				if parent == "<absent>" {
					parent = str(d, "parentUUID")
				}
				switch {
				case parent == "GPU-toy-b" && ok:
					t.Errorf("%s: numaNode published for an unknown node", d.Name)
				case parent == "GPU-toy-a" && !list && (a.IntValue == nil || *a.IntValue != 1 || a.IntValues != nil):
					t.Errorf("%s: numaNode %+v, want int 1", d.Name, a)
				case parent == "GPU-toy-a" && list && (a.IntValue != nil || len(a.IntValues) != 1 || a.IntValues[0] != 1):
					t.Errorf("%s: numaNode %+v, want [1]", d.Name, a)
				}
			}
		}
	}
}

// addFabricManagerAttributes: gpuModuleID and partition<size> on whole GPUs
// only, and only with the FabricManagerPartitioning gate.
func TestFabricManagerAttributesOnWholeGPUs(t *testing.T) {
	n := toyNode(1)
	n.GPUs[0].ModuleID = 3
	n.GPUs[0].FabricPartitions = map[int]int{1: 7, 2: 3, 8: 0}
	for _, mode := range []inventory.Mode{inventory.ModeGPU, inventory.ModeDynamicMIG} {
		for _, fm := range []bool{false, true} {
			for _, d := range devices(mustSlices(t, n, inventory.Options{NodeName: "n", Mode: mode, FabricManagerPartitioning: fm})) {
				want := map[string]int64{}
				if fm && d.Name == "gpu-0" {
					want = map[string]int64{"gpuModuleID": 3, "partition1": 7, "partition2": 3, "partition8": 0}
				}
				for _, name := range []string{"gpuModuleID", "partition1", "partition2", "partition8"} {
					a, ok := d.Attributes[resourceapi.QualifiedName(name)]
					w, wok := want[name]
					if ok != wok || ok && (a.IntValue == nil || *a.IntValue != w) {
						t.Errorf("%s fm=%v %s: %s = %+v, want %v (published %v)", mode, fm, d.Name, name, a, w, wok)
					}
				}
			}
		}
	}
	n.GPUs[0].FabricPartitions = map[int]int{0: 1}
	if _, err := inventory.Slices(n, inventory.Options{NodeName: "n", FabricManagerPartitioning: true}); !errors.Is(err, inventory.ErrInvalidNode) {
		t.Errorf("partition of size 0: err = %v", err)
	}
}

// A node type carries its driver's settings: an autoscaler learns that a new
// node's GPUs are shareable, as the live nodes' are.
func TestTemplatesPublishTheirDriversSettings(t *testing.T) {
	tmpl := inventory.NewTemplate("toy", "", inventory.ModeGPU, toyNode(1))
	tmpl.ConsumableShares = "4"
	tmpl.ListAttributes = true
	zero := 0
	tmpl.Node.GPUs[0].NUMANode = &zero
	sl, err := tmpl.Slices("new-node", 0)
	if err != nil {
		t.Fatal(err)
	}
	d := devices(sl)[0]
	shares := d.Capacity[inventory.CapShares]
	if d.AllowMultipleAllocations == nil || shares.Value.Value() != 4 || len(d.Attributes[inventory.AttrNUMANode].IntValues) != 1 {
		t.Errorf("device %+v: want shareable with 4 shares and a numaNode list", d)
	}
	raw, err := tmpl.MarshalYAML()
	if err != nil {
		t.Fatal(err)
	}
	back, err := inventory.ParseTemplate(raw)
	if err != nil || back.ConsumableShares != "4" || !back.ListAttributes {
		t.Errorf("round trip: %+v, %v", back, err)
	}
}
