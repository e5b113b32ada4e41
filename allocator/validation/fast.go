package validation

import (
	"reflect"
	"slices"
	"strings"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dralloc/dralloc/capacity"
)

// Fast checks for the names every device repeats. They accept exactly what the apimachinery checks they
// stand in front of accept (validation.IsCIdentifier, IsDNS1123Label, IsDNS1123Subdomain), without a
// regular expression; the apimachinery check then only runs, for its message, on a name that fails.

// isCIdentifier: [A-Za-z_][A-Za-z0-9_]*.
func isCIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// isDNSLabel: at most 63 characters of [a-z0-9]([-a-z0-9]*[a-z0-9])?.
func isDNSLabel(s string) bool {
	if s == "" || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// isDNSSubdomain: at most 253 characters of DNS labels (without their length limit) joined by dots.
func isDNSSubdomain(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] != '.' {
			c := s[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
			continue
		}
		if i == start || s[start] == '-' || s[i-1] == '-' {
			return false
		}
		start = i + 1
	}
	return true
}

// qualifiedNameOK: what qualifiedName accepts, without a message.
func qualifiedNameOK(name resourceapi.QualifiedName) bool {
	domain, id, ok := strings.Cut(string(name), "/")
	if !ok {
		return len(name) <= resourceapi.DeviceMaxIDLength && isCIdentifier(string(name))
	}
	return len(id) <= resourceapi.DeviceMaxIDLength && isCIdentifier(id) &&
		len(domain) <= resourceapi.DriverNameMaxLength && isDNSSubdomain(strings.ToLower(domain))
}

// deviceOK reports that device (with perDevice false) finds nothing wrong with d, for the devices drivers
// publish most: attributes, capacities without request policies, counter consumption, and nothing else. It
// builds no field paths and sorts no keys, which is most of the cost of validating a valid device. It
// answers false for anything it does not cover (taints, request policies, node selection, binding
// conditions, node allocatable resources) and for anything wrong; device then runs for the verdict and the
// messages. It must never answer true for a device that device rejects (TestPropDeviceOKImpliesValid).
//
// c remembers what the call found valid already: version strings (a slice's devices repeat the same few)
// and maps, by identity (a snapshot's private copies share equal maps between devices).
func deviceOK(d *resourceapi.Device, c *checked) bool {
	if !isDNSLabel(d.Name) ||
		len(d.Attributes)+len(d.Capacity) > resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice ||
		len(d.Taints) > 0 || len(d.BindingConditions) > 0 || len(d.BindingFailureConditions) > 0 ||
		d.NodeName != nil || d.NodeSelector != nil || d.AllNodes != nil || len(d.NodeAllocatableResources) > 0 ||
		len(d.ConsumesCounters) > resourceapi.ResourceSliceMaxDeviceCounterConsumptionsPerDevice {
		return false
	}
	if p, known := c.known(d.Attributes); !known {
		values := 0 // as attributeValues
		for name, a := range d.Attributes {
			if !qualifiedNameOK(name) || !attributeOK(&a, &c.versions) {
				return false
			}
			values += max(1, len(a.BoolValues)+len(a.IntValues)+len(a.StringValues)+len(a.VersionValues))
		}
		if values > resourceapi.ResourceSliceMaxAttributeValuesPerDevice {
			return false
		}
		c.add(p, nil)
	}
	if p, known := c.known(d.Capacity); !known {
		for name, c := range d.Capacity {
			if !qualifiedNameOK(name) || c.RequestPolicy != nil || !nonNegativeOK(c.Value) {
				return false
			}
		}
		c.add(p, d.Capacity)
	}
	for i := range d.ConsumesCounters {
		cc := &d.ConsumesCounters[i]
		if !isDNSLabel(cc.CounterSet) || len(cc.Counters) == 0 ||
			len(cc.Counters) > resourceapi.ResourceSliceMaxCountersPerDeviceCounterConsumption ||
			len(cc.CompatibilityGroups) > resourceapi.DeviceCompatibilityGroupsMaxSize {
			return false
		}
		for j := range i {
			if d.ConsumesCounters[j].CounterSet == cc.CounterSet {
				return false
			}
		}
		if p, known := c.known(cc.Counters); !known {
			if !countersOK(cc.Counters) {
				return false
			}
			c.add(p, cc.Counters)
		}
		for j, g := range cc.CompatibilityGroups {
			if !isDNSLabel(g) || slices.Contains(cc.CompatibilityGroups[:j], g) {
				return false
			}
		}
	}
	return true
}

// checked is what one validation call found valid already: version strings, and the attribute,
// capacity and counter maps that passed the fast check, by identity (the maps belong to the object being
// validated, which holds them for the call). With a Memo, capacity and counter maps are also remembered
// across calls.
type checked struct {
	versions versionCache
	maps     []uintptr
	memo     *Memo
}

// checkedMaps bounds the maps one call remembers; a slice whose devices share maps repeats a few.
const checkedMaps = 64

// known reports whether the map m (of any type) passed before, and its identity; an empty map counts as
// passed, as there is nothing in it to check.
func (c *checked) known(m any) (uintptr, bool) {
	v := reflect.ValueOf(m)
	if v.Len() == 0 {
		return 0, true
	}
	p := v.Pointer()
	if slices.Contains(c.maps, p) {
		return p, true
	}
	return p, c.memo.known(p)
}

// add remembers the map with identity p as valid for the call, and, when keep is the map itself, in the
// Memo.
func (c *checked) add(p uintptr, keep any) {
	if len(c.maps) < checkedMaps {
		c.maps = append(c.maps, p)
	}
	if keep != nil {
		c.memo.add(p, keep)
	}
}

// Memo remembers capacity and counter maps of devices that ResourceSlice found valid, by identity,
// across calls: a snapshot's private copies share one map between all the devices that publish the same
// capacities or consume the same counters (every node of a fleet), and each map is then checked once.
// A remembered map must never change, so a Memo is only for objects nobody modifies (such as those
// private copies). The zero Memo is ready to use; a Memo is safe for concurrent use and remembers at most
// memoMaps maps, then forgets them all and starts again.
type Memo struct {
	mu sync.Mutex
	ok map[uintptr]any // the value is the map: it keeps the map, and so its address, taken
}

const memoMaps = 1024

func (m *Memo) known(p uintptr) bool {
	if m == nil {
		return false
	}
	m.mu.Lock()
	_, ok := m.ok[p]
	m.mu.Unlock()
	return ok
}

func (m *Memo) add(p uintptr, keep any) {
	if m == nil {
		return
	}
	m.mu.Lock()
	if m.ok == nil || len(m.ok) >= memoMaps {
		m.ok = map[uintptr]any{}
	}
	m.ok[p] = keep
	m.mu.Unlock()
}

// attributeOK: what attribute accepts, without a message.
func attributeOK(a *resourceapi.DeviceAttribute, versions *versionCache) bool {
	set := 0
	for _, s := range []bool{a.BoolValue != nil, a.IntValue != nil, a.StringValue != nil, a.VersionValue != nil,
		a.BoolValues != nil, a.IntValues != nil, a.StringValues != nil, a.VersionValues != nil} {
		if s {
			set++
		}
	}
	if set != 1 {
		return false
	}
	switch {
	case a.StringValue != nil:
		return len(*a.StringValue) <= resourceapi.DeviceAttributeMaxValueLength
	case a.VersionValue != nil:
		return versions.ok(*a.VersionValue)
	case a.BoolValues != nil:
		return len(a.BoolValues) > 0
	case a.IntValues != nil:
		return len(a.IntValues) > 0
	case a.StringValues != nil:
		for _, v := range a.StringValues {
			if len(v) > resourceapi.DeviceAttributeMaxValueLength {
				return false
			}
		}
		return len(a.StringValues) > 0
	case a.VersionValues != nil:
		for _, v := range a.VersionValues {
			if !versions.ok(v) {
				return false
			}
		}
		return len(a.VersionValues) > 0
	}
	return true // a bool or an int
}

// versionCache holds the last few versions found valid (a semantic version of at most 64 bytes).
type versionCache struct {
	valid [4]string
	next  int
}

func (c *versionCache) ok(v string) bool {
	for _, known := range c.valid {
		if v == known && v != "" {
			return true
		}
	}
	if len(v) > resourceapi.DeviceAttributeMaxValueLength || !knownVersions.valid(v) {
		return false
	}
	c.valid[c.next] = v
	c.next = (c.next + 1) % len(c.valid)
	return true
}

// knownVersions remembers, across calls, the version strings found valid; whether one is valid depends
// on the string alone, and a fleet's slices repeat a few driver and CUDA versions, which then meet the
// regular expression once rather than once per slice. It forgets them all past maxKnownVersions.
var knownVersions versionMemo

const maxKnownVersions = 256

type versionMemo struct {
	mu sync.Mutex
	ok map[string]struct{}
}

// valid reports whether v is a semantic version, from memory or by the pattern, and remembers it when it
// is one. The pattern runs outside the lock: a version met for the first time does not hold up the
// validations of other goroutines.
func (m *versionMemo) valid(v string) bool {
	m.mu.Lock()
	_, known := m.ok[v]
	m.mu.Unlock()
	if known {
		return true
	}
	if !semverPattern.MatchString(v) {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ok == nil || len(m.ok) >= maxKnownVersions {
		m.ok = map[string]struct{}{}
	}
	m.ok[strings.Clone(v)] = struct{}{} // not the caller's string, which may share a larger buffer
	return true
}

// nonNegativeOK: what nonNegative accepts, without a message.
func nonNegativeOK(q resource.Quantity) bool {
	return capacity.ValidateQuantity(q) == nil && q.Sign() >= 0
}

// countersOK: counters (under their limit) finds nothing wrong, without paths or sorting.
func countersOK(cs map[string]resourceapi.Counter) bool {
	for name, c := range cs {
		if !isDNSLabel(name) || !nonNegativeOK(c.Value) {
			return false
		}
	}
	return true
}
