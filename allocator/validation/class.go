package validation

import (
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// DeviceClass validates a DeviceClass as kube-apiserver 1.37 does on create (ValidateDeviceClass): its
// name a DNS subdomain; at most 32 selectors, each a CEL expression that compiles as a new expression and
// whose estimated worst-case cost is within resourceapi.CELSelectorExpressionMaxCost; at most 32 config
// entries with an opaque driver configuration that is a JSON object of at most 10 KiB; an
// extendedResourceName, when set, that is a valid extended resource name.
func DeviceClass(class *resourceapi.DeviceClass, opts Options) field.ErrorList {
	if class == nil {
		return field.ErrorList{field.Required(field.NewPath(""), "the object must not be nil")}
	}
	errs := objectMeta(&class.ObjectMeta, false)
	p := field.NewPath("spec")
	errs = append(errs, selectorList(p.Child("selectors"), class.Spec.Selectors, opts)...)
	cp := p.Child("config")
	if len(class.Spec.Config) > resourceapi.DeviceConfigMaxSize {
		errs = append(errs, field.TooMany(cp, len(class.Spec.Config), resourceapi.DeviceConfigMaxSize))
	} else {
		for i, c := range class.Spec.Config {
			errs = append(errs, deviceConfig(cp.Index(i), c.DeviceConfiguration)...)
		}
	}
	if n := class.Spec.ExtendedResourceName; n != nil && !extendedResourceName(*n) {
		errs = append(errs, field.Invalid(p.Child("extendedResourceName"), *n, "must be a valid extended resource name"))
	}
	return errs
}

// DeviceTaintRule validates a DeviceTaintRule as kube-apiserver 1.37 does on create
// (ValidateDeviceTaintRule): its name a DNS subdomain; the device selector's driver, pool and device, when
// set, valid names; the taint's key a label name, its value a label value and its effect None, NoSchedule
// or NoExecute. opts is not used today; it is there so that every kind is validated alike.
func DeviceTaintRule(rule *resourceapi.DeviceTaintRule, opts Options) field.ErrorList {
	if rule == nil {
		return field.ErrorList{field.Required(field.NewPath(""), "the object must not be nil")}
	}
	errs := objectMeta(&rule.ObjectMeta, false)
	p := field.NewPath("spec")
	if s := rule.Spec.DeviceSelector; s != nil {
		sp := p.Child("deviceSelector")
		if s.Driver != nil {
			errs = append(errs, driverName(sp.Child("driver"), *s.Driver)...)
		}
		if s.Pool != nil {
			errs = append(errs, poolName(sp.Child("pool"), *s.Pool)...)
		}
		if s.Device != nil {
			errs = append(errs, dnsLabel(sp.Child("device"), *s.Device)...)
		}
	}
	errs = append(errs, taint(p.Child("taint"), rule.Spec.Taint)...)
	return errs
}

// Taint validates one device taint t at path p (the key a label name, required; the value a label value;
// the effect None, NoSchedule or NoExecute), as the API server validates the taints of slices and rules.
// The object comes first and its path second, as in Kubernetes' validation functions.
func Taint(t resourceapi.DeviceTaint, p *field.Path) field.ErrorList { return taint(p, t) }
