package allocator

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// results turns the search's findings into AllocationResults that share no memory with the snapshot or
// the claims. The device results of all claims share one array; for one claim of a few devices the
// AllocationResult, its node selector and its device results are one allocation.
func (a *allocation) results() ([]resourceapi.AllocationResult, error) {
	total := 0
	for ci := range a.claims {
		total += len(a.perClaim[ci].results)
	}
	out, pin, devs := resultBlock(len(a.claims), total)
	for ci, claim := range a.claims {
		cs := &a.perClaim[ci]
		res := &out[ci]
		n := len(cs.results)
		if n == 0 {
			res.Devices.Results = []resourceapi.DeviceRequestAllocationResult{}
		} else {
			// A full slice expression: appending to one claim's results must not reach the next's.
			res.Devices.Results, devs = devs[:n:n], devs[n:]
		}
		for i, dr := range cs.results {
			d := dr.dev
			r := &res.Devices.Results[i]
			*r = resourceapi.DeviceRequestAllocationResult{
				Request:     a.resultName(dr.req),
				Driver:      d.id.Driver,
				Pool:        d.id.Pool,
				Device:      d.id.Device,
				Tolerations: deepCopyTolerations(dr.req.tolerations),
			}
			if d.lists {
				if a.f.Implementation() == implExperimental {
					r.SkipNodeOperations = slices.Clone(d.slice.obj.Spec.SkipNodeOperations)
				}
				if a.f.BindingConditions() {
					r.BindingConditions = slices.Clone(d.api.BindingConditions)
					r.BindingFailureConditions = slices.Clone(d.api.BindingFailureConditions)
				}
			}
			if dr.req.adminAccess {
				t := true
				r.AdminAccess = &t
			}
			if dr.shareID != nil {
				id := types.UID(*dr.shareID)
				r.ShareID = &id
			}
			if dr.consumed != nil {
				r.ConsumedCapacity = make(map[resourceapi.QualifiedName]resource.Quantity, len(dr.consumed))
				for n, q := range dr.consumed {
					r.ConsumedCapacity[n] = q.DeepCopy()
				}
			}
		}
		res.Devices.Config = a.config(ci, claim)
		ns, err := a.nodeSelector(cs.results, pin)
		if err != nil {
			return nil, err
		}
		res.NodeSelector = ns
	}
	return out, nil
}

// resultBlock returns the AllocationResults of a call, room for the node selector of a single claim
// (nil for several claims) and the array for all their device results. One claim of up to eight devices,
// what a filter pass builds on every node where it fits, takes a single allocation; otherwise there are
// two.
func resultBlock(claims, devices int) ([]resourceapi.AllocationResult, *pinned, []resourceapi.DeviceRequestAllocationResult) {
	type results = resourceapi.AllocationResult
	type devs = resourceapi.DeviceRequestAllocationResult
	if claims != 1 {
		return make([]results, claims), nil, make([]devs, devices)
	}
	switch {
	case devices <= 1:
		b := &struct {
			out  [1]results
			pin  pinned
			devs [1]devs
		}{}
		return b.out[:], &b.pin, b.devs[:devices]
	case devices <= 2:
		b := &struct {
			out  [1]results
			pin  pinned
			devs [2]devs
		}{}
		return b.out[:], &b.pin, b.devs[:devices]
	case devices <= 4:
		b := &struct {
			out  [1]results
			pin  pinned
			devs [4]devs
		}{}
		return b.out[:], &b.pin, b.devs[:devices]
	case devices <= 8:
		b := &struct {
			out  [1]results
			pin  pinned
			devs [8]devs
		}{}
		return b.out[:], &b.pin, b.devs[:devices]
	}
	b := &struct {
		out [1]results
		pin pinned
	}{}
	return b.out[:], &b.pin, make([]devs, devices)
}

func deepCopyTolerations(in []resourceapi.DeviceToleration) []resourceapi.DeviceToleration {
	if in == nil {
		return nil
	}
	out := make([]resourceapi.DeviceToleration, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
	}
	return out
}

// chosen returns the request or subrequest the search settled on for spec.devices.requests[ri].
func (a *allocation) chosen(ci, ri int) *request {
	slot := &a.perClaim[ci].slots[ri]
	return slot.alts[slot.selected]
}

// config lists the device configuration of the result as Kubernetes does: first the configuration of the
// classes of the chosen requests (once per class, naming every request that uses the class), then the
// claim's configuration for the requests it names (or all of them); a configuration naming every request
// names none.
func (a *allocation) config(ci int, claim *resourceapi.ResourceClaim) []resourceapi.DeviceAllocationConfiguration {
	var out []resourceapi.DeviceAllocationConfiguration
	// A claim names few classes: a list searched linearly, reused across calls, beats a map.
	byClass := a.spans[:0]
requests:
	for ri := range claim.Spec.Devices.Requests {
		r := a.chosen(ci, ri)
		for _, sp := range byClass {
			if sp.class == r.class.Name {
				for i := sp.start; i < sp.end; i++ {
					out[i].Requests = append(out[i].Requests, a.resultName(r))
				}
				continue requests
			}
		}
		start := len(out)
		for _, c := range r.class.Spec.Config {
			out = append(out, resourceapi.DeviceAllocationConfiguration{
				Source:              resourceapi.AllocationConfigSourceClass,
				Requests:            []string{a.resultName(r)},
				DeviceConfiguration: *c.DeviceConfiguration.DeepCopy(),
			})
		}
		byClass = append(byClass, classSpan{class: r.class.Name, start: start, end: len(out)})
	}
	for _, c := range claim.Spec.Devices.Config {
		if len(c.Requests) == 0 || a.configApplies(ci, claim, c.Requests) {
			out = append(out, resourceapi.DeviceAllocationConfiguration{
				Source:              resourceapi.AllocationConfigSourceClaim,
				Requests:            slices.Clone(c.Requests),
				DeviceConfiguration: *c.DeviceConfiguration.DeepCopy(),
			})
		}
	}
	for i := range out {
		if len(out[i].Requests) > 0 && a.coversAll(ci, claim, out[i].Requests) {
			out[i].Requests = nil
		}
	}
	a.spans = byClass[:0]
	return out
}

// configApplies: the claim configuration names a request of the claim, or the chosen subrequest of one.
// As in Kubernetes, the requests are checked in order and the first request that is neither named nor
// has a named chosen subrequest is skipped, not decisive.
func (a *allocation) configApplies(ci int, claim *resourceapi.ResourceClaim, names []string) bool {
	for ri, req := range claim.Spec.Devices.Requests {
		if slices.Contains(names, req.Name) {
			return true
		}
		if r := a.chosen(ci, ri); r.parent != "" && slices.Contains(names, r.fullName()) {
			return true
		}
	}
	return false
}

// coversAll: every request of the claim is named, directly or through its chosen subrequest.
func (a *allocation) coversAll(ci int, claim *resourceapi.ResourceClaim, names []string) bool {
	for ri, req := range claim.Spec.Devices.Requests {
		if slices.Contains(names, req.Name) {
			continue
		}
		if r := a.chosen(ci, ri); r.parent != "" && slices.Contains(names, r.fullName()) {
			continue
		}
		return false
	}
	return true
}

// nodeSelector computes where the allocated devices can be used, as Kubernetes does: any device bound to
// a node (a node-local slice, per-device nodeName, or bindsToNode) pins the claim to this node; otherwise
// the single-term node selectors of network-attached devices are merged; no selector means every node.
func (a *allocation) nodeSelector(results []deviceResult, pin *pinned) (*v1.NodeSelector, error) {
	term := v1.NodeSelectorTerm{}
	for _, dr := range results {
		d := dr.dev
		if d.pins {
			if pin == nil {
				pin = &pinned{}
			}
			return pin.to(a.node.Name), nil
		}
		sel := d.slice.obj.Spec.NodeSelector
		if d.perDevice {
			sel = d.api.NodeSelector
		}
		if sel == nil {
			continue
		}
		switch len(sel.NodeSelectorTerms) {
		case 0:
		case 1:
			term.MatchFields = mergeRequirements(term.MatchFields, sel.NodeSelectorTerms[0].MatchFields)
			term.MatchExpressions = mergeRequirements(term.MatchExpressions, sel.NodeSelectorTerms[0].MatchExpressions)
		default:
			// As Kubernetes: a claim's node selector cannot express the union of several terms.
			field := "spec.nodeSelector"
			if d.perDevice {
				field = "spec.devices.nodeSelector"
			}
			return nil, nodeInputError("ResourceSlice "+d.slice.name(), field,
				fmt.Errorf("unsupported node selector with %d terms on allocated device %s", len(sel.NodeSelectorTerms), d.id))
		}
	}
	if len(term.MatchFields) == 0 && len(term.MatchExpressions) == 0 {
		return nil, nil
	}
	return &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{term}}, nil
}

// mergeRequirements appends the requirements not yet present (same key, operator and set of values).
func mergeRequirements(to, from []v1.NodeSelectorRequirement) []v1.NodeSelectorRequirement {
	for _, req := range from {
		if !slices.ContainsFunc(to, func(x v1.NodeSelectorRequirement) bool { return sameRequirement(x, req) }) {
			to = append(to, *req.DeepCopy())
		}
	}
	return to
}

func sameRequirement(x, y v1.NodeSelectorRequirement) bool {
	if x.Key != y.Key || x.Operator != y.Operator {
		return false
	}
	for _, v := range x.Values {
		if !slices.Contains(y.Values, v) {
			return false
		}
	}
	for _, v := range y.Values {
		if !slices.Contains(x.Values, v) {
			return false
		}
	}
	return true
}

// pinned is the node selector of a claim bound to one node, with room for its parts, so that it takes
// one allocation (or none, inside a larger block): a filter pass builds one for every node where a claim
// fits.
type pinned struct {
	sel    v1.NodeSelector
	term   [1]v1.NodeSelectorTerm
	req    [1]v1.NodeSelectorRequirement
	values [1]string
}

func (p *pinned) to(nodeName string) *v1.NodeSelector {
	p.values[0] = nodeName
	p.req[0] = v1.NodeSelectorRequirement{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: p.values[:]}
	p.term[0].MatchFields = p.req[:]
	p.sel.NodeSelectorTerms = p.term[:]
	return &p.sel
}
