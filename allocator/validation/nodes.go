package validation

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var nodeSelectorOperators = []v1.NodeSelectorOperator{v1.NodeSelectorOpIn, v1.NodeSelectorOpNotIn,
	v1.NodeSelectorOpExists, v1.NodeSelectorOpDoesNotExist, v1.NodeSelectorOpGt, v1.NodeSelectorOpLt}

// nodeSelector is corevalidation.ValidateNodeSelector (with label values checked, as for new objects): at
// least one term; each requirement a known operator with the values it needs, its key a label name, its
// values label values; field requirements only on metadata.name, with In or NotIn and one value. A term
// without requirements is valid (it matches no node).
func nodeSelector(p *field.Path, ns *v1.NodeSelector) field.ErrorList {
	terms := p.Child("nodeSelectorTerms")
	if len(ns.NodeSelectorTerms) == 0 {
		return field.ErrorList{field.Required(terms, "must have at least one node selector term")}
	}
	var errs field.ErrorList
	for i, term := range ns.NodeSelectorTerms {
		tp := terms.Index(i)
		for j, req := range term.MatchExpressions {
			errs = append(errs, nodeSelectorRequirement(tp.Child("matchExpressions").Index(j), req)...)
		}
		for j, req := range term.MatchFields {
			errs = append(errs, nodeFieldRequirement(tp.Child("matchFields").Index(j), req)...)
		}
	}
	return errs
}

func nodeSelectorRequirement(p *field.Path, req v1.NodeSelectorRequirement) field.ErrorList {
	var errs field.ErrorList
	switch req.Operator {
	case v1.NodeSelectorOpIn, v1.NodeSelectorOpNotIn:
		if len(req.Values) == 0 {
			errs = append(errs, field.Required(p.Child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
		}
	case v1.NodeSelectorOpExists, v1.NodeSelectorOpDoesNotExist:
		if len(req.Values) > 0 {
			errs = append(errs, field.Forbidden(p.Child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
		}
	case v1.NodeSelectorOpGt, v1.NodeSelectorOpLt:
		if len(req.Values) != 1 {
			errs = append(errs, field.Required(p.Child("values"), "must be specified single value when `operator` is 'Lt' or 'Gt'"))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("operator"), req.Operator, nodeSelectorOperators))
	}
	errs = append(errs, labelName(p.Child("key"), req.Key)...)
	for i, v := range req.Values {
		errs = append(errs, labelValue(p.Child("values").Index(i), v)...)
	}
	return errs
}

func nodeFieldRequirement(p *field.Path, req v1.NodeSelectorRequirement) field.ErrorList {
	var errs field.ErrorList
	switch req.Operator {
	case v1.NodeSelectorOpIn, v1.NodeSelectorOpNotIn:
		if len(req.Values) != 1 {
			errs = append(errs, field.Required(p.Child("values"), "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
		}
	default:
		errs = append(errs, field.Invalid(p.Child("operator"), req.Operator, "not a valid selector operator"))
	}
	// As the API server: metadata.name is the only field a node selector may match.
	if req.Key != "metadata.name" {
		return append(errs, field.Invalid(p.Child("key"), req.Key, "not a valid field selector key"))
	}
	for i, v := range req.Values {
		errs = append(errs, dnsSubdomain(p.Child("values").Index(i), v)...)
	}
	return errs
}

var taintEffects = []resourceapi.DeviceTaintEffect{resourceapi.DeviceTaintEffectNoExecute, resourceapi.DeviceTaintEffectNoSchedule, resourceapi.DeviceTaintEffectNone}

// taint: the key a label name, the value (when set) a label value, the effect None, NoSchedule or
// NoExecute.
func taint(p *field.Path, t resourceapi.DeviceTaint) field.ErrorList {
	errs := labelName(p.Child("key"), t.Key)
	if t.Value != "" {
		errs = append(errs, labelValue(p.Child("value"), t.Value)...)
	}
	switch t.Effect {
	case resourceapi.DeviceTaintEffectNone, resourceapi.DeviceTaintEffectNoSchedule, resourceapi.DeviceTaintEffectNoExecute:
	case "":
		errs = append(errs, field.Required(p.Child("effect"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect, taintEffects))
	}
	return errs
}

// toleration: the key (when set) a label name; operator Exists without value or Equal with a label
// value; the effect empty or a taint effect.
func toleration(p *field.Path, t resourceapi.DeviceToleration) field.ErrorList {
	var errs field.ErrorList
	if t.Key != "" {
		errs = append(errs, labelName(p.Child("key"), t.Key)...)
	}
	switch t.Operator {
	case resourceapi.DeviceTolerationOpExists:
		if t.Value != "" {
			errs = append(errs, field.Invalid(p.Child("value"), t.Value, "must be empty for operator `Exists`"))
		}
	case resourceapi.DeviceTolerationOpEqual:
		errs = append(errs, labelValue(p.Child("value"), t.Value)...)
	case "":
		errs = append(errs, field.Required(p.Child("operator"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("operator"), t.Operator,
			[]resourceapi.DeviceTolerationOperator{resourceapi.DeviceTolerationOpEqual, resourceapi.DeviceTolerationOpExists}))
	}
	switch t.Effect {
	case "", resourceapi.DeviceTaintEffectNone, resourceapi.DeviceTaintEffectNoSchedule, resourceapi.DeviceTaintEffectNoExecute:
	default:
		errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect, taintEffects))
	}
	return errs
}

func tolerations(p *field.Path, ts []resourceapi.DeviceToleration) field.ErrorList {
	if len(ts) > resourceapi.DeviceTolerationsMaxLength {
		return field.ErrorList{field.TooMany(p, len(ts), resourceapi.DeviceTolerationsMaxLength)}
	}
	var errs field.ErrorList
	for i, t := range ts {
		errs = append(errs, toleration(p.Index(i), t)...)
	}
	return errs
}

// bindingConditions: at most 4 of each, label names, no duplicates, no overlap, and both or neither.
func bindingConditions(p *field.Path, conds, failures []string) field.ErrorList {
	var errs field.ErrorList
	cp, fp := p.Child("bindingConditions"), p.Child("bindingFailureConditions")
	if len(conds) > resourceapi.BindingConditionsMaxSize {
		errs = append(errs, field.TooMany(cp, len(conds), resourceapi.BindingConditionsMaxSize))
	} else {
		for i, c := range conds {
			errs = append(errs, labelName(cp.Index(i), c)...)
		}
	}
	if len(failures) > resourceapi.BindingFailureConditionsMaxSize {
		errs = append(errs, field.TooMany(fp, len(failures), resourceapi.BindingFailureConditionsMaxSize))
	} else {
		for i, c := range failures {
			errs = append(errs, labelName(fp.Index(i), c)...)
		}
	}
	seen := map[string]bool{}
	for i, c := range conds {
		if seen[c] {
			errs = append(errs, field.Duplicate(cp.Index(i), c))
		}
		seen[c] = true
	}
	seenFailure := map[string]bool{}
	for i, c := range failures {
		if seenFailure[c] {
			errs = append(errs, field.Duplicate(fp.Index(i), c))
		}
		seenFailure[c] = true
		if seen[c] {
			errs = append(errs, field.Invalid(fp.Index(i), c, "bindingFailureConditions must not overlap with bindingConditions"))
		}
	}
	switch {
	case len(conds) == 0 && len(failures) > 0:
		errs = append(errs, field.Invalid(cp, conds, "bindingConditions are required to use bindingFailureConditions"))
	case len(failures) == 0 && len(conds) > 0:
		errs = append(errs, field.Invalid(fp, failures, "bindingFailureConditions are required to use bindingConditions"))
	}
	return errs
}

// nodeSelection checks the node selection fields of a slice (perDevice false) or of a device in a slice
// with perDeviceNodeSelection: exactly one of them, each well formed.
func nodeName(p *field.Path, name *string) (set bool, errs field.ErrorList) {
	if name == nil {
		return false, nil
	}
	if *name == "" {
		return false, field.ErrorList{field.Invalid(p, "", "must be either unset or set to a non-empty string")}
	}
	return true, dnsSubdomain(p, *name)
}

func trueOrUnset(p *field.Path, b *bool) (set bool, errs field.ErrorList) {
	if b == nil {
		return false, nil
	}
	if !*b {
		return false, field.ErrorList{field.Invalid(p, false, "must be either unset or set to true")}
	}
	return true, nil
}

func exactlyOne(p *field.Path, set []string, msg string) field.ErrorList {
	switch len(set) {
	case 0:
		return field.ErrorList{field.Required(p, msg)}
	case 1:
		return nil
	}
	return field.ErrorList{field.Invalid(p, fmt.Sprint(set), msg+", but multiple fields are set")}
}
