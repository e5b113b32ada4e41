package explainer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
)

// Dominant reasons that are not an [allocator.Reason].
const (
	// ReasonFits is a pod that fits on some node by dralloc's answer: what keeps it pending is not DRA
	// (or the scheduler has not retried yet).
	ReasonFits = "Fits"
	// ReasonNoNodes is a cluster without nodes.
	ReasonNoNodes = "NoNodes"
	// ReasonNodePredicate is a pod ruled out by the nodes' affinity or taints before its claims.
	ReasonNodePredicate = "NodePredicate"
	// ReasonExtendedResourceClass is an extended resource that no DeviceClass maps and no node advertises.
	ReasonExtendedResourceClass = "ExtendedResourceClassMissing"
	// ReasonClaims is a pod whose claims do not fit for a reason the explanation does not classify.
	ReasonClaims = "ClaimsDoNotFit"
	// ReasonTooFewDevices is a request that needs more devices than a node has matching it, in use or
	// not; as the dominant reason of a pod, than any node has ([pods.Explanation.TooFew]).
	ReasonTooFewDevices = "TooFewMatchingDevices"
	// ReasonWaitingForObject is a pod whose ResourceClaim, ResourceClaimTemplate or PodGroup is not
	// in the informers' caches: not created yet, or not delivered yet (see [Config].WaitGrace).
	ReasonWaitingForObject = "WaitingForObject"
	// ReasonClaimNotUsable is a pod whose ResourceClaim cannot serve it (another pod's claim from a
	// template of the same name, or a claim being deleted).
	ReasonClaimNotUsable = "ClaimNotUsable"
	// ReasonQuotaExceeded is a pod whose claims fit a node but not their namespace's quota (with
	// Config.EnforceQuota): the message names the limit, what the namespace holds and what the claims
	// ask for ([allocator.QuotaExceeded]).
	ReasonQuotaExceeded = "QuotaExceeded"
)

// Result is what the controller records for one pod.
type Result struct {
	// Fits reports that dralloc finds a node for the pod: nothing is recorded.
	Fits bool
	// Message is the explanation in one line, grouped by reason, most nodes first.
	Message string
	// Reason is the dominant reason, a label value of bounded cardinality: an [allocator.Reason]
	// ("ClassSelectorFalse", "UntoleratedTaint", …) or one of the Reason… constants of this package.
	Reason string
	// Blockers identifies the set of objects that keep the pod off the nodes (the claims holding their
	// devices, the taint rules and slices tainting them, the classes and claims whose selectors reject
	// them, the pools not ready): a digest, "" when there are none. The Message names only some of them
	// (the first and how many others), so a new blocker in place of another can leave it unchanged; the
	// explanation is current only when both are.
	Blockers string
}

// Explain explains why the pod fits nowhere, on the Cluster's snapshot: the extended resources nothing
// serves first (the pods layer leaves a resource no class maps to device plugins, so it never names
// one), then the explanation of [pods.Cluster.Explain].
func Explain(ctx context.Context, c *pods.Cluster, pod *v1.Pod) (Result, error) {
	snap := c.Snapshot()
	var missing []string
	for _, r := range draExtendedResources(pod, snap.Classes(), snap.Nodes()) {
		if r.class == "" {
			missing = append(missing, "extended resource "+string(r.name)+": no DeviceClass has it as spec.extendedResourceName and no node advertises it")
		}
	}
	e, err := c.Explain(ctx, pod)
	if err != nil {
		return Result{}, err
	}
	if len(missing) > 0 {
		msg := strings.Join(missing, "; ")
		if len(e.FitsOn) == 0 && len(e.Groups) > 0 {
			msg += "; " + e.String()
		}
		return Result{Message: msg, Reason: ReasonExtendedResourceClass}, nil
	}
	if len(e.FitsOn) > 0 {
		return Result{Fits: true, Message: e.String(), Reason: ReasonFits}, nil
	}
	return Result{Message: e.String(), Reason: dominant(e), Blockers: blockers(e)}, nil
}

// blockers is a digest of the objects the causes name on every node, each with its filter's reason.
func blockers(e *pods.Explanation) string {
	set := map[string]struct{}{}
	for i := range e.Nodes {
		ce := e.Nodes[i].Claims
		if ce == nil {
			continue
		}
		// A quota's limit blocks like an object: its name and Max (what the namespace holds and asks
		// for are in the message).
		for _, q := range ce.Quota {
			set[ReasonQuotaExceeded+"\x00ResourceQuota\x00"+q.Limit.String()] = struct{}{}
		}
		for _, c := range ce.Claims {
			for _, r := range c.Requests {
				for _, f := range r.Filters {
					for _, cause := range f.Causes {
						set[string(f.Reason)+"\x00"+cause.Object+"\x00"+cause.Name] = struct{}{}
					}
				}
			}
		}
	}
	if len(set) == 0 {
		return ""
	}
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(set)) {
		h.Write([]byte(k))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// dominant is what the pod would need, when known: more quota when the largest group of nodes is
// refused for it (claims releasing their devices may then be named too: they free quota), a request no
// node has enough matching devices for, or claims to release their devices; otherwise the reason of the
// largest group of nodes, read from its first node.
func dominant(e *pods.Explanation) string {
	if n := firstOfLargest(e); n != nil && n.Claims != nil && len(n.Claims.Quota) > 0 {
		return ReasonQuotaExceeded
	}
	for _, s := range e.TooFew {
		if s.Most > 0 {
			return ReasonTooFewDevices
		}
	}
	if len(e.FitsOnceFreed) > 0 {
		return string(allocator.ReasonAllocated)
	}
	if len(e.Groups) == 0 || len(e.Groups[0].Examples) == 0 {
		return ReasonNoNodes
	}
	n := firstOfLargest(e)
	switch {
	case n == nil:
		return ReasonClaims
	case n.Claims != nil:
		return claimsReason(n.Claims)
	case strings.Contains(n.Reason, "extended resource"):
		return ReasonExtendedResourceClass
	}
	return ReasonNodePredicate
}

// firstOfLargest is the first node of the largest group; nil when there is none.
func firstOfLargest(e *pods.Explanation) *pods.NodeExplanation {
	if len(e.Groups) == 0 || len(e.Groups[0].Examples) == 0 {
		return nil
	}
	name := e.Groups[0].Examples[0]
	for i := range e.Nodes {
		if e.Nodes[i].Node == name {
			return &e.Nodes[i]
		}
	}
	return nil
}

// claimsReason reads the main reason of the first short request as dralloc's explanation words it
// (allocator/pods, nodeReason): when the filters that decide what a device is (pools, class and
// request selectors, CEL errors, node locality) leave no device, the one that removed the most; when
// they leave fewer devices than the request needs, too few devices; else the filter that removed the
// most of the matching devices (in use, tainted, short of capacity or counters). Without a short
// request, the first obstacle between the requests. Claims that fit the node but not their quota have
// their own reason, whatever the counts (those of the search without quota) say.
func claimsReason(e *allocator.Explanation) string {
	if len(e.Quota) > 0 {
		return ReasonQuotaExceeded
	}
	for _, c := range e.Claims {
		for i := range c.Requests {
			r := &c.Requests[i]
			if !r.Short() {
				continue
			}
			matching := r.Devices
			var top, topStatic *allocator.Filter
			for fi := range r.Filters {
				f := &r.Filters[fi]
				if staticFilter(f.Reason) {
					matching -= f.Removed
					if topStatic == nil || f.Removed > topStatic.Removed {
						topStatic = f
					}
				} else if top == nil || f.Removed > top.Removed {
					top = f
				}
			}
			switch {
			case matching <= 0 && topStatic != nil && topStatic.Removed > 0:
				return string(topStatic.Reason)
			case !r.All && matching < r.Needs:
				return ReasonTooFewDevices
			case top != nil && top.Removed > 0:
				return string(top.Reason)
			}
			return ReasonClaims
		}
	}
	if len(e.Obstacles) > 0 {
		return string(e.Obstacles[0].Reason)
	}
	if len(e.Pools) > 0 {
		if e.Pools[0].Incomplete {
			return string(allocator.ReasonPoolIncomplete)
		}
		return string(allocator.ReasonPoolInvalid)
	}
	return ReasonClaims
}

// staticFilter reports the filters that decide what a device is, before what the cluster does with it.
func staticFilter(r allocator.Reason) bool {
	switch r {
	case allocator.ReasonPoolIncomplete, allocator.ReasonPoolInvalid, allocator.ReasonBindingConditions, allocator.ReasonClassSelector,
		allocator.ReasonRequestSelector, allocator.ReasonCELError, allocator.ReasonNotOnNode:
		return true
	}
	return false
}
