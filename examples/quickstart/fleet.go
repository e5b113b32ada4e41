package main

import (
	"fmt"
	"io"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/dralloc/dralloc/inventory"
)

// rackLabel is the topology label of the fleet's nodes; the gang's PodGroup keeps its pods in one rack.
const rackLabel = "example.com/rack"

// fleetNode is one node of the fleet: which of inventory's profiles, in which rack, and whether its
// driver shares its GPUs between claims.
type fleetNode struct {
	name, profile, rack string
	shared              bool
}

// fleetNodes are three DGX H100 training nodes, a DGX A100 whose GPUs run in MIG mode, and a DGX H200
// whose GPUs serve inference claims by memory.
var fleetNodes = []fleetNode{
	{name: "h100-a", profile: "dgxh100", rack: "r1"},
	{name: "h100-b", profile: "dgxh100", rack: "r1"},
	{name: "h100-c", profile: "dgxh100", rack: "r1"},
	{name: "a100-a", profile: "dgxa100", rack: "r2"},
	{name: "h200-a", profile: "dgxh200", rack: "r2", shared: true},
}

// inventoryScene instantiates every node from its profile, validates each node's pool as the API server
// and the driver's limits require, and adds nodes and slices to the snapshot (which validates every slice
// again, as kube-apiserver does on create).
func inventoryScene(w io.Writer, s *story) error {
	fmt.Fprintln(w, "== 1. inventory: what the nodes publish (inventory's DGX profiles, NVIDIA's gpu.nvidia.com schema)")
	for _, fn := range fleetNodes {
		t, err := inventory.Profile(fn.profile)
		if err != nil {
			return err
		}
		if fn.shared {
			t.Mode = inventory.ModeGPU // whole GPUs, shared by memory below
		}
		t.Labels = map[string]string{rackLabel: fn.rack}
		inst, err := t.Instantiate(fn.name)
		if err != nil {
			return err
		}
		if fn.shared {
			inst.Slices = shareByMemory(inst.Slices)
		}
		if errs := inventory.ValidatePool(inst.Slices); len(errs) > 0 {
			return fmt.Errorf("node %s: %v", fn.name, errs.ToAggregate())
		}
		whole, mig := 0, 0
		for _, sl := range inst.Slices {
			for _, d := range sl.Spec.Devices {
				if *d.Attributes[inventory.AttrType].StringValue == inventory.TypeGPU {
					whole++
				} else {
					mig++
				}
			}
		}
		gpus, _, _ := strings.Cut(t.Description, ",") // "8x NVIDIA H100 80GB HBM3"
		how := fmt.Sprintf("%s, %d whole GPUs, %d MIG placements drawing on shared counters", t.Mode, whole, mig)
		if fn.shared {
			how = fmt.Sprintf("%d whole GPUs shared by memory (allowMultipleAllocations)", whole)
		}
		fmt.Fprintf(w, "%-7s %-7s rack %s  %s: %s, %s; valid\n", fn.name, t.Name, fn.rack, gpus, plural(len(inst.Slices), "slice"), how)
		if err := s.snap.AddOrUpdateNode(inst.Node); err != nil {
			return err
		}
		s.objects.add(inst.Node)
		for _, sl := range inst.Slices {
			if err := s.snap.AddOrUpdateSlice(sl); err != nil {
				return err
			}
			s.objects.add(sl)
		}
		s.slices = append(s.slices, inst.Slices...)
		s.nodes = append(s.nodes, inst.Node)
	}
	return nil
}

// shareByMemory is what a driver that shares GPUs by memory publishes (as the dra-example-driver's
// gpuAllowMultipleAllocations does): the same devices, each allowing many allocations, each allocation
// taking a multiple of 4Gi of the GPU's memory, 4Gi when a request names no amount.
func shareByMemory(in []*resourceapi.ResourceSlice) []*resourceapi.ResourceSlice {
	step := resource.MustParse("4Gi")
	out := make([]*resourceapi.ResourceSlice, len(in))
	for i, sl := range in {
		sl = sl.DeepCopy()
		for j := range sl.Spec.Devices {
			d := &sl.Spec.Devices[j]
			d.AllowMultipleAllocations = ptr.To(true)
			memory := d.Capacity[inventory.CapMemory]
			memory.RequestPolicy = &resourceapi.CapacityRequestPolicy{
				Default:    &step,
				ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: &step, Step: &step},
			}
			d.Capacity[inventory.CapMemory] = memory
		}
		out[i] = sl
	}
	return out
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
