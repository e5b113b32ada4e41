package verify

import (
	"fmt"
	"maps"
	"slices"
	"sort"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/utils/ptr"

	"github.com/dralloc/dralloc/celenv"
)

type poolKey struct{ driver, pool string }

// pool is the newest generation of one resource pool, as the Kubernetes allocator sees it.
type pool struct {
	key        poolKey
	generation int64
	slices     []*resourceapi.ResourceSlice // newest generation, sorted by name
	// incomplete: not all resourceSliceCount slices of the newest generation are published.
	incomplete bool
	// invalid says why the pool cannot be used (duplicate device names, duplicate counter sets, a device that
	// consumes an unknown counter), or is empty.
	invalid  string
	counters map[string]map[string]resource.Quantity
	// visible: some slice of the pool targets the node (the pool takes part in allocation on it).
	visible bool
}

// device is one published device of a pool's newest generation.
type device struct {
	id    DeviceID
	dev   *resourceapi.Device
	slice *resourceapi.ResourceSlice
	pool  *pool
	// sliceTargets: the device's slice targets the node (slice-level selection, or per-device selection with
	// some device matching); reach: the node can use this very device.
	sliceTargets bool
	reach        bool
	// ignored says why the feature gates hide the device from allocation; empty when they do not.
	ignored string
	view    *celenv.Device
}

func (d *device) celView() *celenv.Device {
	if d.view == nil {
		d.view = celenv.NewDevice(d.id.Driver, d.dev)
	}
	return d.view
}

// nodeMatches is Kubernetes' node selection of a slice or device: a node name, all nodes, or a node selector.
func nodeMatches(node *v1.Node, nodeName string, allNodes bool, sel *v1.NodeSelector) (bool, error) {
	switch {
	case nodeName != "":
		return node.Name == nodeName, nil
	case allNodes:
		return true, nil
	case sel != nil:
		ns, err := nodeaffinity.NewNodeSelector(sel)
		if err != nil {
			return false, err
		}
		return ns.Match(node), nil
	}
	return false, nil
}

func usesCompatibilityGroups(s *resourceapi.ResourceSlice) bool {
	for _, d := range s.Spec.Devices {
		for _, cc := range d.ConsumesCounters {
			if len(cc.CompatibilityGroups) > 0 {
				return true
			}
		}
	}
	return false
}

// index builds the pools and devices from the slices.
func (c *checker) index() {
	c.pools = map[poolKey]*pool{}
	c.devices = map[DeviceID]*device{}
	for _, s := range c.in.Slices {
		if s == nil {
			continue
		}
		k := poolKey{s.Spec.Driver, s.Spec.Pool.Name}
		p := c.pools[k]
		if p == nil {
			p = &pool{key: k, generation: s.Spec.Pool.Generation}
			c.pools[k] = p
		}
		switch {
		case s.Spec.Pool.Generation > p.generation:
			p.generation, p.slices = s.Spec.Pool.Generation, nil
		case s.Spec.Pool.Generation < p.generation:
			continue
		}
		p.slices = append(p.slices, s)
	}
	for _, p := range c.pools {
		sort.SliceStable(p.slices, func(i, j int) bool { return p.slices[i].Name < p.slices[j].Name })
		c.indexPool(p)
	}
}

func (c *checker) indexPool(p *pool) {
	counted := 0
	var want int64
	names := map[string]bool{}
	p.counters = map[string]map[string]resource.Quantity{}
	for _, s := range p.slices {
		want = s.Spec.Pool.ResourceSliceCount
		ignored := ""
		switch {
		case !c.features.DRAPartitionableDevices && (s.Spec.PerDeviceNodeSelection != nil || len(s.Spec.SharedCounters) > 0):
			ignored = fmt.Sprintf("ResourceSlice %s uses perDeviceNodeSelection or sharedCounters while DRAPartitionableDevices is off", s.Name)
		case !c.features.DRADeviceCompatibilityGroups && usesCompatibilityGroups(s):
			ignored = fmt.Sprintf("ResourceSlice %s uses compatibility groups while DRADeviceCompatibilityGroups is off", s.Name)
		}
		// Kubernetes leaves slices with compatibility groups out of the pool while the gate is off, so the pool
		// then counts as incomplete; slices with counters stay counted.
		if c.features.DRADeviceCompatibilityGroups || !usesCompatibilityGroups(s) {
			counted++
		}
		if c.features.DRAPartitionableDevices {
			for _, cs := range s.Spec.SharedCounters {
				if _, dup := p.counters[cs.Name]; dup {
					p.invalid = fmt.Sprintf("duplicate counter set name %s", cs.Name)
				}
				m := make(map[string]resource.Quantity, len(cs.Counters))
				for name, v := range cs.Counters {
					m[name] = v.Value
				}
				p.counters[cs.Name] = m
			}
		}
		sliceTargets := false
		if c.in.Node != nil && ignored == "" {
			switch {
			case ptr.Deref(s.Spec.NodeName, "") != "" || ptr.Deref(s.Spec.AllNodes, false) || s.Spec.NodeSelector != nil:
				m, err := nodeMatches(c.in.Node, ptr.Deref(s.Spec.NodeName, ""), ptr.Deref(s.Spec.AllNodes, false), s.Spec.NodeSelector)
				if err != nil {
					p.invalid = fmt.Sprintf("ResourceSlice %s: spec.nodeSelector: %v", s.Name, err)
				}
				sliceTargets = m
			case ptr.Deref(s.Spec.PerDeviceNodeSelection, false):
				for i := range s.Spec.Devices {
					d := &s.Spec.Devices[i]
					if m, _ := nodeMatches(c.in.Node, ptr.Deref(d.NodeName, ""), ptr.Deref(d.AllNodes, false), d.NodeSelector); m {
						sliceTargets = true
						break
					}
				}
			}
		}
		// The stable variant of the Kubernetes allocator takes slices with shared counters into the pool on every
		// node, whatever their node selection.
		if sliceTargets || (ignored == "" && len(s.Spec.SharedCounters) > 0 && c.features.Implementation() == variantStable) {
			p.visible = true
		}
		for i := range s.Spec.Devices {
			d := &s.Spec.Devices[i]
			if names[d.Name] && (c.features.DRAPartitionableDevices || len(s.Spec.SharedCounters) == 0) {
				p.invalid = fmt.Sprintf("duplicate device name %s", d.Name)
			}
			names[d.Name] = true
			id := DeviceID{Driver: s.Spec.Driver, Pool: s.Spec.Pool.Name, Device: d.Name}
			dv := &device{id: id, dev: d, slice: s, pool: p, sliceTargets: sliceTargets, ignored: ignored}
			dv.reach = sliceTargets
			if c.in.Node == nil {
				dv.sliceTargets, dv.reach = true, true
			} else if sliceTargets && ptr.Deref(s.Spec.PerDeviceNodeSelection, false) {
				m, err := nodeMatches(c.in.Node, ptr.Deref(d.NodeName, ""), ptr.Deref(d.AllNodes, false), d.NodeSelector)
				if err != nil {
					p.invalid = fmt.Sprintf("ResourceSlice %s: device %s: nodeSelector: %v", s.Name, d.Name, err)
				}
				dv.reach = m
			}
			if _, dup := c.devices[id]; !dup {
				c.devices[id] = dv
			}
		}
	}
	if int64(counted) != want {
		p.incomplete = true
	}
	if c.features.DRAPartitionableDevices && p.invalid == "" {
		p.invalid = missingCounter(p)
	}
}

// missingCounter names the first counter set or counter a device of the pool draws on that the pool does
// not have, in the order of slices, devices and counter names, so that the reason is the same on every run;
// "" when there is none.
func missingCounter(p *pool) string {
	for _, s := range p.slices {
		for _, d := range s.Spec.Devices {
			for _, cc := range d.ConsumesCounters {
				set, ok := p.counters[cc.CounterSet]
				if !ok {
					return fmt.Sprintf("counter set %s not found", cc.CounterSet)
				}
				for _, name := range slices.Sorted(maps.Keys(cc.Counters)) {
					if _, ok := set[name]; !ok {
						return fmt.Sprintf("counter %s not found in counter set %s", name, cc.CounterSet)
					}
				}
			}
		}
	}
	return ""
}
