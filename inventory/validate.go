package inventory

import (
	"fmt"
	"strings"

	"github.com/blang/semver/v4"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateSlice checks one ResourceSlice against the limits and formats of
// resource.k8s.io/v1 that can be checked without the rest of its pool: names,
// exactly one node selection, devices or counters but not both, devices per
// slice (128, or 64 when any device has taints, consumes counters or has list
// attributes), counter sets per slice and counters per set, attributes plus
// capacities per device, attribute values, versions, taints and counter
// consumptions. Every error names the field. It works for any driver's slice,
// not only those built by this package, and does not modify the slice.
func ValidateSlice(s *resourceapi.ResourceSlice) field.ErrorList {
	var errs field.ErrorList
	if s == nil {
		return field.ErrorList{field.Required(field.NewPath(""), "resource slice must not be nil")}
	}
	if s.Name != "" {
		for _, msg := range validation.IsDNS1123Subdomain(s.Name) {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), s.Name, msg))
		}
	}
	spec := field.NewPath("spec")
	errs = append(errs, validateDriver(spec.Child("driver"), s.Spec.Driver)...)
	errs = append(errs, validatePoolRef(spec.Child("pool"), s.Spec.Pool)...)

	selections := 0
	if s.Spec.NodeName != nil {
		selections++
		if *s.Spec.NodeName == "" {
			errs = append(errs, field.Invalid(spec.Child("nodeName"), "", "must not be empty when set"))
		}
	}
	if s.Spec.NodeSelector != nil {
		selections++
		if len(s.Spec.NodeSelector.NodeSelectorTerms) != 1 {
			errs = append(errs, field.Invalid(spec.Child("nodeSelector", "nodeSelectorTerms"), len(s.Spec.NodeSelector.NodeSelectorTerms), "must have exactly one term"))
		}
	}
	if s.Spec.AllNodes != nil && *s.Spec.AllNodes {
		selections++
	}
	perDevice := s.Spec.PerDeviceNodeSelection != nil && *s.Spec.PerDeviceNodeSelection
	if perDevice {
		selections++
	}
	if selections != 1 {
		errs = append(errs, field.Invalid(spec, selections, "exactly one of nodeName, nodeSelector, allNodes and perDeviceNodeSelection must be set"))
	}
	if len(s.Spec.Devices) > 0 && len(s.Spec.SharedCounters) > 0 {
		errs = append(errs, field.Forbidden(spec.Child("sharedCounters"), "devices and sharedCounters must be in separate slices"))
	}

	devs := spec.Child("devices")
	if n, limit := len(s.Spec.Devices), deviceLimit(s.Spec.Devices); n > limit {
		msg := fmt.Sprintf("must have at most %d devices", limit)
		if limit == resourceapi.ResourceSliceMaxDevicesWithAdvancedFeatures {
			msg += " because some device has taints, consumes counters or has list attributes"
		}
		errs = append(errs, field.Invalid(devs, n, msg))
	}
	names := map[string]bool{}
	for i := range s.Spec.Devices {
		d := &s.Spec.Devices[i]
		p := devs.Index(i)
		if names[d.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), d.Name))
		}
		names[d.Name] = true
		errs = append(errs, validateDevice(p, d, perDevice)...)
	}

	sets := spec.Child("sharedCounters")
	if n := len(s.Spec.SharedCounters); n > resourceapi.ResourceSliceMaxCounterSets {
		errs = append(errs, field.TooMany(sets, n, resourceapi.ResourceSliceMaxCounterSets))
	}
	setNames := map[string]bool{}
	for i, cs := range s.Spec.SharedCounters {
		p := sets.Index(i)
		errs = append(errs, dnsLabel(p.Child("name"), cs.Name)...)
		if setNames[cs.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), cs.Name))
		}
		setNames[cs.Name] = true
		if len(cs.Counters) == 0 {
			errs = append(errs, field.Required(p.Child("counters"), "a counter set needs at least one counter"))
		}
		errs = append(errs, validateCounters(p.Child("counters"), cs.Counters, resourceapi.ResourceSliceMaxCountersPerCounterSet)...)
	}
	return errs
}

func validateDriver(p *field.Path, driver string) field.ErrorList {
	var errs field.ErrorList
	if driver == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	if len(driver) > resourceapi.DriverNameMaxLength {
		errs = append(errs, field.TooLong(p, driver, resourceapi.DriverNameMaxLength))
	}
	for _, msg := range validation.IsDNS1123Subdomain(driver) {
		errs = append(errs, field.Invalid(p, driver, msg))
	}
	return errs
}

func validatePoolRef(p *field.Path, pool resourceapi.ResourcePool) field.ErrorList {
	var errs field.ErrorList
	name := p.Child("name")
	switch {
	case pool.Name == "":
		errs = append(errs, field.Required(name, ""))
	case len(pool.Name) > resourceapi.PoolNameMaxLength:
		errs = append(errs, field.TooLong(name, pool.Name, resourceapi.PoolNameMaxLength))
	default:
		for _, part := range strings.Split(pool.Name, "/") {
			for _, msg := range validation.IsDNS1123Subdomain(part) {
				errs = append(errs, field.Invalid(name, pool.Name, msg))
			}
		}
	}
	if pool.Generation < 0 {
		errs = append(errs, field.Invalid(p.Child("generation"), pool.Generation, "must be greater than or equal to 0"))
	}
	if pool.ResourceSliceCount <= 0 {
		errs = append(errs, field.Invalid(p.Child("resourceSliceCount"), pool.ResourceSliceCount, "must be greater than zero"))
	}
	return errs
}

func validateDevice(p *field.Path, d *resourceapi.Device, perDevice bool) field.ErrorList {
	errs := dnsLabel(p.Child("name"), d.Name)
	if n := len(d.Attributes) + len(d.Capacity); n > resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice {
		errs = append(errs, field.Invalid(p.Child("attributes"), n, fmt.Sprintf("must have at most %d attributes and capacities together", resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice)))
	}
	values := 0
	for _, name := range sortedKeys(d.Attributes) {
		ap := p.Child("attributes").Key(string(name))
		errs = append(errs, qualifiedName(ap, name)...)
		a := d.Attributes[name]
		n, aerrs := validateAttribute(ap, a)
		values += n
		errs = append(errs, aerrs...)
	}
	if values > resourceapi.ResourceSliceMaxAttributeValuesPerDevice {
		errs = append(errs, field.Invalid(p.Child("attributes"), values, fmt.Sprintf("must have at most %d attribute values together", resourceapi.ResourceSliceMaxAttributeValuesPerDevice)))
	}
	for _, name := range sortedKeys(d.Capacity) {
		cp := p.Child("capacity").Key(string(name))
		errs = append(errs, qualifiedName(cp, name)...)
		if v := d.Capacity[name].Value; v.Sign() < 0 {
			errs = append(errs, field.Invalid(cp.Child("value"), v.String(), "must not be negative"))
		}
	}
	tp := p.Child("taints")
	if n := len(d.Taints); n > resourceapi.DeviceTaintsMaxLength {
		errs = append(errs, field.TooMany(tp, n, resourceapi.DeviceTaintsMaxLength))
	}
	for i, t := range d.Taints {
		errs = append(errs, ValidateTaint(tp.Index(i), t)...)
	}
	cp := p.Child("consumesCounters")
	if n := len(d.ConsumesCounters); n > resourceapi.ResourceSliceMaxDeviceCounterConsumptionsPerDevice {
		errs = append(errs, field.TooMany(cp, n, resourceapi.ResourceSliceMaxDeviceCounterConsumptionsPerDevice))
	}
	seen := map[string]bool{}
	for i, c := range d.ConsumesCounters {
		ip := cp.Index(i)
		errs = append(errs, dnsLabel(ip.Child("counterSet"), c.CounterSet)...)
		if seen[c.CounterSet] {
			errs = append(errs, field.Duplicate(ip.Child("counterSet"), c.CounterSet))
		}
		seen[c.CounterSet] = true
		errs = append(errs, validateCounters(ip.Child("counters"), c.Counters, resourceapi.ResourceSliceMaxCountersPerDeviceCounterConsumption)...)
		gp := ip.Child("compatibilityGroups")
		if n := len(c.CompatibilityGroups); n > resourceapi.DeviceCompatibilityGroupsMaxSize {
			errs = append(errs, field.TooMany(gp, n, resourceapi.DeviceCompatibilityGroupsMaxSize))
		}
		groups := map[string]bool{}
		for j, g := range c.CompatibilityGroups {
			if groups[g] {
				errs = append(errs, field.Duplicate(gp.Index(j), g))
			}
			groups[g] = true
		}
	}
	for _, bc := range []struct {
		name  string
		conds []string
		limit int
	}{
		{"bindingConditions", d.BindingConditions, resourceapi.BindingConditionsMaxSize},
		{"bindingFailureConditions", d.BindingFailureConditions, resourceapi.BindingFailureConditionsMaxSize},
	} {
		if n := len(bc.conds); n > bc.limit {
			errs = append(errs, field.TooMany(p.Child(bc.name), n, bc.limit))
		}
	}
	selections := 0
	if d.NodeName != nil {
		selections++
	}
	if d.NodeSelector != nil {
		selections++
	}
	if d.AllNodes != nil && *d.AllNodes {
		selections++
	}
	switch {
	case perDevice && selections != 1:
		errs = append(errs, field.Invalid(p, selections, "exactly one of nodeName, nodeSelector and allNodes must be set when perDeviceNodeSelection is true"))
	case !perDevice && selections != 0:
		errs = append(errs, field.Forbidden(p.Child("nodeName"), "node selection per device needs spec.perDeviceNodeSelection"))
	}
	return errs
}

// validateAttribute checks that exactly one value is set and returns how
// many values the attribute holds.
func validateAttribute(p *field.Path, a resourceapi.DeviceAttribute) (int, field.ErrorList) {
	var errs field.ErrorList
	set, values := 0, 0
	if a.IntValue != nil {
		set, values = set+1, values+1
	}
	if a.BoolValue != nil {
		set, values = set+1, values+1
	}
	if a.StringValue != nil {
		set, values = set+1, values+1
		errs = append(errs, stringValue(p.Child("string"), *a.StringValue)...)
	}
	if a.VersionValue != nil {
		set, values = set+1, values+1
		errs = append(errs, versionValue(p.Child("version"), *a.VersionValue)...)
	}
	list := func(n int, name string) {
		if n == 0 {
			return
		}
		set, values = set+1, values+n
	}
	list(len(a.IntValues), "ints")
	list(len(a.BoolValues), "bools")
	list(len(a.StringValues), "strings")
	list(len(a.VersionValues), "versions")
	for i, v := range a.StringValues {
		errs = append(errs, stringValue(p.Child("strings").Index(i), v)...)
	}
	for i, v := range a.VersionValues {
		errs = append(errs, versionValue(p.Child("versions").Index(i), v)...)
	}
	if set != 1 {
		errs = append(errs, field.Invalid(p, set, "exactly one value must be specified"))
	}
	return values, errs
}

func stringValue(p *field.Path, v string) field.ErrorList {
	if len(v) > resourceapi.DeviceAttributeMaxValueLength {
		return field.ErrorList{field.TooLong(p, v, resourceapi.DeviceAttributeMaxValueLength)}
	}
	return nil
}

func versionValue(p *field.Path, v string) field.ErrorList {
	var errs field.ErrorList
	if _, err := semver.Parse(v); err != nil {
		errs = append(errs, field.Invalid(p, v, "must be a strict semantic version (semver.org 2.0.0): "+err.Error()))
	}
	if len(v) > resourceapi.DeviceAttributeMaxValueLength {
		errs = append(errs, field.TooLong(p, v, resourceapi.DeviceAttributeMaxValueLength))
	}
	return errs
}

// qualifiedName checks an attribute or capacity name: a C identifier of at
// most 32 characters, optionally after a DNS subdomain of at most 63 and "/".
func qualifiedName(p *field.Path, name resourceapi.QualifiedName) field.ErrorList {
	var errs field.ErrorList
	s := string(name)
	id := s
	if i := strings.Index(s, "/"); i >= 0 {
		domain := s[:i]
		id = s[i+1:]
		if domain == "" {
			errs = append(errs, field.Invalid(p, s, "domain before '/' must not be empty"))
		} else {
			if len(domain) > resourceapi.DeviceMaxDomainLength {
				errs = append(errs, field.TooLong(p, domain, resourceapi.DeviceMaxDomainLength))
			}
			for _, msg := range validation.IsDNS1123Subdomain(domain) {
				errs = append(errs, field.Invalid(p, s, "domain: "+msg))
			}
		}
	}
	if id == "" {
		return append(errs, field.Required(p, "name must not be empty"))
	}
	if len(id) > resourceapi.DeviceMaxIDLength {
		errs = append(errs, field.TooLong(p, id, resourceapi.DeviceMaxIDLength))
	}
	for _, msg := range validation.IsCIdentifier(id) {
		errs = append(errs, field.Invalid(p, s, msg))
	}
	return errs
}

// ValidateTaint checks a device taint: the key must be a label name, the value
// a label value, and the effect None, NoSchedule or NoExecute.
func ValidateTaint(p *field.Path, t resourceapi.DeviceTaint) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(t.Key) {
		errs = append(errs, field.Invalid(p.Child("key"), t.Key, msg))
	}
	for _, msg := range validation.IsValidLabelValue(t.Value) {
		errs = append(errs, field.Invalid(p.Child("value"), t.Value, msg))
	}
	switch t.Effect {
	case resourceapi.DeviceTaintEffectNone, resourceapi.DeviceTaintEffectNoSchedule, resourceapi.DeviceTaintEffectNoExecute:
	case "":
		errs = append(errs, field.Required(p.Child("effect"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect, []resourceapi.DeviceTaintEffect{
			resourceapi.DeviceTaintEffectNone, resourceapi.DeviceTaintEffectNoSchedule, resourceapi.DeviceTaintEffectNoExecute}))
	}
	return errs
}

func validateCounters(p *field.Path, counters map[string]resourceapi.Counter, limit int) field.ErrorList {
	var errs field.ErrorList
	if len(counters) > limit {
		errs = append(errs, field.TooMany(p, len(counters), limit))
	}
	for _, name := range sortedKeys(counters) {
		errs = append(errs, dnsLabel(p.Key(name), name)...)
		if v := counters[name].Value; v.Sign() < 0 {
			errs = append(errs, field.Invalid(p.Key(name).Child("value"), v.String(), "must not be negative"))
		}
	}
	return errs
}

func dnsLabel(p *field.Path, s string) field.ErrorList {
	var errs field.ErrorList
	if s == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	for _, msg := range validation.IsDNS1123Label(s) {
		errs = append(errs, field.Invalid(p, s, msg))
	}
	return errs
}

// ValidatePool checks what only the whole pool shows: all slices name the same
// driver, pool, generation and slice count, the count matches, device names
// and counter set names are unique in the pool, and every counter a device
// consumes exists in a counter set of the pool with at least that value.
// Errors name the slice by index in the argument and the field.
func ValidatePool(slices []*resourceapi.ResourceSlice) field.ErrorList {
	var errs field.ErrorList
	if len(slices) == 0 {
		return nil
	}
	first := slices[0]
	sets := map[string]map[string]resourceapi.Counter{}
	devices := map[string]string{}
	for i, s := range slices {
		p := field.NewPath("slices").Index(i).Child("spec")
		if s == nil {
			errs = append(errs, field.Required(field.NewPath("slices").Index(i), "must not be nil"))
			continue
		}
		if s.Spec.Driver != first.Spec.Driver {
			errs = append(errs, field.Invalid(p.Child("driver"), s.Spec.Driver, fmt.Sprintf("differs from slice 0 (%q)", first.Spec.Driver)))
		}
		if s.Spec.Pool.Name != first.Spec.Pool.Name {
			errs = append(errs, field.Invalid(p.Child("pool", "name"), s.Spec.Pool.Name, fmt.Sprintf("differs from slice 0 (%q)", first.Spec.Pool.Name)))
		}
		if s.Spec.Pool.Generation != first.Spec.Pool.Generation {
			errs = append(errs, field.Invalid(p.Child("pool", "generation"), s.Spec.Pool.Generation, fmt.Sprintf("differs from slice 0 (%d)", first.Spec.Pool.Generation)))
		}
		if s.Spec.Pool.ResourceSliceCount != int64(len(slices)) {
			errs = append(errs, field.Invalid(p.Child("pool", "resourceSliceCount"), s.Spec.Pool.ResourceSliceCount, fmt.Sprintf("the pool has %d slices", len(slices))))
		}
		for j, cs := range s.Spec.SharedCounters {
			if _, dup := sets[cs.Name]; dup {
				errs = append(errs, field.Duplicate(p.Child("sharedCounters").Index(j).Child("name"), cs.Name))
				continue
			}
			sets[cs.Name] = cs.Counters
		}
		for j := range s.Spec.Devices {
			name := s.Spec.Devices[j].Name
			if prev, dup := devices[name]; dup {
				errs = append(errs, field.Invalid(p.Child("devices").Index(j).Child("name"), name, "duplicate device name in the pool, also at "+prev))
				continue
			}
			devices[name] = p.Child("devices").Index(j).String()
		}
	}
	for i, s := range slices {
		if s == nil {
			continue
		}
		for j := range s.Spec.Devices {
			for k, c := range s.Spec.Devices[j].ConsumesCounters {
				p := field.NewPath("slices").Index(i).Child("spec", "devices").Index(j).Child("consumesCounters").Index(k)
				set, ok := sets[c.CounterSet]
				if !ok {
					errs = append(errs, field.NotFound(p.Child("counterSet"), c.CounterSet))
					continue
				}
				for _, name := range sortedKeys(c.Counters) {
					have, ok := set[name]
					if !ok {
						errs = append(errs, field.NotFound(p.Child("counters").Key(name), name))
						continue
					}
					want := c.Counters[name].Value
					if want.Cmp(have.Value) > 0 {
						errs = append(errs, field.Invalid(p.Child("counters").Key(name), want.String(), fmt.Sprintf("exceeds the counter set's %s", have.Value.String())))
					}
				}
			}
		}
	}
	return errs
}
