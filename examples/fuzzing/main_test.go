package main

import (
	"context"
	"errors"
	"io"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/fuzz"
)

// TestPropTeamClassesAllocateAndVerify is the property test a team puts in its CI: claims drawn for its
// classes on its node type, allocated by dralloc, every allocation checked by allocator/verify and the
// cluster never mutated (fuzz.CheckAllocations).
func TestPropTeamClassesAllocateAndVerify(t *testing.T) {
	team, err := newTeam("dgxh100")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := team.snapshot()
	if err != nil {
		t.Fatal(err)
	}
	clusters := rapid.Custom(func(rt *rapid.T) *fuzz.Cluster {
		return &fuzz.Cluster{
			Nodes: []*v1.Node{team.node}, Node: team.node, Slices: team.slices, Classes: team.classes,
			Claims: fuzz.ClaimsGen(generatorOptions(), team.classes, team.slices).Draw(rt, "claims"),
			// Features nil: the gates Kubernetes 1.37 enables by default, which the snapshot runs with.
		}
	})
	fuzz.CheckAllocations(t, clusters, func(_ context.Context, c *fuzz.Cluster) ([]resourceapi.AllocationResult, error) {
		return allocate(snap, c.Node, c.Claims)
	})
}

func TestDrawsAreCountedAndVerified(t *testing.T) {
	n, err := fuzzClasses([]string{"--draws", "20"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if n.draws != 20 || n.allocated+n.noFit+n.refused+n.undecided != 20 {
		t.Errorf("tally %+v does not add up to 20 draws", n)
	}
	// Each claim has at least one request of the team's classes, which select the node's 8 whole GPUs
	// and its MIG devices: some draws must be allocated.
	if n.allocated == 0 {
		t.Errorf("no draw allocated: %+v", n)
	}
	if _, err := fuzzClasses([]string{"--profile", "dgx-nope"}, io.Discard); err == nil {
		t.Error("unknown profile: no error")
	}
}

func TestNineWholeGPUsDoNotFitOnOneNode(t *testing.T) {
	team, err := newTeam("dgxh100")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := team.snapshot()
	if err != nil {
		t.Fatal(err)
	}
	// Nine whole GPUs of eight: counting decides before any search.
	claim := &resourceapi.ResourceClaim{}
	claim.Namespace, claim.Name = "default", "nine"
	claim.Spec.Devices.Requests = []resourceapi.DeviceRequest{{Name: "gpus", Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: "gpu.nvidia.com", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 9}}}
	if _, err := allocate(snap, team.node, []*resourceapi.ResourceClaim{claim}); !errors.Is(err, allocator.ErrUnsatisfiable) {
		t.Errorf("nine GPUs: %v, want ErrUnsatisfiable", err)
	}
}
