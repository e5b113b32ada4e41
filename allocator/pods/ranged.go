package pods

import (
	"context"
	"errors"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/capacity"
)

// Ranged capacity requests, an SDK extension (see capacity.ConsumedRange): a request for a share of a
// device with allowMultipleAllocations asks for its capacity.requests at least and, through
// Options.Preferred, up to a preferred amount. Kubernetes itself records what the point request
// consumes; a placement records more when the device has room, and Kubernetes accounts the share by
// that recorded amount while the claim is allocated.

// Preferred returns the preferred maximum of each capacity for one request of a claim ("request" or
// "request/subrequest", as in the allocation result), or nil for none.
type Preferred func(claim *resourceapi.ResourceClaim, request string) map[resourceapi.QualifiedName]resource.Quantity

// grow raises the consumed capacity of the placement's new shares to the largest policy-valid amount up
// to the preferred one that fits next to the device's other shares (capacity.ConsumedRange). The other
// shares are those the snapshot's claims hold and every other share of this placement, at the amount it
// has by then: a share grows only into capacity that none of them needs, so the placement never holds
// more of a device than it has.
func (c *Cluster) grow(snap *allocator.Snapshot, p *Placement) error {
	if c.opts.Preferred == nil {
		return nil
	}
	type share struct {
		claim *resourceapi.ResourceClaim
		r     *resourceapi.DeviceRequestAllocationResult
		id    allocator.DeviceID
		dev   *resourceapi.Device
	}
	ledgers := map[allocator.DeviceID]*capacity.Ledger{}
	var shares []share
	for _, pc := range p.Claims {
		if !pc.Allocated {
			continue
		}
		results := pc.Claim.Status.Allocation.Devices.Results
		for k := range results {
			r := &results[k]
			if r.ShareID == nil || r.ConsumedCapacity == nil {
				continue
			}
			id := allocator.DeviceID{Driver: r.Driver, Pool: r.Pool, Device: r.Device}
			dev, ok := snap.Device(id)
			if !ok {
				continue
			}
			l, ok := ledgers[id]
			if !ok {
				l = sharesOn(snap, id, dev)
				ledgers[id] = l
			}
			l.Add(r.ConsumedCapacity)
			shares = append(shares, share{pc.Claim, r, id, dev})
		}
	}
	opts := capOptions(snap)
	for _, sh := range shares {
		pref := c.opts.Preferred(sh.claim, sh.r.Request)
		if len(pref) == 0 {
			continue
		}
		l := ledgers[sh.id]
		l.Remove(sh.r.ConsumedCapacity)
		rr, err := capacity.ConsumedRange(capacity.RangeRequest{Min: requestCapacity(sh.claim, sh.r.Request), Preferred: pref}, sh.dev.Capacity, l, opts)
		if errors.Is(err, capacity.ErrUnsuitable) {
			l.Add(sh.r.ConsumedCapacity)
			continue // a preferred capacity the device lacks: the minimum stays
		}
		if err != nil {
			return fmt.Errorf("ResourceClaim %s/%s: request %s: %w", sh.claim.Namespace, sh.claim.Name, sh.r.Request, err)
		}
		sh.r.ConsumedCapacity = rr.Consumed
		l.Add(rr.Consumed)
	}
	return nil
}

func capOptions(snap *allocator.Snapshot) capacity.Options {
	features := snap.Features()
	return capacity.Options{Features: &features}
}

// sharesOn is the ledger of the shares that the snapshot's claims hold on the device.
func sharesOn(snap *allocator.Snapshot, id allocator.DeviceID, dev *resourceapi.Device) *capacity.Ledger {
	l := capacity.NewLedger(dev.Capacity)
	for _, claim := range snap.Claims("") {
		if claim.Status.Allocation == nil {
			continue
		}
		for _, r := range claim.Status.Allocation.Devices.Results {
			if r.ShareID != nil && r.Driver == id.Driver && r.Pool == id.Pool && r.Device == id.Device {
				l.Add(r.ConsumedCapacity)
			}
		}
	}
	return l
}

// requestCapacity returns capacity.requests of the claim's request or subrequest.
func requestCapacity(claim *resourceapi.ResourceClaim, name string) map[resourceapi.QualifiedName]resource.Quantity {
	for _, req := range claim.Spec.Devices.Requests {
		if req.Exactly != nil && req.Name == name {
			if req.Exactly.Capacity != nil {
				return req.Exactly.Capacity.Requests
			}
			return nil
		}
		for _, sub := range req.FirstAvailable {
			if req.Name+"/"+sub.Name == name {
				if sub.Capacity != nil {
					return sub.Capacity.Requests
				}
				return nil
			}
		}
	}
	return nil
}

// HandBack is one share of an earlier ranged allocation that must shrink for a pod to fit: an
// AllocationResult is immutable, so the claim is deallocated and allocated again at its minimum.
type HandBack struct {
	// Claim is "namespace/name" of the claim holding the share.
	Claim string
	// Request is the request of the share, as in the allocation result.
	Request string
	// Device is the shared device.
	Device allocator.DeviceID
	// Capacity is the capacity given back.
	Capacity resourceapi.QualifiedName
	// Amount is how much is given back: the share goes from Consumed down to Consumed − Amount, what its
	// request consumes.
	Amount   resource.Quantity
	Consumed resource.Quantity
}

// PlanHandBack answers the question a pod that fits nowhere asks of ranged allocations: if the shares
// that hold more than their requests consume went back to that minimum, would the pod fit? It returns
// the shares that must shrink (those on devices the pod would use, each back to its minimum, sorted by
// claim, request and capacity) and the placement the pod would then get (at its own minimum, not grown).
// When the pod fits as things are, the plan is empty; when it does not fit even then, the error wraps
// [ErrNoNode]. Nothing is changed.
func (c *Cluster) PlanHandBack(ctx context.Context, pod *v1.Pod) ([]HandBack, *Placement, error) {
	fork := c.snap.Fork()
	defer fork.Discard()
	opts := capOptions(c.snap)
	var candidates []HandBack
	for _, claim := range c.snap.Claims("") {
		a := claim.Status.Allocation
		if a == nil {
			continue
		}
		var shrunk *resourceapi.ResourceClaim
		for k, r := range a.Devices.Results {
			if r.ShareID == nil || r.ConsumedCapacity == nil {
				continue
			}
			id := allocator.DeviceID{Driver: r.Driver, Pool: r.Pool, Device: r.Device}
			dev, ok := c.snap.Device(id)
			if !ok {
				continue
			}
			minimum, err := capacity.Consumed(requestCapacity(claim, r.Request), dev.Capacity, opts)
			if err != nil {
				continue
			}
			for name, q := range r.ConsumedCapacity {
				m, ok := minimum[name]
				if !ok || q.Cmp(m) <= 0 {
					continue
				}
				amount := q.DeepCopy()
				amount.Sub(m)
				candidates = append(candidates, HandBack{Claim: claim.Namespace + "/" + claim.Name, Request: r.Request, Device: id,
					Capacity: name, Amount: amount, Consumed: q.DeepCopy()})
				if shrunk == nil {
					shrunk = claim.DeepCopy()
				}
				shrunk.Status.Allocation.Devices.Results[k].ConsumedCapacity[name] = m.DeepCopy()
			}
		}
		if shrunk != nil {
			if err := fork.AddOrUpdateClaim(shrunk); err != nil {
				return nil, nil, err
			}
		}
	}
	if p, err := c.placeOn(ctx, c.snap, pod, false); err == nil || !errors.Is(err, ErrNoNode) {
		return nil, p, err
	}
	p, err := c.placeOn(ctx, fork, pod, false)
	if err != nil {
		return nil, nil, err
	}
	used := map[allocator.DeviceID]bool{}
	for _, pc := range p.Claims {
		for _, r := range pc.Claim.Status.Allocation.Devices.Results {
			used[allocator.DeviceID{Driver: r.Driver, Pool: r.Pool, Device: r.Device}] = true
		}
	}
	plan := slices.DeleteFunc(candidates, func(h HandBack) bool { return !used[h.Device] })
	slices.SortStableFunc(plan, func(x, y HandBack) int {
		switch {
		case x.Claim != y.Claim:
			return compare(x.Claim, y.Claim)
		case x.Request != y.Request:
			return compare(x.Request, y.Request)
		}
		return compare(string(x.Capacity), string(y.Capacity))
	})
	return plan, p, nil
}

func compare(x, y string) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}
