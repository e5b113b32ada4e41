package validation

import (
	"fmt"
	"math"
	"regexp"
	"sort"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dralloc/dralloc/allocator/gates"
)

// ResourceSlice validates a ResourceSlice as kube-apiserver 1.37 does on create (ValidateResourceSlice):
// metadata; driver and pool; exactly one of nodeName, nodeSelector (with exactly one term), allNodes and
// perDeviceNodeSelection; devices or sharedCounters, not both; at most 128 devices (64 when a device has
// taints, consumes counters or has list attributes) with unique names; per device at most 32 attributes
// and capacities together and 48 attribute values, well-formed names and exactly one value per attribute,
// capacity request policies only with allowMultipleAllocations and consistent with the capacity, at most
// 16 taints, at most 2 counter consumptions, node selection only with perDeviceNodeSelection, binding
// conditions; at most 8 counter sets of at most 32 counters; partitionTypeAttribute and
// skipNodeOperations. In addition every quantity must pass capacity.ValidateQuantity, and capacity values
// and counters must not be negative. The slice is not modified.
func ResourceSlice(slice *resourceapi.ResourceSlice, opts Options) field.ErrorList {
	if slice == nil {
		return field.ErrorList{field.Required(field.NewPath(""), "the object must not be nil")}
	}
	errs := objectMeta(&slice.ObjectMeta, false)
	spec := &slice.Spec
	p := field.NewPath("spec")
	errs = append(errs, driverName(p.Child("driver"), spec.Driver)...)
	errs = append(errs, poolName(p.Child("pool", "name"), spec.Pool.Name)...)
	if spec.Pool.ResourceSliceCount <= 0 {
		errs = append(errs, field.Invalid(p.Child("pool", "resourceSliceCount"), spec.Pool.ResourceSliceCount, "must be greater than zero"))
	}
	if spec.Pool.Generation < 0 {
		errs = append(errs, field.Invalid(p.Child("pool", "generation"), spec.Pool.Generation, "must be greater than or equal to zero"))
	}

	var set []string
	if ok, nerrs := nodeName(p.Child("nodeName"), spec.NodeName); ok || len(nerrs) > 0 {
		errs = append(errs, nerrs...)
		if ok {
			set = append(set, "`nodeName`")
		}
	}
	if spec.NodeSelector != nil {
		set = append(set, "`nodeSelector`")
		errs = append(errs, nodeSelector(p.Child("nodeSelector"), spec.NodeSelector)...)
		// As the API server: one term, which keeps merging the selectors of devices from several slices
		// simple.
		if n := len(spec.NodeSelector.NodeSelectorTerms); n > 1 {
			errs = append(errs, field.Invalid(p.Child("nodeSelector", "nodeSelectorTerms"), n, "must have exactly one node selector term"))
		}
	}
	ok, berrs := trueOrUnset(p.Child("allNodes"), spec.AllNodes)
	errs = append(errs, berrs...)
	if ok {
		set = append(set, "`allNodes`")
	}
	perDevice, berrs := trueOrUnset(p.Child("perDeviceNodeSelection"), spec.PerDeviceNodeSelection)
	errs = append(errs, berrs...)
	if perDevice {
		set = append(set, "`perDeviceNodeSelection`")
	}
	errs = append(errs, exactlyOne(p, set, "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required")...)

	if spec.SharedCounters != nil && spec.Devices != nil {
		errs = append(errs, field.Invalid(p, "", "only one of `sharedCounters` or `devices` is allowed"))
	}

	devs := p.Child("devices")
	// The limit depends on the devices only past the lower one; most slices are below it.
	if n := len(spec.Devices); n > resourceapi.ResourceSliceMaxDevicesWithAdvancedFeatures && n > maxDevices(spec) {
		errs = append(errs, field.TooMany(devs, n, maxDevices(spec)))
	} else {
		names := make(map[string]bool, len(spec.Devices))
		seen := checked{memo: opts.Memo, maps: make([]uintptr, 0, 16)} // one allocation for the usual few maps
		for i := range spec.Devices {
			d := &spec.Devices[i]
			if perDevice || !deviceOK(d, &seen) {
				errs = append(errs, device(devs.Index(i), d, perDevice, opts)...)
			}
			if names[d.Name] {
				errs = append(errs, field.Duplicate(devs.Index(i), d.Name))
			}
			names[d.Name] = true
		}
	}

	sets := p.Child("sharedCounters")
	if len(spec.SharedCounters) > resourceapi.ResourceSliceMaxCounterSets {
		errs = append(errs, field.TooMany(sets, len(spec.SharedCounters), resourceapi.ResourceSliceMaxCounterSets))
	} else {
		names := map[string]bool{}
		for i, cs := range spec.SharedCounters {
			sp := sets.Index(i)
			errs = append(errs, dnsLabel(sp.Child("name"), cs.Name)...)
			if len(cs.Counters) == 0 {
				errs = append(errs, field.Required(sp.Child("counters"), ""))
			} else {
				errs = append(errs, counters(sp.Child("counters"), cs.Counters, resourceapi.ResourceSliceMaxCountersPerCounterSet)...)
			}
			if names[cs.Name] {
				errs = append(errs, field.Duplicate(sp, cs.Name))
			}
			names[cs.Name] = true
		}
	}
	if spec.PartitionTypeAttribute != nil {
		errs = append(errs, partitionTypeAttribute(p, spec)...)
	}
	errs = append(errs, skipNodeOperations(p.Child("skipNodeOperations"), spec.SkipNodeOperations)...)
	return errs
}

// maxDevices: devices with taints, counter consumption or list attributes cost more to store, so a slice
// with any of them holds fewer.
func maxDevices(spec *resourceapi.ResourceSliceSpec) int {
	for i := range spec.Devices {
		d := &spec.Devices[i]
		if len(d.Taints) > 0 || len(d.ConsumesCounters) > 0 {
			return resourceapi.ResourceSliceMaxDevicesWithAdvancedFeatures
		}
		for _, a := range d.Attributes {
			if a.BoolValues != nil || a.IntValues != nil || a.StringValues != nil || a.VersionValues != nil {
				return resourceapi.ResourceSliceMaxDevicesWithAdvancedFeatures
			}
		}
	}
	return resourceapi.ResourceSliceMaxDevices
}

func device(p *field.Path, d *resourceapi.Device, perDevice bool, opts Options) field.ErrorList {
	errs := dnsLabel(p.Child("name"), d.Name)
	if n := len(d.Attributes) + len(d.Capacity); n > resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice {
		errs = append(errs, field.Invalid(p, n, fmt.Sprintf("the total number of attributes and capacities must not exceed %d", resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice)))
	}
	if n := attributeValues(d); n > resourceapi.ResourceSliceMaxAttributeValuesPerDevice {
		errs = append(errs, field.Invalid(p, n, fmt.Sprintf("the total number of attribute values must not exceed %d", resourceapi.ResourceSliceMaxAttributeValuesPerDevice)))
	}
	ap := p.Child("attributes")
	for _, name := range sortedKeys(d.Attributes) {
		errs = append(errs, qualifiedName(ap, name)...)
		errs = append(errs, attribute(mapKey(ap, string(name), attributeKeyMaxLength), d.Attributes[name])...)
	}
	multi := d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations
	cp := p.Child("capacity")
	for _, name := range sortedKeys(d.Capacity) {
		errs = append(errs, qualifiedName(cp, name)...)
		kp := mapKey(cp, string(name), attributeKeyMaxLength)
		c := d.Capacity[name]
		if cerrs := capacityQuantities(kp, c); len(cerrs) > 0 {
			errs = append(errs, cerrs...)
			continue // no policy arithmetic on unbounded quantities
		}
		if c.Value.Sign() < 0 {
			errs = append(errs, field.Invalid(kp.Child("value"), c.Value.String(), "must not be negative"))
		}
		switch {
		case c.RequestPolicy == nil:
		case !multi:
			errs = append(errs, field.Forbidden(kp.Child("requestPolicy"), "allowMultipleAllocations must be true"))
		default:
			// Quantity.Cmp and String convert or cache in their receiver: work on a copy of the policy.
			errs = append(errs, requestPolicy(kp.Child("requestPolicy"), c.Value, c.RequestPolicy.DeepCopy(), opts)...)
		}
	}
	tp := p.Child("taints")
	if len(d.Taints) > resourceapi.DeviceTaintsMaxLength {
		errs = append(errs, field.TooMany(tp, len(d.Taints), resourceapi.DeviceTaintsMaxLength))
	} else {
		for i, t := range d.Taints {
			errs = append(errs, taint(tp.Index(i), t)...)
		}
	}
	errs = append(errs, consumesCounters(p.Child("consumesCounters"), d.ConsumesCounters)...)

	if perDevice {
		var set []string
		if ok, nerrs := nodeName(p.Child("nodeName"), d.NodeName); ok || len(nerrs) > 0 {
			errs = append(errs, nerrs...)
			if ok {
				set = append(set, "`nodeName`")
			}
		}
		if d.NodeSelector != nil {
			set = append(set, "`nodeSelector`")
			errs = append(errs, nodeSelector(p.Child("nodeSelector"), d.NodeSelector)...)
		}
		ok, berrs := trueOrUnset(p.Child("allNodes"), d.AllNodes)
		errs = append(errs, berrs...)
		if ok {
			set = append(set, "`allNodes`")
		}
		errs = append(errs, exactlyOne(p, set, "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec")...)
	} else if d.NodeName != nil || d.NodeSelector != nil || d.AllNodes != nil {
		errs = append(errs, field.Invalid(p, nil, "`nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec"))
	}
	errs = append(errs, bindingConditions(p, d.BindingConditions, d.BindingFailureConditions)...)
	errs = append(errs, nodeAllocatable(p.Child("nodeAllocatableResources"), d)...)
	return errs
}

// attributeValues counts the values of a device's attributes, each list entry separately.
func attributeValues(d *resourceapi.Device) int {
	n := 0
	for _, a := range d.Attributes {
		if l := len(a.BoolValues) + len(a.IntValues) + len(a.StringValues) + len(a.VersionValues); l > 0 {
			n += l
		} else {
			n++
		}
	}
	return n
}

// attribute: exactly one value set; strings at most 64 bytes; versions semantic versions of at most 64
// bytes; lists, when set, not empty.
func attribute(p *field.Path, a resourceapi.DeviceAttribute) field.ErrorList {
	var errs field.ErrorList
	set := 0
	if a.BoolValue != nil {
		set++
	}
	if a.IntValue != nil {
		set++
	}
	if a.StringValue != nil {
		set++
		errs = append(errs, stringValue(p.Child("string"), *a.StringValue)...)
	}
	if a.VersionValue != nil {
		set++
		errs = append(errs, versionValue(p.Child("version"), *a.VersionValue)...)
	}
	list := func(isSet bool, n int, name string) {
		if !isSet {
			return
		}
		set++
		if n == 0 {
			errs = append(errs, field.Invalid(p.Child(name), "[]", "must not be empty if specified"))
		}
	}
	list(a.BoolValues != nil, len(a.BoolValues), "bools")
	list(a.IntValues != nil, len(a.IntValues), "ints")
	list(a.StringValues != nil, len(a.StringValues), "strings")
	list(a.VersionValues != nil, len(a.VersionValues), "versions")
	for i, v := range a.StringValues {
		errs = append(errs, stringValue(p.Child("strings").Index(i), v)...)
	}
	for i, v := range a.VersionValues {
		errs = append(errs, versionValue(p.Child("versions").Index(i), v)...)
	}
	if set != 1 {
		errs = append(errs, field.Invalid(p, set, "exactly one value must be specified"))
	}
	return errs
}

func stringValue(p *field.Path, v string) field.ErrorList {
	if len(v) > resourceapi.DeviceAttributeMaxValueLength {
		return field.ErrorList{field.TooLong(p, "", resourceapi.DeviceAttributeMaxValueLength)}
	}
	return nil
}

// semverPattern is semver.org 2.0.0: major.minor.patch without leading zeros, optional pre-release
// identifiers (numeric ones without leading zeros) and build metadata.
var semverPattern = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)` +
	`(-(0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*)?` +
	`(\+[0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*)?$`)

func versionValue(p *field.Path, v string) field.ErrorList {
	var errs field.ErrorList
	if !semverPattern.MatchString(v) {
		errs = append(errs, field.Invalid(p, v, "must be a string compatible with semver.org spec 2.0.0"))
	}
	if len(v) > resourceapi.DeviceAttributeMaxValueLength {
		errs = append(errs, field.TooLong(p, "", resourceapi.DeviceAttributeMaxValueLength))
	}
	return errs
}

// capacityQuantities checks every quantity of a capacity against capacity.ValidateQuantity, naming the
// field.
func capacityQuantities(p *field.Path, c resourceapi.DeviceCapacity) field.ErrorList {
	errs := quantity(p.Child("value"), c.Value)
	rp := c.RequestPolicy
	if rp == nil {
		return errs
	}
	pp := p.Child("requestPolicy")
	if rp.Default != nil {
		errs = append(errs, quantity(pp.Child("default"), *rp.Default)...)
	}
	for i, v := range rp.ValidValues {
		errs = append(errs, quantity(pp.Child("validValues").Index(i), v)...)
	}
	if r := rp.ValidRange; r != nil {
		for _, b := range []struct {
			name string
			q    *resource.Quantity
		}{{"min", r.Min}, {"max", r.Max}, {"step", r.Step}} {
			if b.q != nil {
				errs = append(errs, quantity(pp.Child("validRange", b.name), *b.q)...)
			}
		}
	}
	return errs
}

// requestPolicy is the API server's validateRequestPolicy: validValues or validRange, not both; a default
// with either; validValues sorted, unique, at most the capacity and containing the default; validRange with
// min, min <= max <= capacity, default within [min, max], a positive step with min + step within the
// capacity, and default and max on the step grid from min.
func requestPolicy(p *field.Path, capValue resource.Quantity, rp *resourceapi.CapacityRequestPolicy, opts Options) field.ErrorList {
	var errs field.ErrorList
	switch {
	case len(rp.ValidValues) > 0 && rp.ValidRange != nil:
		return field.ErrorList{field.Forbidden(p, `exactly one policy can be specified, cannot specify "validValues" and "validRange" at the same time`)}
	case len(rp.ValidValues) > 0:
		vp := p.Child("validValues")
		if rp.Default == nil {
			return field.ErrorList{field.Required(p.Child("default"), "required when validValues is defined")}
		}
		if len(rp.ValidValues) > maxValidValues {
			return field.ErrorList{field.TooMany(vp, len(rp.ValidValues), maxValidValues)}
		}
		for i := 1; i < len(rp.ValidValues); i++ {
			if rp.ValidValues[i-1].Cmp(rp.ValidValues[i]) > 0 {
				errs = append(errs, field.Invalid(vp.Index(i), rp.ValidValues[i].String(), "values must be sorted in ascending order"))
			}
		}
		found := false
		seen := map[string]bool{}
		for i, v := range rp.ValidValues {
			if v.Cmp(capValue) > 0 {
				errs = append(errs, field.Invalid(vp.Index(i), v.String(), fmt.Sprintf("option is larger than capacity value: %s", capValue.String())))
			}
			if v.Cmp(*rp.Default) == 0 {
				found = true
			}
			// As the API server: duplicates are equal values (as integers, rounded up, without fractional
			// capacity ranges).
			key := v.AsDec().String()
			if !gates.Or(opts.Capacity.Features).DRAFractionalCapacityRange {
				key = fmt.Sprint(v.Value())
			}
			if seen[key] {
				errs = append(errs, field.Duplicate(vp.Index(i), v.String()))
			}
			seen[key] = true
		}
		if !found {
			errs = append(errs, field.Invalid(vp, str(rp.Default), "default value is not valid according to the requestPolicy"))
		}
	case rp.ValidRange != nil:
		if rp.Default == nil {
			return field.ErrorList{field.Required(p.Child("default"), "required when validRange is defined")}
		}
		errs = append(errs, validRange(p.Child("validRange"), capValue, *rp.Default, *rp.ValidRange, opts)...)
	}
	return errs
}

// maxValidValues is the limit the API documents for validValues (CapacityRequestPolicyDiscreteMaxOptions
// in the API server's internal types).
const maxValidValues = 10

func validRange(p *field.Path, capValue, def resource.Quantity, r resourceapi.CapacityRequestPolicyRange, opts Options) field.ErrorList {
	if r.Min == nil {
		return field.ErrorList{field.Required(p.Child("min"), "required when validRange is defined")}
	}
	var errs field.ErrorList
	if r.Min.Cmp(capValue) > 0 {
		errs = append(errs, field.Invalid(p.Child("min"), str(r.Min), fmt.Sprintf("min is larger than capacity value: %s", capValue.String())))
	}
	if def.Cmp(*r.Min) < 0 {
		errs = append(errs, field.Invalid(p.Child("default"), def.String(), fmt.Sprintf("default is less than min: %s", str(r.Min))))
	}
	if r.Max != nil {
		if r.Min.Cmp(*r.Max) > 0 {
			errs = append(errs, field.Invalid(p.Child("max"), str(r.Min), fmt.Sprintf("min is larger than max: %s", str(r.Max))))
		}
		if r.Max.Cmp(capValue) > 0 {
			errs = append(errs, field.Invalid(p.Child("max"), str(r.Max), fmt.Sprintf("max is larger than capacity value: %s", capValue.String())))
		}
		if def.Cmp(*r.Max) > 0 {
			errs = append(errs, field.Invalid(p.Child("default"), def.String(), fmt.Sprintf("default is more than max: %s", str(r.Max))))
		}
	}
	bounds := []struct {
		name string
		q    *resource.Quantity
	}{{"default", &def}, {"min", r.Min}, {"max", r.Max}, {"step", r.Step}}
	// As the API server: with fractional capacity ranges, a range (or default) with fractions is computed
	// in milli-units, so every bound must be exact there.
	useMilli := gates.Or(opts.Capacity.Features).DRAFractionalCapacityRange && (fractional(&def) || fractional(r.Min) || fractional(r.Max) || fractional(r.Step))
	if useMilli {
		unsafe := false
		for _, b := range bounds {
			if b.q != nil && b.q.Cmp(*resource.NewMilliQuantity(b.q.MilliValue(), b.q.Format)) != 0 {
				errs = append(errs, field.Invalid(p.Child(b.name), str(b.q), "value cannot be represented as a milli value"))
				unsafe = true
			}
		}
		if unsafe {
			return errs
		}
	}
	if r.Step == nil {
		return errs
	}
	if r.Step.Sign() <= 0 {
		return append(errs, field.Invalid(p.Child("step"), str(r.Step), "must be greater than zero"))
	}
	added := r.Min.DeepCopy()
	added.Add(*r.Step)
	if added.Cmp(capValue) > 0 {
		errs = append(errs, field.Invalid(p.Child("step"), str(r.Step), fmt.Sprintf("one step %s is larger than capacity value: %s", added.String(), capValue.String())))
	}
	if !useMilli {
		// Integer arithmetic reads Value(), exact only in [0, MaxInt64].
		unsafe := false
		for _, b := range bounds {
			if b.q == nil {
				continue
			}
			switch {
			case b.q.Sign() < 0:
				errs = append(errs, field.Invalid(p.Child(b.name), str(b.q), "must be greater than or equal to 0"))
				unsafe = true
			case b.q.CmpInt64(math.MaxInt64) > 0:
				errs = append(errs, field.Invalid(p.Child(b.name), str(b.q), "must not be larger than 9223372036854775807"))
				unsafe = true
			}
		}
		if unsafe {
			return errs
		}
	}
	errs = append(errs, onStep(p.Child("step"), def, *r.Min, *r.Step, useMilli)...)
	if r.Max != nil {
		errs = append(errs, onStep(p.Child("step"), *r.Max, *r.Min, *r.Step, useMilli)...)
	}
	return errs
}

// onStep: value - min is a multiple of step.
func onStep(p *field.Path, value, lo, step resource.Quantity, useMilli bool) field.ErrorList {
	v, l, s := value.Value(), lo.Value(), step.Value()
	if useMilli {
		v, l, s = value.MilliValue(), lo.MilliValue(), step.MilliValue()
	}
	if s == 0 || (v-l)%s != 0 {
		return field.ErrorList{field.Invalid(p, value.String(), fmt.Sprintf("value is not a multiple of a given step (%s) from (%s)", step.String(), lo.String()))}
	}
	return nil
}

// str formats a quantity the API returns by pointer without caching the text in it (String caches it in
// the receiver, which would modify the object being validated).
func str(q *resource.Quantity) string {
	c := *q
	return c.String()
}

// fractional reports whether q has digits below 1.
func fractional(q *resource.Quantity) bool {
	if q == nil {
		return false
	}
	return q.Cmp(*resource.NewQuantity(q.Value(), q.Format)) != 0
}

func counters(p *field.Path, cs map[string]resourceapi.Counter, limit int) field.ErrorList {
	if len(cs) > limit {
		return field.ErrorList{field.TooMany(p, len(cs), limit)}
	}
	if countersOK(cs) {
		return nil
	}
	var errs field.ErrorList
	for _, name := range sortedKeys(cs) {
		errs = append(errs, dnsLabel(p, name)...)
		errs = append(errs, nonNegative(mapKey(p, name, 63).Child("value"), cs[name].Value)...)
	}
	return errs
}

func consumesCounters(p *field.Path, cc []resourceapi.DeviceCounterConsumption) field.ErrorList {
	if len(cc) > resourceapi.ResourceSliceMaxDeviceCounterConsumptionsPerDevice {
		return field.ErrorList{field.TooMany(p, len(cc), resourceapi.ResourceSliceMaxDeviceCounterConsumptionsPerDevice)}
	}
	var errs field.ErrorList
	sets := map[string]bool{}
	for i, c := range cc {
		ip := p.Index(i)
		errs = append(errs, dnsLabel(ip.Child("counterSet"), c.CounterSet)...)
		if len(c.Counters) == 0 {
			errs = append(errs, field.Required(ip.Child("counters"), ""))
		} else {
			errs = append(errs, counters(ip.Child("counters"), c.Counters, resourceapi.ResourceSliceMaxCountersPerDeviceCounterConsumption)...)
		}
		gp := ip.Child("compatibilityGroups")
		if len(c.CompatibilityGroups) > resourceapi.DeviceCompatibilityGroupsMaxSize {
			errs = append(errs, field.TooMany(gp, len(c.CompatibilityGroups), resourceapi.DeviceCompatibilityGroupsMaxSize))
		} else {
			groups := map[string]bool{}
			for j, g := range c.CompatibilityGroups {
				errs = append(errs, dnsLabel(gp.Index(j), g)...)
				if groups[g] {
					errs = append(errs, field.Duplicate(gp.Index(j), g))
				}
				groups[g] = true
			}
		}
		if sets[c.CounterSet] {
			errs = append(errs, field.Duplicate(ip, c.CounterSet))
		}
		sets[c.CounterSet] = true
	}
	return errs
}

// nodeAllocatable checks the node allocatable resources a device maps: a mapping or an overhead; a
// mapping's capacityKey names a capacity of the device and comes with a positive capacityMultiplier; a
// deviceMultiplier is positive; overheads are not negative. (Whether the key is a node allocatable
// resource name is left to the API server.)
func nodeAllocatable(p *field.Path, d *resourceapi.Device) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedKeys(d.NodeAllocatableResources) {
		kp := p.Key(string(name))
		m := d.NodeAllocatableResources[name]
		if m.Mapping == nil && m.Overhead == nil {
			errs = append(errs, field.Required(kp, "at least one of mapping or overhead must be set"))
		}
		if mp := m.Mapping; mp != nil {
			mpp := kp.Child("mapping")
			if mp.CapacityKey != nil {
				if _, ok := d.Capacity[*mp.CapacityKey]; !ok {
					errs = append(errs, field.NotFound(mpp.Child("capacityKey"), *mp.CapacityKey))
				}
				if mp.CapacityMultiplier == nil {
					errs = append(errs, field.Required(mpp.Child("capacityMultiplier"), "capacityMultiplier is required when capacityKey is set"))
				}
			} else if mp.CapacityMultiplier != nil {
				errs = append(errs, field.Required(mpp.Child("capacityKey"), "capacityKey is required when capacityMultiplier is set"))
			}
			for _, q := range []struct {
				name string
				q    *resource.Quantity
			}{{"capacityMultiplier", mp.CapacityMultiplier}, {"deviceMultiplier", mp.DeviceMultiplier}} {
				if q.q == nil {
					continue
				}
				if qerrs := quantity(mpp.Child(q.name), *q.q); len(qerrs) > 0 {
					errs = append(errs, qerrs...)
				} else if q.q.Sign() <= 0 {
					errs = append(errs, field.Invalid(mpp.Child(q.name), str(q.q), "must be positive"))
				}
			}
		}
		if o := m.Overhead; o != nil {
			op := kp.Child("overhead")
			if o.PerPod == nil && o.PerContainer == nil {
				errs = append(errs, field.Invalid(op, "", "at least one of perPod or perContainer must be set"))
			}
			if o.PerPod != nil {
				errs = append(errs, nonNegative(op.Child("perPod"), *o.PerPod)...)
			}
			if o.PerContainer != nil {
				errs = append(errs, nonNegative(op.Child("perContainer"), *o.PerContainer)...)
			}
		}
	}
	return errs
}

// partitionTypeAttribute: only on slices whose devices consume counters, and then every such device has
// it as a string attribute (in the driver's domain it may be written without the domain).
func partitionTypeAttribute(p *field.Path, spec *resourceapi.ResourceSliceSpec) field.ErrorList {
	name := string(*spec.PartitionTypeAttribute)
	tp := p.Child("partitionTypeAttribute")
	consumes := false
	for i := range spec.Devices {
		consumes = consumes || len(spec.Devices[i].ConsumesCounters) > 0
	}
	if !consumes {
		return field.ErrorList{field.Invalid(tp, name, "may only be set on a slice which declares devices that consume counters")}
	}
	if errs := fullyQualifiedName(tp, *spec.PartitionTypeAttribute); len(errs) > 0 {
		return errs
	}
	bare := ""
	if len(name) > len(spec.Driver)+1 && name[:len(spec.Driver)+1] == spec.Driver+"/" {
		bare = name[len(spec.Driver)+1:]
	}
	var errs field.ErrorList
	for i := range spec.Devices {
		d := &spec.Devices[i]
		if len(d.ConsumesCounters) == 0 {
			continue
		}
		ap := p.Child("devices").Index(i).Child("attributes").Key(name)
		a, ok := d.Attributes[resourceapi.QualifiedName(name)]
		if !ok && bare != "" {
			a, ok = d.Attributes[resourceapi.QualifiedName(bare)]
		}
		switch {
		case !ok:
			errs = append(errs, field.Required(ap, "device consumes counters and `partitionTypeAttribute` names this attribute, so it must be set"))
		case a.StringValue == nil:
			errs = append(errs, field.Invalid(ap, "", "must be a string value because `partitionTypeAttribute` names this attribute"))
		}
	}
	return errs
}

// skipNodeOperations: unique, and NodePrepareResources only together with NodeUnprepareResources (or "*").
// Unknown values are allowed: the kubelet ignores them.
func skipNodeOperations(p *field.Path, ops []resourceapi.SkipNodeOperation) field.ErrorList {
	var errs field.ErrorList
	seen := map[resourceapi.SkipNodeOperation]bool{}
	for i, op := range ops {
		if seen[op] {
			errs = append(errs, field.Duplicate(p.Index(i), op))
		}
		seen[op] = true
	}
	if seen[resourceapi.SkipNodeOperationNodePrepareResources] && !seen[resourceapi.SkipNodeOperationNodeUnprepareResources] && !seen[resourceapi.SkipNodeOperationAll] {
		errs = append(errs, field.Invalid(p, ops, "NodePrepareResources cannot be skipped unless NodeUnprepareResources is also skipped"))
	}
	return errs
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}
