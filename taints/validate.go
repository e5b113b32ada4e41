package taints

import (
	"fmt"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateTaint checks one taint against the API: the key must be a label name (a qualified name), the
// value a label value, and the effect one of None, NoSchedule, NoExecute. Stored objects may carry effects
// added by later Kubernetes versions; consumers treat those like None, but new taints must use a known one.
func ValidateTaint(taint resourceapi.DeviceTaint, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if taint.Key == "" {
		errs = append(errs, field.Required(path.Child("key"), ""))
	}
	for _, msg := range validation.IsQualifiedName(taint.Key) {
		if taint.Key == "" {
			break
		}
		errs = append(errs, field.Invalid(path.Child("key"), taint.Key, msg))
	}
	for _, msg := range validation.IsValidLabelValue(taint.Value) {
		errs = append(errs, field.Invalid(path.Child("value"), taint.Value, msg))
	}
	switch taint.Effect {
	case resourceapi.DeviceTaintEffectNone, resourceapi.DeviceTaintEffectNoSchedule, resourceapi.DeviceTaintEffectNoExecute:
	case "":
		errs = append(errs, field.Required(path.Child("effect"), ""))
	default:
		errs = append(errs, field.NotSupported(path.Child("effect"), taint.Effect, []resourceapi.DeviceTaintEffect{
			resourceapi.DeviceTaintEffectNone, resourceapi.DeviceTaintEffectNoSchedule, resourceapi.DeviceTaintEffectNoExecute}))
	}
	return errs
}

// ValidateTaints checks the taints of one device: each with [ValidateTaint], and at most
// resourceapi.DeviceTaintsMaxLength (16) of them. path is the device's taints field, for example
// field.NewPath("spec", "devices").Index(3).Child("taints").
func ValidateTaints(taints []resourceapi.DeviceTaint, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(taints) > resourceapi.DeviceTaintsMaxLength {
		errs = append(errs, field.TooMany(path, len(taints), resourceapi.DeviceTaintsMaxLength))
	}
	for i, t := range taints {
		errs = append(errs, ValidateTaint(t, path.Index(i))...)
	}
	return errs
}

// ValidateToleration checks one toleration against the API: the key a label name; an empty key only with
// operator Exists; operator Equal or Exists; with Exists no value; the value a label value; the effect empty,
// NoSchedule or NoExecute.
func ValidateToleration(tol resourceapi.DeviceToleration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if tol.Key != "" {
		for _, msg := range validation.IsQualifiedName(tol.Key) {
			errs = append(errs, field.Invalid(path.Child("key"), tol.Key, msg))
		}
	}
	switch tol.Operator {
	case "", resourceapi.DeviceTolerationOpEqual:
		if tol.Key == "" {
			errs = append(errs, field.Invalid(path.Child("operator"), tol.Operator, "must be Exists when key is empty"))
		}
		for _, msg := range validation.IsValidLabelValue(tol.Value) {
			errs = append(errs, field.Invalid(path.Child("value"), tol.Value, msg))
		}
	case resourceapi.DeviceTolerationOpExists:
		if tol.Value != "" {
			errs = append(errs, field.Invalid(path.Child("value"), tol.Value, "must be empty when operator is Exists"))
		}
	default:
		errs = append(errs, field.NotSupported(path.Child("operator"), tol.Operator, []resourceapi.DeviceTolerationOperator{
			resourceapi.DeviceTolerationOpEqual, resourceapi.DeviceTolerationOpExists}))
	}
	switch tol.Effect {
	case "", resourceapi.DeviceTaintEffectNoSchedule, resourceapi.DeviceTaintEffectNoExecute:
	default:
		errs = append(errs, field.NotSupported(path.Child("effect"), tol.Effect, []resourceapi.DeviceTaintEffect{
			resourceapi.DeviceTaintEffectNoSchedule, resourceapi.DeviceTaintEffectNoExecute}))
	}
	return errs
}

// ValidateRule checks a DeviceTaintRule against the API: a name, the selector's driver (a DNS subdomain of at
// most 63 characters), pool (DNS subdomains separated by slashes, at most 253 characters) and device (a DNS
// label), and the taint ([ValidateTaint]).
func ValidateRule(rule *resourceapi.DeviceTaintRule) field.ErrorList {
	var errs field.ErrorList
	if rule == nil {
		return field.ErrorList{field.Required(field.NewPath(""), "DeviceTaintRule is nil")}
	}
	if rule.Name == "" {
		errs = append(errs, field.Required(field.NewPath("metadata", "name"), ""))
	}
	spec := field.NewPath("spec")
	if sel := rule.Spec.DeviceSelector; sel != nil {
		p := spec.Child("deviceSelector")
		if sel.Driver != nil {
			d := *sel.Driver
			if len(d) > resourceapi.DriverNameMaxLength {
				errs = append(errs, field.TooLong(p.Child("driver"), d, resourceapi.DriverNameMaxLength))
			}
			for _, msg := range validation.IsDNS1123Subdomain(strings.ToLower(d)) {
				errs = append(errs, field.Invalid(p.Child("driver"), d, msg))
			}
		}
		if sel.Pool != nil {
			errs = append(errs, validatePoolName(*sel.Pool, p.Child("pool"))...)
		}
		if sel.Device != nil {
			for _, msg := range validation.IsDNS1123Label(*sel.Device) {
				errs = append(errs, field.Invalid(p.Child("device"), *sel.Device, msg))
			}
		}
	}
	errs = append(errs, ValidateTaint(rule.Spec.Taint, spec.Child("taint"))...)
	return errs
}

func validatePoolName(name string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		return append(errs, field.Required(path, ""))
	}
	if len(name) > resourceapi.PoolNameMaxLength {
		errs = append(errs, field.TooLong(path, name, resourceapi.PoolNameMaxLength))
	}
	for _, part := range strings.Split(name, "/") {
		for _, msg := range validation.IsDNS1123Subdomain(part) {
			errs = append(errs, field.Invalid(path, name, fmt.Sprintf("segment %q: %s", part, msg)))
		}
	}
	return errs
}
