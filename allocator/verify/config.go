package verify

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"
)

// checkConfig compares the result's configuration with what Kubernetes writes: first the configuration of every
// class used, once per class, for the requests using it; then every claim configuration that applies to a
// request or to the chosen subrequest; a configuration that applies to every request lists none.
func (cc *claimCheck) checkConfig() {
	want := cc.expectedConfig()
	got := cc.result.Devices.Config
	if !equality.Semantic.DeepEqual(nilIfEmpty(got), nilIfEmpty(want)) {
		cc.violation(RuleConfig, "", -1, DeviceID{}, "configuration %s, expected %s", formatConfig(got), formatConfig(want))
	}
}

func (cc *claimCheck) expectedConfig() []resourceapi.DeviceAllocationConfiguration {
	var out []resourceapi.DeviceAllocationConfiguration
	type span struct{ start, end int }
	byClass := map[string]span{}
	reqs := cc.claim.Spec.Devices.Requests
	for _, dr := range reqs {
		req := cc.chosen[dr.Name]
		if req == nil {
			continue
		}
		class := cc.classes[req.class]
		if class == nil {
			continue
		}
		if s, ok := byClass[class.Name]; ok {
			for i := s.start; i < s.end; i++ {
				out[i].Requests = append(out[i].Requests, req.name)
			}
			continue
		}
		start := len(out)
		for _, cfg := range class.Spec.Config {
			out = append(out, resourceapi.DeviceAllocationConfiguration{
				Source:              resourceapi.AllocationConfigSourceClass,
				Requests:            []string{req.name},
				DeviceConfiguration: cfg.DeviceConfiguration,
			})
		}
		byClass[class.Name] = span{start, len(out)}
	}
	for _, cfg := range cc.claim.Spec.Devices.Config {
		applies := len(cfg.Requests) == 0
		for _, dr := range reqs {
			if applies {
				break
			}
			if slices.Contains(cfg.Requests, dr.Name) {
				applies = true
			} else if req := cc.chosen[dr.Name]; req != nil && req.parent != "" && slices.Contains(cfg.Requests, req.name) {
				applies = true
			}
		}
		if applies {
			out = append(out, resourceapi.DeviceAllocationConfiguration{
				Source:              resourceapi.AllocationConfigSourceClaim,
				Requests:            cfg.Requests,
				DeviceConfiguration: cfg.DeviceConfiguration,
			})
		}
	}
	for i := range out {
		if len(out[i].Requests) == 0 {
			continue
		}
		all := true
		for _, dr := range reqs {
			if slices.Contains(out[i].Requests, dr.Name) {
				continue
			}
			if req := cc.chosen[dr.Name]; req != nil && req.parent != "" && slices.Contains(out[i].Requests, req.name) {
				continue
			}
			all = false
			break
		}
		if all {
			out[i].Requests = nil
		}
	}
	return out
}

func formatConfig(cfg []resourceapi.DeviceAllocationConfiguration) string {
	if len(cfg) == 0 {
		return "none"
	}
	s := ""
	for i, c := range cfg {
		if i > 0 {
			s += "; "
		}
		s += string(c.Source) + " for " + formatRequests(c.Requests)
		if c.Opaque != nil {
			s += " (" + c.Opaque.Driver + " " + string(c.Opaque.Parameters.Raw) + ")"
		}
	}
	return s
}

func formatRequests(r []string) string {
	if len(r) == 0 {
		return "all requests"
	}
	s := ""
	for i, n := range r {
		if i > 0 {
			s += ","
		}
		s += n
	}
	return s
}

// checkNodeSelector compares the result's node selector with what Kubernetes writes: the node by name when a
// device is local to a node or binds to it, else the requirements of the network-attached pools' selectors
// (deduplicated, in one term), else none.
func (cc *claimCheck) checkNodeSelector() {
	if cc.in.Node == nil || slices.Contains(cc.devs, nil) {
		// Without the node, or with results already reported as unresolvable, there is nothing to compare.
		return
	}
	want := cc.expectedNodeSelector()
	if !equality.Semantic.DeepEqual(cc.result.NodeSelector, want) {
		cc.violation(RuleNodeSelector, "", -1, DeviceID{}, "node selector %s, expected %s", formatNodeSelector(cc.result.NodeSelector), formatNodeSelector(want))
	}
}

func (cc *claimCheck) expectedNodeSelector() *v1.NodeSelector {
	var term v1.NodeSelectorTerm
	for _, d := range cc.devs {
		if d == nil {
			continue
		}
		nodeName, sel := d.slice.Spec.NodeName, d.slice.Spec.NodeSelector
		if ptr.Deref(d.slice.Spec.PerDeviceNodeSelection, false) {
			nodeName, sel = d.dev.NodeName, d.dev.NodeSelector
		}
		if nodeName != nil || ptr.Deref(d.dev.BindsToNode, false) {
			return &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{cc.in.Node.Name}}},
			}}}
		}
		if sel != nil && len(sel.NodeSelectorTerms) == 1 {
			term.MatchFields = addRequirements(term.MatchFields, sel.NodeSelectorTerms[0].MatchFields)
			term.MatchExpressions = addRequirements(term.MatchExpressions, sel.NodeSelectorTerms[0].MatchExpressions)
		}
	}
	if len(term.MatchFields) == 0 && len(term.MatchExpressions) == 0 {
		return nil
	}
	return &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{term}}
}

func addRequirements(to, from []v1.NodeSelectorRequirement) []v1.NodeSelectorRequirement {
	for _, r := range from {
		if !slices.ContainsFunc(to, func(x v1.NodeSelectorRequirement) bool { return sameRequirement(x, r) }) {
			to = append(to, r)
		}
	}
	return to
}

// sameRequirement compares key, operator and the set of values, as Kubernetes does when it merges selectors.
func sameRequirement(a, b v1.NodeSelectorRequirement) bool {
	if a.Key != b.Key || a.Operator != b.Operator {
		return false
	}
	in := func(x string, s []string) bool { return slices.Contains(s, x) }
	for _, v := range a.Values {
		if !in(v, b.Values) {
			return false
		}
	}
	for _, v := range b.Values {
		if !in(v, a.Values) {
			return false
		}
	}
	return true
}

func formatNodeSelector(ns *v1.NodeSelector) string {
	if ns == nil {
		return "none"
	}
	var terms []string
	for _, t := range ns.NodeSelectorTerms {
		var reqs []string
		for _, r := range t.MatchFields {
			reqs = append(reqs, fmt.Sprintf("field %s %s %v", r.Key, r.Operator, r.Values))
		}
		for _, r := range t.MatchExpressions {
			reqs = append(reqs, fmt.Sprintf("label %s %s %v", r.Key, r.Operator, r.Values))
		}
		terms = append(terms, "{"+strings.Join(reqs, ", ")+"}")
	}
	return strings.Join(terms, " or ")
}
