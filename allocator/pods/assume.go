package pods

import (
	"errors"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dralloc/dralloc/allocator"
)

// Assume writes a placement into the snapshot, as the scheduler's assume cache holds it until the
// informers catch up: every claim with its allocation and reservation (generated claims are added), so
// that the next placement sees the devices in use. It writes all of the placement's claims or none.
//
// A placement is a decision made on the snapshot as it was; Place calls may run in parallel, and the
// snapshot may change between Place and Assume. Assume refuses, with an error wrapping
// allocator.ErrConflict (a *allocator.ConflictError naming the claim) and nothing written, a placement
// that no longer holds: a claim it generates exists now (the API server answers AlreadyExists), a claim
// it allocates was allocated or deleted meanwhile, a claim it only reserves was deallocated or allocated
// anew, or the devices, shares or shared counters it allocates are no longer free next to everything
// else the snapshot holds (as kube-scheduler's in-flight allocations keep two pods from one device).
// Place the pod again. Reservations other pods made meanwhile on a claim it shares are kept. Once
// written, the pod is recorded on its node, as [Cluster.AddOrUpdatePod] records a bound pod: its
// requests and host ports count for the next placements there.
func (c *Cluster) Assume(p *Placement) error {
	if p == nil {
		return &allocator.InputError{Object: "Placement", Err: errors.New("nil object")}
	}
	return c.assume([]*Placement{p})
}

// assume writes the placements' claims in one update of the snapshot. Assumes run one at a time, so
// that the pods checked to fit on their nodes (NodeResourcesFit, NodePorts) are still the pods recorded
// there when they are written: two placements made in parallel for the last CPUs of a node cannot both
// be assumed.
func (c *Cluster) assume(ps []*Placement) error {
	c.assumeMu.Lock()
	defer c.assumeMu.Unlock()
	var placed []podOnNode
	for _, p := range ps {
		if p != nil && p.Pod != nil {
			placed = append(placed, podOnNode{pod: p.Pod, node: p.Node})
		}
	}
	if err := c.stillFit(placed); err != nil {
		return err
	}
	updates, err := c.assumeUpdates(ps)
	if err != nil {
		return err
	}
	before := c.snap.Revision()
	err = c.snap.UpdateClaims(updates)
	after := c.snap.Revision()
	c.assumed(updates, before, after, err)
	c.fullIdx.assumed(before, after, err)
	if err != nil {
		return err
	}
	// As the scheduler's cache assumes the pod on its node: NodeResourcesFit and NodePorts count it.
	moved := c.recordPlacements(ps)
	// The rank indexes learn the nodes the write touched once the pods are recorded there, so that
	// no answer asked before the record survives it (rankindex.go).
	names, all := c.touchedBy(updates, ps)
	c.fullIdx.touched(names, all, true, before, after)
	// A pod assumed again on another node left its old one.
	c.fullIdx.freed(moved, false, nil)
	return nil
}

// podOnNode is a pod to be recorded on a node.
type podOnNode struct {
	pod  *v1.Pod
	node string
}

// stillFit checks that the pods, each on its node together with the others going there, still pass
// NodePorts and NodeResourcesFit next to the pods known there now; the error wraps allocator.ErrConflict,
// as a device taken meanwhile does.
func (c *Cluster) stillFit(ps []podOnNode) error {
	byNode := map[string][]*request{}
	var nodes []string
	for _, p := range ps {
		if _, ok := byNode[p.node]; !ok {
			nodes = append(nodes, p.node)
		}
		byNode[p.node] = append(byNode[p.node], &request{pod: p.pod, ext: c.planExtended(c.snap, p.pod), demand: demandOf(p.pod)})
	}
	for _, name := range nodes {
		node, ok := c.snap.Node(name)
		if !ok {
			return fmt.Errorf("%w: node %s was deleted since the placement", allocator.ErrConflict, name)
		}
		// A pod placed again (Assume of a pod already on its node) is counted once.
		reqs := slices.DeleteFunc(byNode[name], func(r *request) bool { return c.knownOn(r.pod, name) })
		if len(reqs) == 0 {
			continue
		}
		if reason := c.fitFilters(reqs, node); reason != "" {
			return fmt.Errorf("%w: %s no longer fits on node %s: %s", allocator.ErrConflict, podName(reqs[0].pod), name, reason)
		}
	}
	return nil
}

// plannedClaim is what the placements write for one claim: the last version written (a later pod's
// version of a claim builds on an earlier one's), and whether any placement generated or allocated it.
type plannedClaim struct {
	final                *resourceapi.ResourceClaim
	generated, allocated bool
}

// assumeUpdates turns placements into conditional updates of the claims as the snapshot holds them now.
func (c *Cluster) assumeUpdates(ps []*Placement) ([]allocator.ClaimUpdate, error) {
	var order []types.NamespacedName
	planned := map[types.NamespacedName]*plannedClaim{}
	for _, p := range ps {
		if p == nil {
			continue
		}
		for _, pc := range p.Claims {
			if pc.Claim == nil {
				return nil, &allocator.InputError{Object: "Placement of Pod " + podKey(p.Pod), Field: "claims", Err: errors.New("nil claim")}
			}
			key := types.NamespacedName{Namespace: pc.Claim.Namespace, Name: pc.Claim.Name}
			pl := planned[key]
			if pl == nil {
				pl = &plannedClaim{}
				planned[key] = pl
				order = append(order, key)
			}
			pl.final = pc.Claim
			pl.generated = pl.generated || pc.Generated
			pl.allocated = pl.allocated || pc.Allocated
		}
	}
	updates := make([]allocator.ClaimUpdate, 0, len(order))
	for _, key := range order {
		pl := planned[key]
		stored, ok := c.snap.Claim(key.Namespace, key.Name)
		u := allocator.ClaimUpdate{Namespace: key.Namespace, Name: key.Name, IfUnchanged: true, Base: stored, Claim: pl.final}
		conflict := func(reason string) error {
			return &allocator.ConflictError{Claim: key, Reason: reason + " since the placement"}
		}
		switch {
		case pl.generated && ok:
			return nil, conflict("a claim of that name was created")
		case pl.generated:
		case !ok:
			return nil, conflict("deleted")
		case pl.allocated && stored.Status.Allocation != nil:
			return nil, conflict("allocated")
		case pl.allocated:
		case stored.Status.Allocation == nil || !equality.Semantic.DeepEqual(stored.Status.Allocation, pl.final.Status.Allocation):
			return nil, conflict("deallocated or allocated anew")
		default:
			// Only reserved: add the placement's consumers to the claim as it is now, keeping
			// reservations made meanwhile, as the scheduler's PreBind patches status.reservedFor.
			merged := stored.DeepCopy()
			for _, r := range pl.final.Status.ReservedFor {
				if !reservedFor(merged, r) {
					merged.Status.ReservedFor = append(merged.Status.ReservedFor, r)
				}
			}
			if len(merged.Status.ReservedFor) > resourceapi.ResourceClaimReservedForMaxSize {
				return nil, conflict("reserved for the maximum of consumers")
			}
			if slices.Contains(pl.final.Finalizers, resourceapi.Finalizer) && !slices.Contains(merged.Finalizers, resourceapi.Finalizer) {
				merged.Finalizers = append(merged.Finalizers, resourceapi.Finalizer)
			}
			u.Claim = merged
		}
		updates = append(updates, u)
	}
	return updates, nil
}

func podKey(pod *v1.Pod) string {
	if pod == nil {
		return "<nil>"
	}
	return pod.Namespace + "/" + pod.Name
}

// Remove undoes what placing the pod did, as the control plane does when a pod goes away: the pod is
// removed from status.reservedFor of the namespace's claims; claims the pod owns (generated from
// templates, and the extended-resource claim) are deleted, as the garbage collector deletes them; other
// claims reserved by no one any more are deallocated, as the resourceclaim controller does (allocation
// and finalizer removed, and with them the status.devices entries a driver wrote, which kube-apiserver
// drops from a claim whose devices are no longer allocated), which frees their devices. PodGroup claims
// stay reserved for the group. All of it is one change of the snapshot, or none. The pod is forgotten
// on its node ([Cluster.DeletePod]). Removes run one at a time with Assumes.
func (c *Cluster) Remove(pod *v1.Pod) error {
	if pod == nil {
		return &allocator.InputError{Object: "Pod", Err: errors.New("nil object")}
	}
	c.assumeMu.Lock()
	defer c.assumeMu.Unlock()
	var names []string
	if node, ok := c.forget(pod.Namespace, pod.Name); ok {
		names = append(names, node)
	}
	updates, w, err := c.release(pod.Namespace, resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: pod.Name, UID: uidOf(pod)},
		ownerOf{apiVersion: "v1", kind: "Pod", name: pod.Name, uid: uidOf(pod)})
	c.released(names, updates, w)
	return err
}

// RemovePodGroup is Remove for a PodGroup: its reservations, and the claims it owns.
func (c *Cluster) RemovePodGroup(g *schedulingapi.PodGroup) error {
	if g == nil {
		return &allocator.InputError{Object: "PodGroup", Err: errors.New("nil object")}
	}
	c.assumeMu.Lock()
	defer c.assumeMu.Unlock()
	updates, w, err := c.release(g.Namespace, consumer(nil, g),
		ownerOf{apiVersion: schedulingapi.SchemeGroupVersion.String(), kind: "PodGroup", name: g.Name, uid: uidOf(g)})
	c.released(nil, updates, w)
	return err
}

// releaseTries bounds how often release reads the claims again when they changed while it wrote.
const releaseTries = 8

// snapWrite is one change of the snapshot a Cluster made: its revisions before and after.
type snapWrite struct{ before, after allocator.Revision }

// release writes releaseUpdates in one change, reading the claims again when they changed meanwhile, and
// returns what it wrote and the revisions around the write; no write when there was nothing to change
// or it failed (UpdateClaims changes all or nothing).
func (c *Cluster) release(namespace string, cons resourceapi.ResourceClaimConsumerReference, owner ownerOf) ([]allocator.ClaimUpdate, *snapWrite, error) {
	for try := 1; ; try++ {
		updates := c.releaseUpdates(namespace, cons, owner)
		if len(updates) == 0 {
			return nil, nil, nil
		}
		before := c.snap.Revision()
		err := c.snap.UpdateClaims(updates)
		after := c.snap.Revision()
		if err == nil {
			return updates, &snapWrite{before: before, after: after}, nil
		}
		if !errors.Is(err, allocator.ErrConflict) || try == releaseTries {
			return nil, nil, err
		}
	}
}

// released brings the load cache (score.go) and the node index (nodeindex.go) over a removal: the pods
// forgotten on the named nodes and the claim updates of the write w (nil: none). A removal only frees,
// so the indexes ask again the nodes it touched (touchedBy) rather than every node; a device of a
// pool that is not one node's own, or a write that was not the snapshot's next change after the
// indexes' revision, empties them.
func (c *Cluster) released(names []string, updates []allocator.ClaimUpdate, w *snapWrite) {
	all := false
	if w != nil {
		c.assumed(updates, w.before, w.after, nil)
		var more []string
		more, all = c.touchedBy(updates, nil)
		names = append(names, more...)
	}
	c.fullIdx.freed(names, all, w)
}

// releaseUpdates are the changes release makes, conditional on the claims as read.
func (c *Cluster) releaseUpdates(namespace string, cons resourceapi.ResourceClaimConsumerReference, owner ownerOf) []allocator.ClaimUpdate {
	var updates []allocator.ClaimUpdate
	for _, claim := range c.relatedClaims(namespace, cons, owner) {
		u := allocator.ClaimUpdate{Namespace: claim.Namespace, Name: claim.Name, IfUnchanged: true, Base: claim}
		owned := owner.owns(claim) || (claim.Annotations[resourceapi.ExtendedResourceClaimAnnotation] == "true" && owner.ownsByName(claim))
		if owned {
			updates = append(updates, u) // deleted
			continue
		}
		if !reservedFor(claim, cons) {
			continue
		}
		out := claim.DeepCopy()
		out.Status.ReservedFor = slices.DeleteFunc(out.Status.ReservedFor, func(r resourceapi.ResourceClaimConsumerReference) bool {
			return sameConsumer(r, cons)
		})
		if len(out.Status.ReservedFor) == 0 {
			out.Status.ReservedFor = nil
			if i := slices.Index(out.Finalizers, resourceapi.Finalizer); i >= 0 {
				out.Status.Allocation = nil
				out.Status.Devices = nil
				out.Finalizers = slices.Delete(out.Finalizers, i, i+1)
			}
		}
		u.Claim = out
		updates = append(updates, u)
	}
	return updates
}

// relatedClaims are the claims of the namespace that the owner owns or that are reserved for the consumer,
// sorted by name: those release may change, read through the snapshot's indexes so that a removal costs
// what it touches, not the number of claims in the cluster.
func (c *Cluster) relatedClaims(namespace string, cons resourceapi.ResourceClaimConsumerReference, owner ownerOf) []*resourceapi.ResourceClaim {
	owned := c.snap.ClaimsOwnedBy(namespace, owner.uid)
	held := c.snap.ClaimsReservedFor(namespace, cons.UID)
	out := make([]*resourceapi.ResourceClaim, 0, len(owned)+len(held))
	for len(owned) > 0 || len(held) > 0 {
		switch {
		case len(held) == 0 || len(owned) > 0 && owned[0].Name < held[0].Name:
			out, owned = append(out, owned[0]), owned[1:]
		case len(owned) == 0 || held[0].Name < owned[0].Name:
			out, held = append(out, held[0]), held[1:]
		default: // the same claim in both
			out, owned, held = append(out, owned[0]), owned[1:], held[1:]
		}
	}
	return out
}
