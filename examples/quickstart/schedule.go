package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/verify"
)

// schedule plays a scheduler's filter: it prepares one snapshot of the fleet, asks on every node whether a
// training claim fits and with which devices, checks the answer with the independent verifier, then uses a
// fork to ask "what if these claims were placed" without touching the snapshot.
func schedule(slices []*resourceapi.ResourceSlice) error {
	ctx := context.Background()
	snap := allocator.NewSnapshot(allocator.Options{})
	var nodes []*v1.Node
	for _, s := range slices {
		if err := snap.AddOrUpdateSlice(s); err != nil {
			return err
		}
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: *s.Spec.NodeName}}
		nodes = append(nodes, node)
	}
	classes := deviceClasses()
	for _, c := range classes {
		if err := snap.AddOrUpdateClass(c); err != nil {
			return err
		}
	}

	// Four Hopper GPUs that must all be the same product (matchAttribute on productName).
	train := claim("train", request("gpus", "gpu-hopper.nvidia.com", 4))
	train.Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{MatchAttribute: ptr.To[resourceapi.FullyQualifiedName]("gpu.nvidia.com/productName")}}

	fmt.Println("\n== scheduling: claim ml/train asks for 4 Hopper GPUs of one product")
	var fits []string
	for _, node := range nodes {
		results, err := snap.Allocate(ctx, node, []*resourceapi.ResourceClaim{train})
		switch {
		case errors.Is(err, allocator.ErrUnsatisfiable):
			fmt.Printf("%-12s does not fit: %v\n", node.Name, err)
		case err != nil:
			return err
		default:
			fits = append(fits, node.Name)
			fmt.Printf("%-12s fits with %s\n", node.Name, devices(results[0]))
			violations, err := verify.Check(ctx, verify.Input{Slices: slices, Classes: classes, Node: node},
				[]*resourceapi.ResourceClaim{train}, results)
			if err != nil {
				return err
			}
			fmt.Printf("%-12s verified independently: %d violations\n", "", len(violations))
		}
	}

	// What if: place train on the first node that fits, in a fork, and ask again for a second 6-GPU claim.
	fmt.Println("\n== what-if: place ml/train, then ask where a 6-GPU claim still fits")
	fork := snap.Fork()
	defer fork.Discard()
	node := nodeNamed(nodes, fits[0])
	results, err := fork.Allocate(ctx, node, []*resourceapi.ResourceClaim{train})
	if err != nil {
		return err
	}
	placed := train.DeepCopy()
	placed.Status.Allocation = &results[0]
	if err := fork.AddOrUpdateClaim(placed); err != nil {
		return err
	}
	big := claim("big", request("gpus", "gpu-hopper.nvidia.com", 6))
	// Fits asks the question a filter asks, without building an allocation.
	for _, name := range fits {
		inFork, err := fork.Fits(ctx, nodeNamed(nodes, name), []*resourceapi.ResourceClaim{big})
		if err != nil {
			return err
		}
		inSnapshot, err := snap.Fits(ctx, nodeNamed(nodes, name), []*resourceapi.ResourceClaim{big})
		if err != nil {
			return err
		}
		fmt.Printf("%-12s in the fork: %-14s in the snapshot: %s\n", name, verdict(inFork), verdict(inSnapshot))
	}
	return nil
}

func claim(name string, requests ...resourceapi.DeviceRequest) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name, UID: types.UID("uid-" + name)},
		Spec:       resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: requests}},
	}
}

func request(name, class string, count int64) resourceapi.DeviceRequest {
	return resourceapi.DeviceRequest{Name: name, Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: class,
		AllocationMode:  resourceapi.DeviceAllocationModeExactCount,
		Count:           count,
	}}
}

func devices(r resourceapi.AllocationResult) string {
	var names []string
	for _, d := range r.Devices.Results {
		names = append(names, d.Device)
	}
	return strings.Join(names, " ")
}

func verdict(fits bool) string {
	if fits {
		return "fits"
	}
	return "does not fit"
}

func nodeNamed(nodes []*v1.Node, name string) *v1.Node {
	for _, n := range nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}
