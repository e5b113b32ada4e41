package pods

import (
	"context"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

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
// the devices are free).
func (c *Cluster) fitsOnceFreed(ctx context.Context, snap *allocator.Snapshot, nodes []*v1.Node, claims [][]*resourceapi.ResourceClaim, out *Explanation) error {
	own := map[string]bool{}
	for i := range claims {
		for _, cl := range claims[i] {
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
	fork := snap.Fork()
	defer func() { _ = fork.Discard() }()
	for name := range all {
		ns, n, _ := strings.Cut(name, "/")
		if err := fork.DeleteClaim(ns, n); err != nil {
			return err
		}
	}
	holders := map[string]bool{}
	for _, i := range candidates {
		ok, err := fork.Fits(ctx, nodes[i], claims[i])
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
