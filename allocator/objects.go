package allocator

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/dralloc/dralloc/capacity"
	"github.com/dralloc/dralloc/celenv"
	"github.com/dralloc/dralloc/taints"
)

// DeviceID identifies a device: the driver, the pool and the device name inside the pool. It is the one device
// identity of dralloc, defined in package taints (which the allocator imports); the alias keeps the allocator's
// API readable.
type DeviceID = taints.DeviceID

// PoolID identifies a resource pool: the driver and the pool name.
type PoolID struct {
	Driver string `json:"driver"`
	Pool   string `json:"pool"`
}

func (p PoolID) String() string { return p.Driver + "/" + p.Pool }

// classEntry is a DeviceClass with its selectors compiled when it was added. A selector that does not
// compile keeps its error, which is reported when a request uses the class, as Kubernetes does.
type classEntry struct {
	obj    *resourceapi.DeviceClass
	sel    []*celenv.Selector
	selErr []error
}

func newClassEntry(class *resourceapi.DeviceClass, env *celenv.Env) *classEntry {
	c := &classEntry{obj: class}
	if env == nil {
		return c // the snapshot cannot allocate (see Snapshot.envErr)
	}
	c.sel = make([]*celenv.Selector, len(class.Spec.Selectors))
	c.selErr = make([]error, len(class.Spec.Selectors))
	for i, sel := range class.Spec.Selectors {
		if sel.CEL != nil {
			c.sel[i], c.selErr[i] = env.Compile(sel.CEL.Expression)
		}
	}
	return c
}

// compileError is the first selector of the class that did not compile, as an input error naming the class
// and the field, or nil.
func (c *classEntry) compileError() error {
	for i, err := range c.selErr {
		if err != nil {
			return inputError("DeviceClass "+c.obj.Name, fmt.Sprintf("spec.selectors[%d].cel.expression", i), err)
		}
	}
	return nil
}

// sliceEntry is a ResourceSlice as the snapshot keeps it, indexed; its devices are prepared on first use.
// Entries are immutable once built (caches aside); a change builds a new entry, so forks can share them.
type sliceEntry struct {
	obj *resourceapi.ResourceSlice
	// seq is the order in which the slice was first added; the Kubernetes allocator reads slices in
	// the order its informer lists them, which insertion order stands in for.
	seq      uint64
	pool     PoolID
	nodeName string // spec.nodeName, "" for network-attached and per-device slices
	// nodeSel is spec.nodeSelector parsed once; nodeSelErr keeps a parse error for the moment the slice
	// is considered for a node, which is when Kubernetes reports it.
	nodeSel    *nodeaffinity.NodeSelector
	nodeSelErr error
	// taints and capOpts are what the devices are prepared with (see devices): the rules in force and
	// the capacity options when the entry was built.
	taints  *taints.Evaluator
	capOpts capacity.Options
	// perDevice is spec.perDeviceNodeSelection.
	perDevice bool
	// usesCompatibilityGroups is true when a device names compatibility groups on a counter.
	usesCompatibilityGroups bool
	// caches holds the pool built from this entry and its siblings, and the pools gathered for the node
	// whose slice list starts with this entry; a copy gets its own.
	caches *entryCaches
	// derived shares the devices' CEL views and plain consumption with the other devices of the
	// snapshot that have the same maps; nil (each device its own) when the snapshot keeps the
	// caller's objects (NoCopy).
	derived *derived
}

// deviceEntry is one device of a slice, prepared once.
type deviceEntry struct {
	// The fields every candidate check reads come first, in one cache line: on a large fleet each
	// device is read from memory, and each line is one more miss.
	slice *sliceEntry
	// caches are what the entry computes on first use, shared by copies of the entry: its selector
	// verdicts (read by every candidate check), its CEL view and what a request without capacity
	// requirements consumes of it. One pointer rather than one per cache: a DGX fleet has hundreds of
	// thousands of entries.
	caches *deviceCaches
	// taints are the effective taints: the device's own followed by those of matching DeviceTaintRules.
	taints []resourceapi.DeviceTaint
	// idx is the device's index in its slice.
	idx int
	// Flags read by every candidate check, kept here so that a check touches one cache line rather than
	// the API object: the slice's per-device node selection and skipNodeOperations, the device's
	// allowMultipleAllocations, binding conditions (a non-empty list) and counters.
	perDevice, skipNodeOps, multi, binding, counters bool
	// Flags read when a result is built, so that building it reads the API objects only where they
	// add to it: pins, the device is bound to the node it is used on (a node name, the slice's or its
	// own, or bindsToNode); lists, the slice's skipNodeOperations or the device's binding conditions or
	// binding failure conditions are set (nil and empty lists are copied as they are).
	pins, lists bool

	id  DeviceID
	api *resourceapi.Device // points into slice.obj
	// nodeSel is spec.devices[].nodeSelector parsed once (per-device node selection).
	nodeSel    *nodeaffinity.NodeSelector
	nodeSelErr error
}

// plainConsumption is the answer of capacity.Consumed for a request without capacity requirements.
type plainConsumption struct {
	consumed map[resourceapi.QualifiedName]resource.Quantity // shared: never modified
	err      error
}

func (s *sliceEntry) name() string { return s.obj.Name }

// deviceID is the ID of the slice's device i, read from the API object (the device entries need not
// be prepared).
func (s *sliceEntry) deviceID(i int) DeviceID {
	return DeviceID{Driver: s.pool.Driver, Pool: s.pool.Pool, Device: s.obj.Spec.Devices[i].Name}
}

func (s *sliceEntry) generation() int64 { return s.obj.Spec.Pool.Generation }

// newSliceEntry validates the identity fields of a slice, which must not change any more (a private copy,
// or an object the caller promised not to modify), and indexes it. Its devices are prepared when a call
// first needs them (see devices): building a large snapshot costs little more than indexing its slices,
// and slices of nodes that are never asked about cost nothing more.
func newSliceEntry(slice *resourceapi.ResourceSlice, seq uint64, ev *taints.Evaluator, capOpts capacity.Options) (*sliceEntry, error) {
	if slice == nil {
		return nil, inputError("ResourceSlice", "", errors.New("nil object"))
	}
	switch {
	case slice.Name == "":
		return nil, inputError("ResourceSlice", "metadata.name", errors.New("must not be empty"))
	case slice.Spec.Driver == "":
		return nil, inputError("ResourceSlice "+slice.Name, "spec.driver", errors.New("must not be empty"))
	case slice.Spec.Pool.Name == "":
		return nil, inputError("ResourceSlice "+slice.Name, "spec.pool.name", errors.New("must not be empty"))
	}
	// Entries never modify the object, so entries built from the same object (a fork's change replayed
	// on its parent) may share it. The entry and its caches are allocated together.
	obj := slice
	block := &struct {
		e sliceEntry
		c entryCaches
	}{}
	e := &block.e
	*e = sliceEntry{caches: &block.c,
		obj:     obj,
		seq:     seq,
		pool:    PoolID{Driver: obj.Spec.Driver, Pool: obj.Spec.Pool.Name},
		taints:  ev,
		capOpts: capOpts,
	}
	if obj.Spec.NodeName != nil {
		e.nodeName = *obj.Spec.NodeName
	}
	e.perDevice = obj.Spec.PerDeviceNodeSelection != nil && *obj.Spec.PerDeviceNodeSelection
	if obj.Spec.NodeSelector != nil {
		e.nodeSel, e.nodeSelErr = nodeaffinity.NewNodeSelector(obj.Spec.NodeSelector)
	}
	e.usesCompatibilityGroups = usesCompatibilityGroups(obj)
	return e, nil
}

// devices returns the slice's prepared devices, preparing them on first use. It is safe for concurrent
// use: two callers racing may both prepare them, one result is kept.
func (e *sliceEntry) devices() []*deviceEntry {
	if devs, ok := e.caches.devices.load(); ok {
		return devs
	}
	return e.caches.devices.publish(e.prepareDevices())
}

// deviceList is a slice entry's prepared devices, published once. The list lies in the entry's caches
// rather than behind a pointer of its own: every call reads it, on a large fleet from memory, and each
// pointer followed is one more miss. Entries are compared by pointer (a call's taken devices, a pool's
// counter layout), so all callers must see the same list: the first writer publishes it, a writer
// racing with it waits for it (two stores) and takes the published one.
type deviceList struct {
	state atomic.Uint32 // listEmpty, listPublishing or listReady
	devs  []*deviceEntry
}

const (
	listEmpty uint32 = iota
	listPublishing
	listReady
)

func (l *deviceList) load() ([]*deviceEntry, bool) {
	if l.state.Load() == listReady {
		return l.devs, true
	}
	return nil, false
}

// publish sets the list unless one was set already, and returns the list set.
func (l *deviceList) publish(devs []*deviceEntry) []*deviceEntry {
	if l.state.CompareAndSwap(listEmpty, listPublishing) {
		l.devs = devs
		l.state.Store(listReady)
		return devs
	}
	for l.state.Load() != listReady {
		runtime.Gosched()
	}
	return l.devs
}

// prepareDevices builds the device entries: IDs, effective taints, per-device node selectors and the
// flags candidate checks read. What is needed less often (CEL views, verdicts, plain consumption, twins)
// is computed on first use. Entries and their caches are allocated in blocks, a few allocations per
// slice rather than per device.
func (e *sliceEntry) prepareDevices() []*deviceEntry {
	obj := e.obj
	n := len(obj.Spec.Devices)
	entries := make([]deviceEntry, n)
	caches := make([]deviceCaches, n)
	devs := make([]*deviceEntry, n)
	for i := range obj.Spec.Devices {
		dev := &obj.Spec.Devices[i]
		d := &entries[i]
		*d = deviceEntry{
			id:     DeviceID{Driver: e.pool.Driver, Pool: e.pool.Pool, Device: dev.Name},
			slice:  e,
			api:    dev,
			caches: &caches[i],
			idx:    i,

			perDevice:   e.perDevice,
			skipNodeOps: len(obj.Spec.SkipNodeOperations) > 0,
			multi:       dev.AllowMultipleAllocations != nil && *dev.AllowMultipleAllocations,
			binding:     len(dev.BindingConditions) > 0,
			counters:    len(dev.ConsumesCounters) > 0,
		}
		nodeName := obj.Spec.NodeName
		if e.perDevice {
			nodeName = dev.NodeName
		}
		d.pins = nodeName != nil || dev.BindsToNode != nil && *dev.BindsToNode
		d.lists = obj.Spec.SkipNodeOperations != nil || dev.BindingConditions != nil || dev.BindingFailureConditions != nil
		if dev.NodeSelector != nil {
			d.nodeSel, d.nodeSelErr = nodeaffinity.NewNodeSelector(dev.NodeSelector)
		}
		d.taints = effectiveTaints(e.taints, d)
		devs[i] = d
	}
	return devs
}

// deviceCaches are what a device entry computes on first use; copies of the entry share them.
type deviceCaches struct {
	// verdicts caches selector results, across Allocate calls and forks.
	verdicts verdicts
	// view is the prepared CEL view, built on first use.
	view lazyView
	// plain is what a request without capacity requirements consumes of the device (consumable
	// capacity), computed on first use: most requests have none.
	plain atomic.Pointer[plainConsumption]
	// ledger is the device's capacity ledger holding what the shares of one state use (see
	// stateLedger), kept for the state the device was last asked of.
	ledger atomic.Pointer[stateLedger]
	// caps is the id of the device's capacities in the snapshot's consumedMemo.
	caps atomic.Pointer[capsIdent]
}

// stateLedger is a device's capacity ledger holding used, the consumed capacity a state records for
// it (state.consumed[id], nil for none).
type stateLedger struct {
	used map[resourceapi.QualifiedName]resource.Quantity
	l    *capacity.Ledger
}

// stateLedger returns the device's capacity ledger holding used, to read only (a call that adds a
// share changes a clone): a state replaces a device's consumed map when its shares change and never
// modifies one, so the map itself says which use the ledger holds, and a filter pass over a fleet
// builds each device's ledger once per change of its shares rather than in every call.
func (d *deviceEntry) stateLedger(used map[resourceapi.QualifiedName]resource.Quantity) *capacity.Ledger {
	if s := d.caches.ledger.Load(); s != nil && sameMap(s.used, used) {
		return s.l
	}
	l := capacity.NewLedger(d.api.Capacity)
	l.Add(used)
	d.caches.ledger.Store(&stateLedger{used: used, l: l})
	return l
}

// sameMap reports whether x and y are the same map (both nil included).
func sameMap[K comparable, V any](x, y map[K]V) bool {
	return mapID(x) == mapID(y)
}

// plainConsumed is capacity.Consumed for a request without capacity requirements. The map must not be
// modified.
func (d *deviceEntry) plainConsumed() (map[resourceapi.QualifiedName]resource.Quantity, error) {
	p := d.caches.plain.Load()
	if p == nil {
		d.caches.plain.CompareAndSwap(nil, d.slice.derived.plainConsumed(d.api.Capacity, d.slice.capOpts))
		p = d.caches.plain.Load()
	}
	return p.consumed, p.err
}

// effectiveTaints are a device's own taints followed by those the rules give it.
func effectiveTaints(ev *taints.Evaluator, d *deviceEntry) []resourceapi.DeviceTaint {
	if ev == nil {
		return d.api.Taints
	}
	return ev.Taints(d.id.Driver, d.id.Pool, d.api)
}

// twins groups the devices of a slice that no check can tell apart: everything but the name is equal
// (CEL does not see the name) and nothing ties a device to others or to state outside the slice (see
// plainDevice; shares neither). Entry i is the index of the first device that device i is
// interchangeable with (i itself for the first of a group), or -1. Only a search that fails on a device
// asks, so the comparison is made then, once per entry.
func (e *sliceEntry) twins() []int {
	if p := e.caches.twins.Load(); p != nil {
		return *p
	}
	devs := e.devices()
	tw := make([]int, len(devs))
	var firsts []int
	for i, d := range devs {
		tw[i] = -1
		if !plainDevice(d) || d.multi {
			continue
		}
		for _, f := range firsts {
			if sameButName(devs[f].api, d.api) {
				tw[i] = f
				break
			}
		}
		if tw[i] < 0 {
			tw[i] = i
			firsts = append(firsts, i)
		}
	}
	e.caches.twins.CompareAndSwap(nil, &tw)
	return *e.caches.twins.Load()
}

func sameButName(x, y *resourceapi.Device) bool {
	if len(x.Attributes) != len(y.Attributes) || len(x.Capacity) != len(y.Capacity) {
		return false
	}
	// Attributes and capacities are compared by hand (reflection allocates for every map entry); the
	// remaining fields are rarely set and compared generically.
	for k, xa := range x.Attributes {
		ya, ok := y.Attributes[k]
		if !ok || !sameAttribute(xa, ya) {
			return false
		}
	}
	if !sameCapacity(x.Capacity, y.Capacity) {
		return false
	}
	xr, yr := *x, *y
	xr.Name, yr.Name = "", ""
	xr.Attributes, yr.Attributes = nil, nil
	xr.Capacity, yr.Capacity = nil, nil
	return equality.Semantic.DeepEqual(xr, yr)
}

// sameCapacity: the same capacities with the same values and request policies.
func sameCapacity(x, y map[resourceapi.QualifiedName]resourceapi.DeviceCapacity) bool {
	if len(x) != len(y) {
		return false
	}
	for k, xc := range x {
		yc, ok := y[k]
		if !ok || xc.Value.Cmp(yc.Value) != 0 || (xc.RequestPolicy != nil) != (yc.RequestPolicy != nil) ||
			(xc.RequestPolicy != nil && !equality.Semantic.DeepEqual(xc.RequestPolicy, yc.RequestPolicy)) {
			return false
		}
	}
	return true
}

func sameAttribute(x, y resourceapi.DeviceAttribute) bool {
	return samePtr(x.IntValue, y.IntValue) && samePtr(x.BoolValue, y.BoolValue) &&
		samePtr(x.StringValue, y.StringValue) && samePtr(x.VersionValue, y.VersionValue) &&
		sameList(x.IntValues, y.IntValues) && sameList(x.StringValues, y.StringValues) &&
		sameList(x.BoolValues, y.BoolValues) && sameList(x.VersionValues, y.VersionValues)
}

// sameList: equal elements, and nil only together (an empty list and a missing one may read differently).
func sameList[T comparable](x, y []T) bool {
	return (x == nil) == (y == nil) && slices.Equal(x, y)
}

func samePtr[T comparable](x, y *T) bool {
	return (x == nil) == (y == nil) && (x == nil || *x == *y)
}

// twinsOf: x and y are twins of one slice, which mirror each other under every check (selectors and
// derived attributes see the same CEL view, constraints the same attributes, capacity the same values).
func twinsOf(x, y *deviceEntry) bool {
	if x.slice != y.slice {
		return false
	}
	tw := x.slice.twins()
	return tw[x.idx] >= 0 && tw[x.idx] == tw[y.idx]
}

// hasTwins: the device may have interchangeable siblings (see twins).
func (d *deviceEntry) hasTwins() bool { return d.slice.twins()[d.idx] >= 0 }

// withTaints returns a copy of the entry for other rules. Devices already prepared are copied with their
// effective taints recomputed, sharing their CEL views and verdicts; otherwise the copy prepares its own.
func (s *sliceEntry) withTaints(ev *taints.Evaluator) *sliceEntry {
	c := *s
	c.caches = &entryCaches{}
	c.taints = ev
	if old, ok := s.caches.devices.load(); ok {
		devs := make([]*deviceEntry, len(old))
		entries := make([]deviceEntry, len(old))
		for i, d := range old {
			entries[i] = *d
			nd := &entries[i]
			nd.slice = &c
			nd.taints = effectiveTaints(ev, nd)
			devs[i] = nd
		}
		c.caches.devices.publish(devs)
	}
	return &c
}

// nodeMatches decides whether a node may use something published with nodeName, allNodes or a node
// selector, as the Kubernetes allocator does: a node name must equal the node's, allNodes matches every
// node, a selector is matched against the node's labels and fields.
func nodeMatches(node *v1.Node, nodeName string, allNodes bool, parsed *nodeaffinity.NodeSelector, parseErr error, hasSelector bool) (bool, error) {
	switch {
	case nodeName != "":
		return node.Name == nodeName, nil
	case allNodes:
		return true, nil
	case hasSelector:
		if parseErr != nil {
			return false, parseErr
		}
		return parsed.Match(node), nil
	}
	return false, nil
}

// sliceFor reports whether a slice publishes devices for the node.
func (s *sliceEntry) sliceFor(node *v1.Node) (bool, error) {
	spec := &s.obj.Spec
	allNodes := spec.AllNodes != nil && *spec.AllNodes
	if s.nodeName != "" || allNodes || spec.NodeSelector != nil {
		ok, err := nodeMatches(node, s.nodeName, allNodes, s.nodeSel, s.nodeSelErr, spec.NodeSelector != nil)
		if err != nil {
			return false, nodeInputError("ResourceSlice "+s.obj.Name, "spec.nodeSelector", fmt.Errorf("node selection: %w", err))
		}
		return ok, nil
	}
	if s.perDevice {
		for i, d := range s.devices() {
			ok, err := d.availableOn(node)
			if err != nil {
				return false, nodeInputError("ResourceSlice "+s.obj.Name, fmt.Sprintf("spec.devices[%d].nodeSelector", i), fmt.Errorf("node selection: %w", err))
			}
			if ok {
				return true, nil
			}
		}
	}
	return false, nil
}

// availableOn applies per-device node selection.
func (d *deviceEntry) availableOn(node *v1.Node) (bool, error) {
	nodeName := ""
	if d.api.NodeName != nil {
		nodeName = *d.api.NodeName
	}
	allNodes := d.api.AllNodes != nil && *d.api.AllNodes
	return nodeMatches(node, nodeName, allNodes, d.nodeSel, d.nodeSelErr, d.api.NodeSelector != nil)
}

// lazyView builds a device's prepared CEL view the first time a selector or derived attribute needs it:
// most devices of a large cluster are never evaluated against a new expression again once their
// verdicts are cached, and building the view is most of the cost of adding a slice. Copies of an entry
// share it. It is safe for concurrent use; two callers racing may both build the view, one is kept. It
// holds only the view: the device's driver and API object are the entry's, so that the caches of a
// DGX fleet's hundreds of thousands of devices hold no copy of them.
type lazyView struct {
	p atomic.Pointer[celenv.Device]
}

// view returns the device's prepared CEL view, building it on first use.
func (d *deviceEntry) view() *celenv.Device {
	l := &d.caches.view
	if v := l.p.Load(); v != nil {
		return v
	}
	v := d.slice.derived.view(d.id.Driver, d.api)
	if l.p.CompareAndSwap(nil, v) {
		return v
	}
	return l.p.Load()
}
