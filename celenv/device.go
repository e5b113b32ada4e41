package celenv

import (
	"fmt"
	"slices"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
	resourceapi "k8s.io/api/resource/v1"
)

// Device is a device prepared for CEL: its attributes and capacities are
// converted once (versions parsed, quantities copied) into the values CEL
// reads, so that any number of selectors can be evaluated against it
// without converting or allocating again. A Device is immutable and safe
// for concurrent use.
type Device struct {
	name string // "<driver>/<device name>", for error messages
	act  *activation
	// err is the first attribute Kubernetes would refuse to convert (a bad
	// version string, an attribute without a value). Kubernetes fails every
	// evaluation on such a device, and so do we.
	err error
	// withinLimits reports that every string, list and map of the device is
	// within the sizes the API allows, which the compile-time cost estimate
	// relies on.
	withinLimits bool
	// attrs and caps are device.attributes and device.capacity: domain →
	// name → value, kept typed for Lint.
	attrs, caps *stringMap
}

// activation resolves the single variable "device". It is built once per
// Device so that handing it to the interpreter does not allocate.
type activation struct {
	device *deviceVal
}

var _ interpreter.Activation = (*activation)(nil)

func (a *activation) ResolveName(name string) (any, bool) {
	if name == deviceVar {
		return a.device, true
	}
	return nil, false
}

func (a *activation) Parent() interpreter.Activation { return nil }

const (
	deviceVar     = "device"
	driverVar     = "driver"
	multiAllocVar = "allowMultipleAllocations"
	attributesVar = "attributes"
	capacityVar   = "capacity"
)

// deviceVal is the value of the CEL variable "device". It is a map with the
// keys driver, allowMultipleAllocations, attributes and capacity (that is
// how Kubernetes passes the device), and also serves the declared fields of
// the kubernetes.DRADevice type directly.
type deviceVal struct {
	*stringMap
	driver, multiAlloc, attributes, capacity ref.Val
}

// Value returns the deviceVal itself so that field access can reach the
// fields without a map lookup.
func (d *deviceVal) Value() any { return d }

// Name returns "<driver>/<device name>" ("" for a nil Device).
func (d *Device) Name() string {
	if d == nil {
		return ""
	}
	return d.name
}

// NewDevice prepares dev, published by driver, for evaluation. It never
// fails: an attribute Kubernetes cannot convert makes every evaluation on
// the device fail with that reason, as in Kubernetes. dev is neither kept
// nor modified.
//
// As in Kubernetes, attribute and capacity names without a domain belong
// to the driver's domain: "memory" of driver gpu.nvidia.com is
// device.attributes["gpu.nvidia.com"].memory.
func NewDevice(driver string, dev *resourceapi.Device) *Device {
	d := &Device{withinLimits: len(driver) <= resourceapi.DriverNameMaxLength}
	var (
		attributes map[resourceapi.QualifiedName]resourceapi.DeviceAttribute
		capacity   map[resourceapi.QualifiedName]resourceapi.DeviceCapacity
		multi      bool
	)
	if dev != nil {
		d.name = driver + "/" + dev.Name
		attributes, capacity = dev.Attributes, dev.Capacity
		multi = dev.AllowMultipleAllocations != nil && *dev.AllowMultipleAllocations
	} else {
		d.name = driver + "/"
	}

	// Map order does not matter: the error kept is the first by name, and of
	// two names for one attribute ("model" and "<driver>/model") the last by
	// name wins.
	var errName resourceapi.QualifiedName
	entries := make([]entry, 0, len(attributes))
	for name, attr := range attributes {
		val, err := attributeValue(attr)
		if err != nil {
			if d.err == nil || name < errName {
				d.err, errName = fmt.Errorf("attribute %s: %w", name, err), name
			}
			continue
		}
		if !attributeWithinLimits(attr) {
			d.withinLimits = false
		}
		entries = d.add(entries, driver, name, val)
	}
	d.attrs = nestedMap(entries)
	entries = make([]entry, 0, len(capacity))
	for name, c := range capacity {
		q := newQuantityVal(c.Value.DeepCopy(), false)
		if !q.outOfRange {
			// String caches its result inside the Quantity; fill the cache
			// now, while the value is not yet shared. (For a value out of
			// range it would print a number of up to 2^31 digits.)
			_ = q.q.String()
		}
		entries = d.add(entries, driver, name, q)
	}
	d.caps = nestedMap(entries)

	dv := &deviceVal{
		driver:     types.String(driver),
		multiAlloc: types.Bool(multi),
		attributes: d.attrs,
		capacity:   d.caps,
	}
	dv.stringMap = sortedMap(deviceKeys, []ref.Val{dv.multiAlloc, dv.attributes, dv.capacity, dv.driver}, nil)
	for _, m := range []*stringMap{d.attrs, d.caps} {
		if len(m.names) > resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice {
			d.withinLimits = false
		}
		for _, inner := range m.vals {
			if len(inner.(*stringMap).names) > resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice {
				d.withinLimits = false
			}
		}
	}
	d.act = &activation{device: dv}
	return d
}

// Named returns a Device that evaluates exactly as d does, named "<driver>/<device>" (Name and
// evaluation errors). It is NewDevice for a device that has the same driver, attributes, capacity and
// allowMultipleAllocations as the one d was prepared from, without converting them again: the two
// share their converted values, and the new Device is a hundred bytes or so instead of a kilobyte
// and more (the devices of a fleet often publish the same). d is not modified.
func (d *Device) Named(driver, device string) *Device {
	named := *d
	named.name = driver + "/" + device
	return &named
}

func (d *Device) noteKey(domain, id string) {
	if len(domain) > resourceapi.DeviceMaxDomainLength || len(id) > resourceapi.DeviceMaxIDLength {
		d.withinLimits = false
	}
}

// deviceKeys are the keys of the variable device, sorted.
var deviceKeys = []string{multiAllocVar, attributesVar, capacityVar, driverVar}

// entry is one attribute or capacity of a device, by domain and name.
type entry struct {
	domain, id string
	name       resourceapi.QualifiedName // as published, which decides between two spellings
	val        ref.Val
}

// add appends the attribute or capacity name of the device's driver.
func (d *Device) add(entries []entry, driver string, name resourceapi.QualifiedName, val ref.Val) []entry {
	domain, id := splitQualifiedName(name, driver)
	d.noteKey(domain, id)
	return append(entries, entry{domain, id, name, val})
}

// nestedMap turns the entries into the CEL map domain → name → value; unknown domains read as an empty
// map. Of two entries for one name (the spellings "model" and "<driver>/model"), the one published under
// the later name wins. It sorts the entries.
func nestedMap(entries []entry) *stringMap {
	slices.SortFunc(entries, func(a, b entry) int {
		if c := strings.Compare(a.domain, b.domain); c != 0 {
			return c
		}
		if c := strings.Compare(a.id, b.id); c != 0 {
			return c
		}
		return strings.Compare(string(a.name), string(b.name))
	})
	var domains []string
	var inner []ref.Val
	for i := 0; i < len(entries); {
		j := i + 1
		for j < len(entries) && entries[j].domain == entries[i].domain {
			j++
		}
		names, vals := make([]string, 0, j-i), make([]ref.Val, 0, j-i)
		for _, e := range entries[i:j] {
			if n := len(names); n > 0 && names[n-1] == e.id {
				vals[n-1] = e.val // the later spelling
				continue
			}
			names, vals = append(names, e.id), append(vals, e.val)
		}
		domains = append(domains, entries[i].domain)
		inner = append(inner, sortedMap(names, vals, nil))
		i = j
	}
	return sortedMap(domains, inner, emptyMap)
}

// value returns device.<m>[domain][id] of a nested map.
func (m *stringMap) value(domain, id string) (ref.Val, bool) {
	inner, ok := m.find(domain)
	if !ok {
		return nil, false
	}
	return inner.(*stringMap).find(id)
}

// splitQualifiedName splits "<domain>/<id>"; a name without a domain
// belongs to defaultDomain.
func splitQualifiedName(name resourceapi.QualifiedName, defaultDomain string) (string, string) {
	domain, id, found := strings.Cut(string(name), "/")
	if !found {
		return defaultDomain, string(name)
	}
	return domain, id
}

// attributeValue converts the one value an attribute holds. As Kubernetes,
// it picks the first set field in the order lists (int, bool, string,
// version) then scalars (int, bool, string, version).
func attributeValue(attr resourceapi.DeviceAttribute) (ref.Val, error) {
	switch {
	case attr.IntValues != nil:
		vals := make([]ref.Val, len(attr.IntValues))
		for i, v := range attr.IntValues {
			vals[i] = types.Int(v)
		}
		return types.NewRefValList(types.DefaultTypeAdapter, vals), nil
	case attr.BoolValues != nil:
		vals := make([]ref.Val, len(attr.BoolValues))
		for i, v := range attr.BoolValues {
			vals[i] = types.Bool(v)
		}
		return types.NewRefValList(types.DefaultTypeAdapter, vals), nil
	case attr.StringValues != nil:
		vals := make([]ref.Val, len(attr.StringValues))
		for i, v := range attr.StringValues {
			vals[i] = types.String(v)
		}
		return types.NewRefValList(types.DefaultTypeAdapter, vals), nil
	case attr.VersionValues != nil:
		vals := make([]ref.Val, len(attr.VersionValues))
		for i, s := range attr.VersionValues {
			v, err := semver.Parse(s)
			if err != nil {
				return nil, fmt.Errorf("parse semantic version: %w", err)
			}
			vals[i] = &semverVal{v: v}
		}
		return types.NewRefValList(types.DefaultTypeAdapter, vals), nil
	case attr.IntValue != nil:
		return types.Int(*attr.IntValue), nil
	case attr.BoolValue != nil:
		return types.Bool(*attr.BoolValue), nil
	case attr.StringValue != nil:
		return types.String(*attr.StringValue), nil
	case attr.VersionValue != nil:
		v, err := semver.Parse(*attr.VersionValue)
		if err != nil {
			return nil, fmt.Errorf("parse semantic version: %w", err)
		}
		return &semverVal{v: v}, nil
	default:
		return nil, fmt.Errorf("unsupported attribute value")
	}
}

// attributeWithinLimits reports whether the value fits the API's limits
// (64 characters per string or version, at most 64 list entries).
func attributeWithinLimits(attr resourceapi.DeviceAttribute) bool {
	const maxLen = resourceapi.DeviceAttributeMaxValueLength
	if len(attr.IntValues) > maxLen || len(attr.BoolValues) > maxLen ||
		len(attr.StringValues) > maxLen || len(attr.VersionValues) > maxLen {
		return false
	}
	for _, s := range attr.StringValues {
		if len(s) > maxLen {
			return false
		}
	}
	for _, s := range attr.VersionValues {
		if len(s) > maxLen {
			return false
		}
	}
	if attr.StringValue != nil && len(*attr.StringValue) > maxLen {
		return false
	}
	if attr.VersionValue != nil && len(*attr.VersionValue) > maxLen {
		return false
	}
	return true
}
