package allocator

import (
	resourceapi "k8s.io/api/resource/v1"
)

// maxColumns bounds the attribute columns kept per slice entry: the names come from users' claims, and
// a name met after the bound is read from the device's map on every use, as without columns.
const maxColumns = 16

// attrColumns are a slice entry's device attributes by name, one column per name a constraint asked for:
// column[i] is the attribute of the entry's device i as staticAttribute reads it (nil when the device has
// none). Columns are built once per entry and name and never change: a constraint checking many devices
// of one slice (matchAttribute on numaNode over a node's GPUs) reads an array instead of hashing the
// attribute's name into each device's map.
type attrColumns map[resourceapi.FullyQualifiedName][]*resourceapi.DeviceAttribute

// column returns the entry's column for the attribute name; nil when maxColumns are kept already.
func (e *sliceEntry) column(name resourceapi.FullyQualifiedName) []*resourceapi.DeviceAttribute {
	for {
		old := e.caches.columns.Load()
		if old != nil {
			if c, ok := (*old)[name]; ok {
				return c
			}
			if len(*old) >= maxColumns {
				return nil
			}
		}
		devs := e.obj.Spec.Devices
		values := make([]resourceapi.DeviceAttribute, len(devs))
		col := make([]*resourceapi.DeviceAttribute, len(devs))
		for i := range devs {
			if v, ok := attributeOf(&devs[i], e.pool.Driver, name); ok {
				values[i] = v
				col[i] = &values[i]
			}
		}
		next := make(attrColumns, 1)
		if old != nil {
			next = make(attrColumns, len(*old)+1)
			for k, v := range *old {
				next[k] = v
			}
		}
		next[name] = col
		if e.caches.columns.CompareAndSwap(old, &next) {
			return col
		}
	}
}
