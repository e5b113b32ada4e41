package pods_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
)

// heldDevices lists, per device, the claims of the snapshot whose allocation names it.
func heldDevices(c *pods.Cluster) map[string][]string {
	out := map[string][]string{}
	for _, claim := range c.Snapshot().Claims("") {
		if claim.Status.Allocation == nil {
			continue
		}
		for _, r := range claim.Status.Allocation.Devices.Results {
			id := r.Pool + "/" + r.Device
			out[id] = append(out[id], claim.Name)
		}
	}
	return out
}

// A driver writes status.devices for the devices of an allocated claim. When the last pod using the
// claim goes, the claim is deallocated and those entries go with the allocation (kube-apiserver drops
// status.devices entries of devices no longer allocated); the device is free for the next pod.
func TestRemoveDeallocatesAClaimWithDriverStatus(t *testing.T) {
	ctx := context.Background()
	c := cluster(t, pods.Options{}, 1, node("node-1", nil))
	must(t, c.Snapshot().AddOrUpdateClaim(claim("shared", 1)))
	a := pod("a", "gpu=claim:shared")
	pl, err := c.Place(ctx, a)
	must(t, err)
	must(t, c.Assume(pl))

	stored, _ := c.Snapshot().Claim("default", "shared")
	withStatus := stored.DeepCopy()
	r := withStatus.Status.Allocation.Devices.Results[0]
	withStatus.Status.Devices = []resourceapi.AllocatedDeviceStatus{{Driver: r.Driver, Pool: r.Pool, Device: r.Device}}
	must(t, c.Snapshot().AddOrUpdateClaim(withStatus))

	if err := c.Remove(a); err != nil {
		t.Fatalf("remove: %v", err)
	}
	after, _ := c.Snapshot().Claim("default", "shared")
	if after.Status.Allocation != nil || len(after.Status.ReservedFor) > 0 || len(after.Status.Devices) > 0 {
		t.Fatalf("claim after remove: allocation %v, reservedFor %v, devices %v; want all empty", after.Status.Allocation, after.Status.ReservedFor, after.Status.Devices)
	}
	must(t, c.Snapshot().AddOrUpdateClaim(claim("other", 1)))
	if _, err := c.Place(ctx, pod("b", "gpu=claim:other")); err != nil {
		t.Fatalf("the removed pod's device is not free: %v", err)
	}
}

// Two placements made in parallel on one snapshot pick the same free GPU. The first is assumed; the
// second no longer holds and is refused with a conflict, never written: one device, one claim.
func TestAssumeRefusesAStalePlacement(t *testing.T) {
	ctx := context.Background()
	c := cluster(t, pods.Options{}, 1, node("node-1", nil))
	must(t, c.AddOrUpdateTemplate(template("one", 1)))
	pa, err := c.Place(ctx, pod("a", "gpu=template:one"))
	must(t, err)
	pb, err := c.Place(ctx, pod("b", "gpu=template:one"))
	must(t, err)
	must(t, c.Assume(pa))
	err = c.Assume(pb)
	var ce *allocator.ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, allocator.ErrConflict) {
		t.Fatalf("assume of the stale placement: %v, want a conflict", err)
	}
	for dev, holders := range heldDevices(c) {
		if len(holders) > 1 {
			t.Fatalf("device %s held by %v", dev, holders)
		}
	}
	if _, ok := c.Snapshot().Claim("default", pb.Claims[0].Claim.Name); ok {
		t.Fatalf("the refused placement's claim %s was written", pb.Claims[0].Claim.Name)
	}
	if _, err := c.Place(ctx, pod("b", "gpu=template:one")); !errors.Is(err, pods.ErrNoNode) {
		t.Fatalf("b placed again: %v, want no node", err)
	}
}

// Two pods share an allocated claim and are placed in parallel: assuming both keeps both reservations
// (the second merges its own into the claim as it is now, as PreBind patches reservedFor).
func TestAssumeKeepsReservationsMadeMeanwhile(t *testing.T) {
	ctx := context.Background()
	c := cluster(t, pods.Options{}, 1, node("node-1", nil))
	must(t, c.Snapshot().AddOrUpdateClaim(claim("shared", 1)))
	first := pod("first", "gpu=claim:shared")
	pl, err := c.Place(ctx, first)
	must(t, err)
	must(t, c.Assume(pl))
	pa, err := c.Place(ctx, pod("a", "gpu=claim:shared"))
	must(t, err)
	pb, err := c.Place(ctx, pod("b", "gpu=claim:shared"))
	must(t, err)
	must(t, c.Assume(pa))
	must(t, c.Assume(pb))
	stored, _ := c.Snapshot().Claim("default", "shared")
	var names []string
	for _, r := range stored.Status.ReservedFor {
		names = append(names, r.Name)
	}
	if got := strings.Join(names, ","); got != "first,a,b" {
		t.Fatalf("reservedFor %s, want first,a,b", got)
	}
}

// Pods whose names share their first 58 characters get claims with one generateName; when the suffix
// repeats, the second pod's claim takes the next suffix drawn, as the resourceclaim controller retries
// after AlreadyExists, instead of overwriting the first pod's claim.
func TestGeneratedNamesNeverCollide(t *testing.T) {
	ctx := context.Background()
	suffixes := []string{"xxxxx", "xxxxx", "xxxxx", "yyyyy"}
	n := 0
	c := cluster(t, pods.Options{NameSuffix: func() string { s := suffixes[min(n, len(suffixes)-1)]; n++; return s }}, 2, node("node-1", nil))
	must(t, c.AddOrUpdateTemplate(template("one", 1)))
	long := strings.Repeat("a", 60)
	p1, p2 := pod(long+"-0", "gpu=template:one"), pod(long+"-1", "gpu=template:one")
	pl1, err := c.Place(ctx, p1)
	must(t, err)
	must(t, c.Assume(pl1))
	pl2, err := c.Place(ctx, p2)
	must(t, err)
	must(t, c.Assume(pl2))
	n1, n2 := pl1.Claims[0].Claim.Name, pl2.Claims[0].Claim.Name
	if n1 == n2 || !strings.HasSuffix(n2, "yyyyy") {
		t.Fatalf("claim names %s and %s, want distinct, the second with the next suffix drawn", n1, n2)
	}
	held := heldDevices(c)
	if len(held) != 2 {
		t.Fatalf("devices held: %v, want two, one per pod", held)
	}
	// A suffix source that only repeats a taken name gives up after a bounded number of draws.
	stuck := cluster(t, pods.Options{NameSuffix: func() string { return "zzzzz" }}, 2, node("node-1", nil))
	must(t, stuck.AddOrUpdateTemplate(template("one", 1)))
	pl, err := stuck.Place(ctx, p1)
	must(t, err)
	must(t, stuck.Assume(pl))
	if _, err := stuck.Place(ctx, p2); !errors.Is(err, allocator.ErrConflict) {
		t.Fatalf("place with every name taken: %v, want a conflict", err)
	}
}

// A placement whose generated claim name was taken between Place and Assume is refused.
func TestAssumeRefusesATakenGeneratedName(t *testing.T) {
	ctx := context.Background()
	c := cluster(t, pods.Options{NameSuffix: func() string { return "zzzzz" }}, 2, node("node-1", nil))
	must(t, c.AddOrUpdateTemplate(template("one", 1)))
	pl, err := c.Place(ctx, pod("a", "gpu=template:one"))
	must(t, err)
	squatter := claim(pl.Claims[0].Claim.Name, 1)
	must(t, c.Snapshot().AddOrUpdateClaim(squatter))
	if err := c.Assume(pl); !errors.Is(err, allocator.ErrConflict) {
		t.Fatalf("assume over a claim created since: %v, want a conflict", err)
	}
	stored, _ := c.Snapshot().Claim("default", squatter.Name)
	if stored.Status.Allocation != nil {
		t.Fatal("the other claim was overwritten")
	}
}

// Two placements made in parallel for the last CPUs of a node: the first is assumed, the second no
// longer fits (NodeResourcesFit counts the first pod now) and is refused with a conflict.
func TestAssumeRefusesAPlacementWhoseNodeFilledUp(t *testing.T) {
	ctx := context.Background()
	c := cluster(t, pods.Options{}, 0, node("node-1", nil))
	big := func(name string) *v1.Pod {
		p := pod(name)
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("20")}
		return p
	}
	pa, err := c.Place(ctx, big("a"))
	must(t, err)
	pb, err := c.Place(ctx, big("b"))
	must(t, err)
	must(t, c.Assume(pa))
	if err := c.Assume(pb); !errors.Is(err, allocator.ErrConflict) || !strings.Contains(err.Error(), "Insufficient cpu") {
		t.Fatalf("assume of b: %v, want a conflict naming Insufficient cpu", err)
	}
	if _, err := c.Place(ctx, big("b")); !errors.Is(err, pods.ErrNoNode) {
		t.Fatalf("b placed again: %v, want no node", err)
	}
	// Assuming a pod already recorded on its node again counts it once.
	must(t, c.Assume(pa))
}

// Cluster.Commit carries a fork's pods on nodes to the parent with its claims, and refuses a fork
// whose pods no longer fit beside what the parent placed since the fork.
func TestClusterCommitCarriesPods(t *testing.T) {
	ctx := context.Background()
	c := cluster(t, pods.Options{}, 1, node("node-1", nil))
	must(t, c.AddOrUpdateTemplate(template("one", 1)))
	big := func(name string, claims ...string) *v1.Pod {
		p := pod(name, claims...)
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("20")}
		return p
	}
	f := c.Fork()
	pl, err := f.Place(ctx, big("a", "gpu=template:one"))
	must(t, err)
	must(t, f.Assume(pl))
	must(t, f.Commit())
	if _, err := c.Place(ctx, big("b")); !errors.Is(err, pods.ErrNoNode) || !strings.Contains(err.Error(), "Insufficient cpu") {
		t.Fatalf("b on the parent after the commit: %v, want Insufficient cpu", err)
	}
	must(t, c.Remove(pod("a")))
	f = c.Fork()
	pl, err = f.Place(ctx, big("c"))
	must(t, err)
	must(t, f.Assume(pl))
	pd, err := c.Place(ctx, big("d"))
	must(t, err)
	must(t, c.Assume(pd))
	if err := f.Commit(); !errors.Is(err, allocator.ErrConflict) {
		t.Fatalf("commit of a fork whose pod no longer fits: %v, want a conflict", err)
	}
	if err := c.Commit(); err == nil {
		t.Fatal("commit of a Cluster that is no fork succeeded")
	}
}
