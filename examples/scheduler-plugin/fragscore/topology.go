package fragscore

import (
	"strings"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

// topologyScore rates an allocation by the innermost topology domain all its devices share: with L
// attributes (outermost first), sharing a value of the k-th (1-based) scores 100·k/L, sharing none 0.
// An allocation of no device, or of one device, shares the domains that device has. Attributes are
// looked up as matchAttribute looks them up: the fully qualified name, or the short name on a device
// of the name's domain.
func topologyScore(snap *allocator.Snapshot, results []resourceapi.AllocationResult, attrs []resourceapi.FullyQualifiedName) int64 {
	if len(attrs) == 0 {
		attrs = allocator.DefaultTopologyAttributes()
	}
	var devs []*resourceapi.Device
	var drivers []string
	for _, r := range results {
		for _, d := range r.Devices.Results {
			dev, ok := snap.Device(allocator.DeviceID{Driver: d.Driver, Pool: d.Pool, Device: d.Device})
			if !ok {
				return 0
			}
			devs, drivers = append(devs, dev), append(drivers, d.Driver)
		}
	}
	if len(devs) == 0 {
		return 100
	}
	shared := 0
	for _, name := range attrs {
		first, ok := attribute(devs[0], drivers[0], name)
		if !ok {
			break
		}
		same := true
		for i := 1; i < len(devs) && same; i++ {
			v, ok := attribute(devs[i], drivers[i], name)
			same = ok && equalAttribute(first, v)
		}
		if !same {
			break
		}
		shared++
	}
	return int64(100 * shared / len(attrs))
}

func attribute(dev *resourceapi.Device, driver string, name resourceapi.FullyQualifiedName) (resourceapi.DeviceAttribute, bool) {
	if v, ok := dev.Attributes[resourceapi.QualifiedName(name)]; ok {
		return v, true
	}
	domain, short, ok := strings.Cut(string(name), "/")
	if !ok || domain != driver {
		return resourceapi.DeviceAttribute{}, false
	}
	v, ok := dev.Attributes[resourceapi.QualifiedName(short)]
	return v, ok
}

func equalAttribute(x, y resourceapi.DeviceAttribute) bool {
	switch {
	case x.StringValue != nil:
		return y.StringValue != nil && *x.StringValue == *y.StringValue
	case x.IntValue != nil:
		return y.IntValue != nil && *x.IntValue == *y.IntValue
	case x.BoolValue != nil:
		return y.BoolValue != nil && *x.BoolValue == *y.BoolValue
	case x.VersionValue != nil:
		return y.VersionValue != nil && *x.VersionValue == *y.VersionValue
	}
	return false
}
