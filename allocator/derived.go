package allocator

import (
	"reflect"
	"sync"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/capacity"
	"github.com/dralloc/dralloc/celenv"
)

// derived shares what is computed from a device's maps alone between the devices whose maps the
// sliceCopier made one: the prepared CEL view (from the driver, the attribute and capacity maps and
// allowMultipleAllocations; each device gets it under its own name, celenv.Device.Named) and what a
// request without capacity requirements consumes of the device (from the capacity map). On 5,000
// nodes of 8 GPUs that publish the same attributes, the views alone were 47 MB, one kilobyte and more
// per device; shared, they are a hundred bytes each.
//
// Maps are told apart by identity. The copier's maps are never modified, and derived keeps every map
// it has a result for alive (the entries hold them), so that an address is never reused by another
// map while it is a key. Only snapshots that copy their slices use it (with Options.NoCopy the maps
// are the caller's). It is safe for concurrent use, shared by a snapshot and its forks (all with the
// same feature gates, which the consumption depends on), and bounded as the copier's memory is: past
// maxSharedMaps entries of one kind it forgets them all and starts again.
type derived struct {
	mu    sync.Mutex
	views map[viewKey]viewEntry
	plain map[uintptr]plainEntry
}

type viewKey struct {
	driver      string
	attrs, caps uintptr
	multi       bool
}

type viewEntry struct {
	// attrs and caps keep the maps of the key, and so their addresses, taken.
	attrs map[resourceapi.QualifiedName]resourceapi.DeviceAttribute
	caps  map[resourceapi.QualifiedName]resourceapi.DeviceCapacity
	view  *celenv.Device
}

type plainEntry struct {
	caps  map[resourceapi.QualifiedName]resourceapi.DeviceCapacity
	plain *plainConsumption
}

// mapID is the identity of a map; 0 for nil.
func mapID[M ~map[K]V, K comparable, V any](m M) uintptr {
	return reflect.ValueOf(m).Pointer()
}

// view returns the CEL view of dev, published by driver: the one of a device with the same maps,
// under dev's name, or a new one.
func (c *derived) view(driver string, dev *resourceapi.Device) *celenv.Device {
	if c == nil {
		return celenv.NewDevice(driver, dev)
	}
	key := viewKey{driver: driver, attrs: mapID(dev.Attributes), caps: mapID(dev.Capacity),
		multi: dev.AllowMultipleAllocations != nil && *dev.AllowMultipleAllocations}
	c.mu.Lock()
	e, ok := c.views[key]
	c.mu.Unlock()
	if ok {
		return e.view.Named(driver, dev.Name)
	}
	v := celenv.NewDevice(driver, dev)
	c.mu.Lock()
	if c.views == nil || len(c.views) >= maxSharedMaps {
		c.views = map[viewKey]viewEntry{}
	}
	c.views[key] = viewEntry{attrs: dev.Attributes, caps: dev.Capacity, view: v}
	c.mu.Unlock()
	return v
}

// plainConsumed is capacity.Consumed of no request on the capacity map caps, shared by the devices
// with that map.
func (c *derived) plainConsumed(caps map[resourceapi.QualifiedName]resourceapi.DeviceCapacity, opts capacity.Options) *plainConsumption {
	compute := func() *plainConsumption {
		consumed, err := capacity.Consumed(nil, caps, opts)
		return &plainConsumption{consumed: consumed, err: err}
	}
	if c == nil {
		return compute()
	}
	id := mapID(caps)
	c.mu.Lock()
	e, ok := c.plain[id]
	c.mu.Unlock()
	if ok {
		return e.plain
	}
	p := compute()
	c.mu.Lock()
	if c.plain == nil || len(c.plain) >= maxSharedMaps {
		c.plain = map[uintptr]plainEntry{}
	}
	c.plain[id] = plainEntry{caps: caps, plain: p}
	c.mu.Unlock()
	return p
}
