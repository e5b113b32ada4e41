package scaling_test

import (
	"context"
	"strings"
	"testing"

	"github.com/dralloc/dralloc/allocator/scaling"
	"github.com/dralloc/dralloc/inventory"
)

func dgxTypes(t tb) []scaling.NodeType {
	return []scaling.NodeType{{Template: profile(t, "dgxa100"), Cost: 1}, {Template: profile(t, "dgxh100"), Cost: 3}}
}

func TestFitsFromZero(t *testing.T) {
	h100Only := extPod("h100-only", 1)
	h100Only.Spec.NodeSelector = map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
	for _, tc := range []struct {
		name    string
		pending scaling.Pending
		// per type: dgxa100, dgxh100; "" means fits, otherwise a part of the reason
		a100, h100 string
	}{
		// NVIDIA's MIG demo: four MIG devices with one parentUUID fit one A100 (1g.5gb x2, 2g.10gb and
		// 3g.20gb take its 7 compute and 8 memory slices); the H100 has no such profiles.
		{"MIG demo with a parentUUID constraint", single(claimPod("mig-demo", "mig-devices")), "", "cannot allocate all claims"},
		// The A100 profile runs with MIG enabled and cannot give a whole GPU; the H100 gives all 8.
		{"extended resource nvidia.com/gpu: 8", single(extPod("eight", 8)), "cannot allocate all claims", ""},
		{"nine GPUs fit on no DGX", single(extPod("nine", 9)), "cannot allocate all claims", "cannot allocate all claims"},
		{"node selector on GFD's product label", single(h100Only), "node affinity", ""},
		{"gang of two pods with four GPUs each needs one H100", gang("pair", 2, "four-gpus"), "cannot be placed", ""},
		{"gang of three pods with four GPUs each needs two H100s", gang("trio", 3, "four-gpus"), "cannot be placed", ""},
		{"one GPU by extended resource", single(extPod("one", 1)), "cannot allocate all claims", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var gangs []scaling.Pending
			if tc.pending.Group != nil {
				gangs = append(gangs, tc.pending)
			}
			p, err := scaling.New(newCluster(t, nil, gangs...), dgxTypes(t), scaling.Options{})
			must(t, err)
			fits, err := p.Fits(context.Background(), []scaling.Pending{tc.pending})
			must(t, err)
			for i, want := range []string{tc.a100, tc.h100} {
				got := fits[0].Types[i]
				switch {
				case want == "" && !got.Fits:
					t.Errorf("%s: does not fit (%s), want fits", got.Type, got.Reason)
				case want != "" && (got.Fits || !strings.Contains(got.Reason, want)):
					t.Errorf("%s: fits=%v reason %q, want no fit because of %q", got.Type, got.Fits, got.Reason, want)
				}
			}
		})
	}
}

// Without per-node identities (as templates were before they generated UUIDs) the MIG demo fits on no
// template node, though it fits a real DGX A100: matchAttribute needs the attribute on every device.
func TestFitsNeedsTheIdentitiesARealNodeHas(t *testing.T) {
	a100 := profile(t, "dgxa100")
	real := instance(t, a100, "real-a100")
	anonymous, err := inventory.RecordTemplate("anonymous-a100", real.Node, real.Slices)
	must(t, err)
	for i := range anonymous.Recorded {
		for j := range anonymous.Recorded[i].Devices {
			delete(anonymous.Recorded[i].Devices[j].Attributes, "uuid")
			delete(anonymous.Recorded[i].Devices[j].Attributes, "parentUUID")
		}
	}
	p, err := scaling.New(newCluster(t, nil), []scaling.NodeType{{Template: a100}, {Template: anonymous}}, scaling.Options{})
	must(t, err)
	fits, err := p.Fits(context.Background(), []scaling.Pending{single(claimPod("mig-demo", "mig-devices"))})
	must(t, err)
	if !fits[0].Types[0].Fits || fits[0].Types[1].Fits {
		t.Errorf("fits %+v: want the demo to fit the template with identities only", fits[0].Types)
	}
}

func TestFitsCountsTheNodesOfAGang(t *testing.T) {
	trio := gang("trio", 3, "four-gpus")
	p, err := scaling.New(newCluster(t, nil, trio), dgxTypes(t), scaling.Options{})
	must(t, err)
	fits, err := p.Fits(context.Background(), []scaling.Pending{trio})
	must(t, err)
	if got := fits[0].Types[1]; !got.Fits || got.Nodes != 2 {
		t.Errorf("dgxh100: %+v, want fits on 2 nodes (three pods of 4 GPUs, 8 GPUs a node)", got)
	}
}
