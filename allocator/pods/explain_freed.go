package pods

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/dralloc/dralloc/allocator"
)

// A pod that fits nowhere either never fits as the cluster is built (a request needs more devices than
// any node has that match it) or fits once some claims release their devices. The two call for different
// actions (a different request or node versus waiting or preempting), so the explanation tells them apart
// before it groups the nodes.

// matchingDevices is how many devices of the node match the request: those the filters that decide what
// a device is (pools, selectors, CEL errors, node locality) leave, in use or not.
func matchingDevices(r *allocator.RequestExplanation) int {
	n := r.Devices
	for _, f := range r.Filters {
		if staticFilter(f.Reason) {
			n -= f.Removed
		}
	}
	return n
}

// tooFew lists the requests that every node whose claims were explained has too few matching devices
// for. A request with firstAvailable is listed (each of its subrequests) only when every subrequest is
// short everywhere: any one of them would serve it. Requests for all devices are never short of a count.
func tooFew(nodes []NodeExplanation) []RequestShortfall {
	type key struct{ claim, request string }
	var order []key
	most := map[key]*RequestShortfall{}
	seen := map[key]int{} // on how many explained nodes the request is
	explained := 0
	for _, n := range nodes {
		if n.Claims == nil {
			continue
		}
		explained++
		for _, c := range n.Claims.Claims {
			for i := range c.Requests {
				r := &c.Requests[i]
				k := key{c.Claim, r.Request}
				s, ok := most[k]
				if !ok {
					s = &RequestShortfall{Request: allocator.RequestRef{Claim: c.Claim, Request: r.Request}, Needs: r.Needs}
					if r.All {
						s.Needs = 0 // never short of a count
					}
					most[k] = s
					order = append(order, k)
				}
				seen[k]++
				if m := matchingDevices(r); m > s.Most {
					s.Most, s.Node = m, n.Node
				}
			}
		}
	}
	short := func(k key) bool {
		s := most[k]
		// A request missing from some node (its claim is not allocated there) does not keep the pod off it.
		return seen[k] == explained && s.Most < s.Needs
	}
	parentShort := map[key]bool{}
	for _, k := range order {
		parent, _, _ := strings.Cut(k.request, "/")
		pk := key{k.claim, parent}
		was, ok := parentShort[pk]
		parentShort[pk] = short(k) && (was || !ok)
	}
	var out []RequestShortfall
	for _, k := range order {
		parent, _, _ := strings.Cut(k.request, "/")
		if parentShort[key{k.claim, parent}] {
			out = append(out, *most[k])
		}
	}
	return out
}

// fitsOnceFreed finds the nodes where only devices in use keep the pod off: on a fork of the snapshot
// without the claims holding devices on those nodes, the pod's claims fit there. The fork makes the
// answer exact where counting would not be (constraints, shared counters and capacity still apply once
// the devices are free). claims are each node's claims, nil where none were explained.
//
// Two costs are paid once rather than per pod and per node. The fork, which copies the snapshot's
// indexes, is kept (see freedFork) and serves the next pod that frees the same claims on the same
// revision of the snapshot: pods of one workload, pending on a full fleet, see the same holders. And
// the fork is asked once per class of nodes its claims cannot tell apart, as Place asks the snapshot
// (allocator.NodeClasses: Fits answers alike on every node of a class).
func (c *Cluster) fitsOnceFreed(ctx context.Context, snap *allocator.Snapshot, r *request, nodes []*v1.Node, claims []*nodeClaims, out *Explanation) error {
	own := map[string]bool{}
	for _, nc := range claims {
		if nc == nil {
			continue
		}
		for _, cl := range nc.claims {
			own[cl.Namespace+"/"+cl.Name] = true
		}
	}
	holdersOf := make([][]string, len(out.Nodes))
	var candidates []int
	all := map[string]bool{}
	for i := range out.Nodes {
		ne := &out.Nodes[i]
		if ne.Claims == nil || ne.Fits {
			continue
		}
		for _, ce := range ne.Claims.Claims {
			for _, r := range ce.Requests {
				for _, f := range r.Filters {
					if f.Reason != allocator.ReasonAllocated {
						continue
					}
					for _, cause := range f.Causes {
						name, ok := strings.CutPrefix(cause.Object, "ResourceClaim ")
						if !ok || name == "" || own[name] || slices.Contains(holdersOf[i], name) {
							continue
						}
						holdersOf[i] = append(holdersOf[i], name)
						all[name] = true
					}
				}
			}
		}
		if len(holdersOf[i]) > 0 {
			candidates = append(candidates, i)
		}
	}
	if len(candidates) == 0 {
		return nil
	}
	freed := slices.Sorted(maps.Keys(all))
	fork, err := c.freedFork(snap, freed)
	if err != nil {
		return err
	}
	var classes *allocator.NodeClasses
	if len(r.pending) > 0 && len(candidates) > 1 && !c.perNode {
		if classes, err = fork.NodeClasses(ctx, r.pending); err != nil {
			return fmt.Errorf("%s: %w", podName(r.pod), err)
		}
	}
	var shared classVerdicts
	holders := map[string]bool{}
	for _, i := range candidates {
		ok, err := shared.fits(ctx, fork, classes, nodes[i], claims[i])
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			continue // the search gave up: not known to fit
		}
		if ok {
			out.FitsOnceFreed = append(out.FitsOnceFreed, out.Nodes[i].Node)
			for _, h := range holdersOf[i] {
				holders[h] = true
			}
		}
	}
	for h := range holders {
		out.Holders = append(out.Holders, h)
	}
	slices.Sort(out.Holders)
	return nil
}

// freedFork is a fork of the snapshot at one revision without some claims ("namespace/name", sorted):
// only read (Fits, NodeClasses), never changed once made nor discarded, so that concurrent Explain
// calls may share it and one replacing it leaves it intact for the others.
type freedFork struct {
	rev   allocator.Revision
	snap  *allocator.Snapshot // the snapshot forked
	freed []string
	fork  *allocator.Snapshot
}

// freedFork returns a fork of snap without the claims freed, the one kept from an earlier Explain when
// it was made from snap at its current revision without the same claims. The Cluster keeps the latest
// fork only: the pending pods of one workload free the same claims, and a fork holds a copy of the
// snapshot's indexes.
func (c *Cluster) freedFork(snap *allocator.Snapshot, freed []string) (*allocator.Snapshot, error) {
	rev := snap.Revision()
	if c.perNode {
		fork := snap.Fork()
		for _, name := range freed {
			ns, n, _ := strings.Cut(name, "/")
			if err := fork.DeleteClaim(ns, n); err != nil {
				return nil, err
			}
		}
		return fork, nil
	}
	if f := c.freed.Load(); f != nil && f.snap == snap && f.rev == rev && slices.Equal(f.freed, freed) {
		return f.fork, nil
	}
	fork := snap.Fork()
	for _, name := range freed {
		ns, n, _ := strings.Cut(name, "/")
		if err := fork.DeleteClaim(ns, n); err != nil {
			_ = fork.Discard()
			return nil, err
		}
	}
	// A change between the two reads of the revision may or may not be in the fork: keep it only when
	// there was none.
	if snap.Revision() == rev {
		c.freed.Store(&freedFork{rev: rev, snap: snap, freed: freed, fork: fork})
	}
	return fork, nil
}

// String is the shortfall as a sentence: `claim default/big, request "gpu" needs 8 devices, no node has
// more than 4 matching (node-3)`.
func (s RequestShortfall) String() string {
	head := s.Request.String() + " needs " + plural(s.Needs, "device") + ", "
	if s.Most == 0 {
		return head + "no node has a matching one"
	}
	return head + "no node has more than " + strconv.Itoa(s.Most) + " matching (" + s.Node + ")"
}

// summary is what the pod would need, before the groups: that no node has enough devices matching a
// request (of those some device matches), or which claims hold the devices of the nodes where it would
// fit; "" when neither is known.
func (e *Explanation) summary() string {
	switch {
	case len(e.TooFew) > 0:
		var parts []string
		for _, s := range e.TooFew {
			// A request nothing matches is worded by its groups, which name the class or selector.
			if s.Most > 0 {
				parts = append(parts, s.String())
			}
		}
		if len(parts) == 0 {
			return ""
		}
		return "does not fit even on an empty node: " + strings.Join(parts, "; ")
	case len(e.FitsOnceFreed) > 0:
		s := "would fit on " + plural(len(e.FitsOnceFreed), "node") + " (" + list(e.FitsOnceFreed, "more") + ") once "
		if len(e.Holders) == 1 {
			return s + "claim " + e.Holders[0] + " releases its devices"
		}
		return s + "claims " + list(e.Holders, "others") + " release their devices"
	}
	return ""
}

// list is the first three names, "a, b and c", and how many others: "a, b, c and 2 more".
func list(names []string, others string) string {
	const shown = 3
	switch {
	case len(names) == 1:
		return names[0]
	case len(names) <= shown:
		return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
	}
	return strings.Join(names[:shown], ", ") + " and " + strconv.Itoa(len(names)-shown) + " " + others
}
