package verify

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"

	"github.com/dralloc/dralloc/taints"
)

// request is one request or subrequest of a claim, whichever kind it is.
type request struct {
	name        string // "req" or "req/sub"
	parent      string // "req" for a subrequest, else ""
	class       string
	selectors   []resourceapi.DeviceSelector
	mode        resourceapi.DeviceAllocationMode
	count       int64
	admin       bool
	tolerations []resourceapi.DeviceToleration
	capacity    *resourceapi.CapacityRequirements
	derived     []resourceapi.DeviceDerivedAttribute
}

func exactRequest(name string, e *resourceapi.ExactDeviceRequest) *request {
	return &request{name: name, class: e.DeviceClassName, selectors: e.Selectors, mode: e.AllocationMode, count: e.Count,
		admin: ptr.Deref(e.AdminAccess, false), tolerations: e.Tolerations, capacity: e.Capacity, derived: e.DerivedAttributes}
}

func subRequest(parent string, s *resourceapi.DeviceSubRequest) *request {
	return &request{name: parent + "/" + s.Name, parent: parent, class: s.DeviceClassName, selectors: s.Selectors, mode: s.AllocationMode,
		count: s.Count, tolerations: s.Tolerations, capacity: s.Capacity, derived: s.DerivedAttributes}
}

// claimCheck is the state of checking one claim.
type claimCheck struct {
	*checker
	index  int
	claim  *resourceapi.ResourceClaim
	name   string
	result *resourceapi.AllocationResult
	// byName holds every request and subrequest by name.
	byName map[string]*request
	// chosen maps each top-level request to the request or subrequest its results use.
	chosen map[string]*request
	// devs are the devices of the results (nil where unknown), in result order.
	devs []*device
	reqs []*request
}

func (cc *claimCheck) violation(rule Rule, req string, result int, dev DeviceID, format string, args ...any) {
	cc.report(Violation{Claim: cc.name, Request: req, Result: result, Device: dev, Rule: rule, Message: fmt.Sprintf(format, args...)})
}

func (c *checker) checkClaim(index int, claim *resourceapi.ResourceClaim, result *resourceapi.AllocationResult) {
	cc := &claimCheck{checker: c, index: index, claim: claim, name: claimName(claim), result: result,
		byName: map[string]*request{}, chosen: map[string]*request{}}
	if !cc.checkRequests() {
		return
	}
	results := result.Devices.Results
	cc.devs = make([]*device, len(results))
	cc.reqs = make([]*request, len(results))
	if len(results) > resourceapi.AllocationResultsMaxSize {
		cc.violation(RuleResultCount, "", -1, DeviceID{}, "%d results exceed the limit of %d per claim", len(results), resourceapi.AllocationResultsMaxSize)
	}
	perRequest := map[string][]int{} // chosen request or subrequest name → result indexes
	for i := range results {
		r := &results[i]
		id := DeviceID{Driver: r.Driver, Pool: r.Pool, Device: r.Device}
		req := cc.byName[r.Request]
		if req == nil || (req.parent == "" && cc.hasSubrequests(req.name)) {
			cc.violation(RuleUnknownRequest, r.Request, i, id, "no request or subrequest %q in the claim", r.Request)
			continue
		}
		top := req.name
		if req.parent != "" {
			top = req.parent
		}
		if prev := cc.chosen[top]; prev != nil && prev != req {
			cc.violation(RuleResultCount, r.Request, i, id, "results use both %s and %s of request %s; firstAvailable allows one", prev.name, req.name, top)
			continue
		}
		cc.chosen[top] = req
		cc.reqs[i] = req
		perRequest[req.name] = append(perRequest[req.name], i)
		cc.devs[i] = cc.checkDevice(i, req, r)
	}
	for _, dr := range claim.Spec.Devices.Requests {
		req := cc.chosen[dr.Name]
		if req == nil {
			cc.violation(RuleResultCount, dr.Name, -1, DeviceID{}, "no devices allocated for the request")
			continue
		}
		cc.checkCount(req, perRequest[req.name])
	}
	cc.checkConstraints()
	cc.checkConfig()
	cc.checkNodeSelector()
}

func (cc *claimCheck) hasSubrequests(name string) bool {
	for _, r := range cc.claim.Spec.Devices.Requests {
		if r.Name == name {
			return len(r.FirstAvailable) > 0
		}
	}
	return false
}

// checkRequests indexes the claim's requests and reports what Kubernetes rejects before allocating (gated
// fields, unknown request types). It returns false when the results cannot be interpreted.
func (cc *claimCheck) checkRequests() bool {
	ok := true
	devs := cc.claim.Spec.Devices
	if len(devs.Requests) == 0 {
		cc.violation(RuleInvalidInput, "", -1, DeviceID{}, "spec.devices.requests is empty")
		return false
	}
	for i := range devs.Requests {
		dr := &devs.Requests[i]
		switch {
		case dr.Exactly != nil && len(dr.FirstAvailable) == 0:
			r := exactRequest(dr.Name, dr.Exactly)
			cc.byName[r.name] = r
			cc.checkGates(r)
		case dr.Exactly == nil && len(dr.FirstAvailable) > 0:
			if !cc.features.DRAPrioritizedList {
				cc.violation(RuleFeature, dr.Name, -1, DeviceID{}, "has subrequests, but the DRAPrioritizedList feature is disabled")
			}
			cc.byName[dr.Name] = &request{name: dr.Name}
			for j := range dr.FirstAvailable {
				r := subRequest(dr.Name, &dr.FirstAvailable[j])
				cc.byName[r.name] = r
				cc.checkGates(r)
			}
		default:
			cc.violation(RuleInvalidInput, dr.Name, -1, DeviceID{}, "spec.devices.requests[%d]: exactly one of exactly and firstAvailable must be set", i)
			ok = false
		}
	}
	for i, con := range devs.Constraints {
		// The stable variant of the Kubernetes allocator knows only matchAttribute.
		if con.MatchAttribute == nil && con.DistinctAttribute != nil && cc.features.Implementation() == variantStable {
			cc.violation(RuleFeature, "", -1, DeviceID{}, "spec.devices.constraints[%d]: distinctAttribute is not supported with only the GA feature gates enabled (unsupported constraint type)", i)
		}
		if con.MatchAttribute == nil && con.DistinctAttribute == nil {
			cc.violation(RuleInvalidInput, "", -1, DeviceID{}, "spec.devices.constraints[%d]: empty constraint (unsupported constraint type?)", i)
		}
	}
	return ok
}

func (cc *claimCheck) checkGates(r *request) {
	if r.admin && !cc.features.DRAAdminAccess {
		cc.violation(RuleFeature, r.name, -1, DeviceID{}, "admin access is requested, but the feature is disabled")
	}
	// The stable variant of the Kubernetes allocator does not know capacity requests and ignores them.
	if r.capacity != nil && !cc.features.DRAConsumableCapacity && cc.features.Implementation() >= variantIncubating {
		cc.violation(RuleFeature, r.name, -1, DeviceID{}, "has capacity requests, but the DRAConsumableCapacity feature is disabled")
	}
	if len(r.derived) > 0 && !cc.features.DRADerivedAttributes {
		cc.violation(RuleFeature, r.name, -1, DeviceID{}, "cannot handle request with derived attributes, the feature is disabled")
	}
	for i, s := range r.selectors {
		if s.CEL == nil {
			cc.violation(RuleInvalidInput, r.name, -1, DeviceID{}, "selector #%d: CEL expression empty (unsupported selector type?)", i)
		}
	}
	switch r.mode {
	case resourceapi.DeviceAllocationModeExactCount, resourceapi.DeviceAllocationModeAll:
	case "":
		r.mode = resourceapi.DeviceAllocationModeExactCount
		if r.count == 0 {
			r.count = 1
		}
	default:
		cc.violation(RuleInvalidInput, r.name, -1, DeviceID{}, "unsupported count mode %s", r.mode)
	}
	if _, ok := cc.classes[r.class]; !ok {
		cc.violation(RuleClass, r.name, -1, DeviceID{}, "device class %q not found", r.class)
	}
}

// checkCount checks the number of devices of the chosen request or subrequest.
func (cc *claimCheck) checkCount(req *request, idx []int) {
	switch req.mode {
	case resourceapi.DeviceAllocationModeExactCount:
		if int64(len(idx)) != req.count {
			cc.violation(RuleResultCount, req.name, -1, DeviceID{}, "%d devices allocated, exactly %d requested", len(idx), req.count)
		}
	case resourceapi.DeviceAllocationModeAll:
		cc.checkAll(req, idx)
	}
	seen := map[DeviceID]int{}
	for _, i := range idx {
		r := cc.result.Devices.Results[i]
		id := DeviceID{Driver: r.Driver, Pool: r.Pool, Device: r.Device}
		if first, dup := seen[id]; dup {
			cc.violation(RuleInUse, req.name, i, id, "device allocated twice for the request (results %d and %d)", first, i)
		}
		seen[id] = i
	}
}

// checkAll checks that a request with allocationMode All got exactly the devices it matches on the node.
func (cc *claimCheck) checkAll(req *request, idx []int) {
	want := map[DeviceID]bool{}
	for _, p := range cc.pools {
		if !p.visible {
			continue
		}
		if p.incomplete {
			cc.violation(RulePool, req.name, -1, DeviceID{}, "asks for all devices, but resource pool %s/%s is currently being updated", p.key.driver, p.key.pool)
			return
		}
		if p.invalid != "" {
			cc.violation(RulePool, req.name, -1, DeviceID{}, "asks for all devices, but resource pool %s/%s is currently invalid: %s", p.key.driver, p.key.pool, p.invalid)
			return
		}
	}
	for _, d := range cc.devices {
		if !d.pool.visible || !d.sliceTargets || d.ignored != "" || !d.reach {
			continue
		}
		if !cc.bindingAllowed(d) {
			continue
		}
		if ok, _ := cc.selectable(req, d); !ok {
			continue
		}
		if cc.features.DRAConsumableCapacity && !cc.staticCapacityFits(req, d) {
			continue
		}
		want[d.id] = true
	}
	if len(want) == 0 {
		cc.violation(RuleResultCount, req.name, -1, DeviceID{}, "asks for all devices, but no device matches")
		return
	}
	got := map[DeviceID]bool{}
	for _, i := range idx {
		r := cc.result.Devices.Results[i]
		id := DeviceID{Driver: r.Driver, Pool: r.Pool, Device: r.Device}
		got[id] = true
		if !want[id] {
			cc.violation(RuleResultCount, req.name, i, id, "allocation mode All: the device is not one of the matching devices")
		}
	}
	for id := range want {
		if !got[id] {
			cc.violation(RuleResultCount, req.name, -1, id, "allocation mode All: a matching device is missing")
		}
	}
}

func (cc *claimCheck) bindingAllowed(d *device) bool {
	return len(d.dev.BindingConditions) == 0 || (cc.features.DRADeviceBindingConditions && cc.features.DRAResourceClaimDeviceStatus)
}

// staticCapacityFits reports whether the device could serve the request's capacity on its own, ignoring other
// shares: every requested capacity exists and the policy admits the amount within the device's value.
func (cc *claimCheck) staticCapacityFits(req *request, d *device) bool {
	_, err := cc.consumedFor(req, d)
	return err == nil
}

// checkDevice checks one result entry against its device and request. It returns the device, or nil when the
// device is unknown.
func (cc *claimCheck) checkDevice(i int, req *request, r *resourceapi.DeviceRequestAllocationResult) *device {
	id := DeviceID{Driver: r.Driver, Pool: r.Pool, Device: r.Device}
	d := cc.devices[id]
	if d == nil {
		cc.violation(RuleUnknownDevice, req.name, i, id, "no such device in the newest generation of pool %s/%s", r.Driver, r.Pool)
		return nil
	}
	switch {
	case d.ignored != "":
		cc.violation(RuleFeature, req.name, i, id, "%s", d.ignored)
	case d.pool.incomplete:
		cc.violation(RulePool, req.name, i, id, "resource pool %s/%s is incomplete", r.Driver, r.Pool)
	case d.pool.invalid != "":
		cc.violation(RulePool, req.name, i, id, "resource pool %s/%s is invalid: %s", r.Driver, r.Pool, d.pool.invalid)
	}
	if !d.reach && d.ignored == "" {
		cc.violation(RuleNode, req.name, i, id, "node %s cannot reach the device", cc.in.Node.Name)
	}
	if len(d.dev.ConsumesCounters) > 0 && !cc.features.DRAPartitionableDevices {
		cc.violation(RuleFeature, req.name, i, id, "device consumes counters, but the DRAPartitionableDevices feature is disabled")
	}
	if !cc.bindingAllowed(d) {
		cc.violation(RuleFeature, req.name, i, id, "device has binding conditions, but DRADeviceBindingConditions or DRAResourceClaimDeviceStatus is disabled")
	}
	// Only the experimental variant of the Kubernetes allocator knows skipNodeOperations; the others ignore it.
	if len(d.slice.Spec.SkipNodeOperations) > 0 && cc.features.Implementation() == variantExperimental {
		switch {
		case !cc.features.DRAOptionalNodeOperations:
			cc.violation(RuleFeature, req.name, i, id, "device skips node operations, but the DRAOptionalNodeOperations feature is disabled")
		case cc.in.Node != nil && !hasDeclaredFeature(cc.in.Node.Status.DeclaredFeatures, "DRAOptionalNodeOperations"):
			cc.violation(RuleNode, req.name, i, id, "device skips node operations, but node %s does not declare DRAOptionalNodeOperations", cc.in.Node.Name)
		}
	}
	if ok, err := cc.selectable(req, d); err != nil {
		cc.violation(RuleCEL, req.name, i, id, "%v", err)
	} else if !ok {
		// selectable reported which selector rejected the device.
		cc.violation(cc.matches[matchKey{cc.index, req.name, id}].rule, req.name, i, id, "%s", cc.matches[matchKey{cc.index, req.name, id}].reason)
	}
	if cc.features.DRADeviceTaints {
		if taint, blocked := taints.Blocking(cc.rules.Taints(id.Driver, id.Pool, d.dev), req.tolerations); blocked {
			cc.violation(RuleTaint, req.name, i, id, "taint %s=%s:%s is not tolerated", taint.Key, taint.Value, taint.Effect)
		}
	}
	if !equality.Semantic.DeepEqual(nilIfEmpty(r.Tolerations), nilIfEmpty(req.tolerations)) {
		cc.violation(RuleTolerations, req.name, i, id, "result tolerations %v differ from the request's %v", r.Tolerations, req.tolerations)
	}
	if ptr.Deref(r.AdminAccess, false) != req.admin || (r.AdminAccess != nil && !*r.AdminAccess) {
		cc.violation(RuleAdminAccess, req.name, i, id, "result adminAccess %v, request adminAccess %v", ptr.Deref(r.AdminAccess, false), req.admin)
	}
	cc.checkBinding(i, req, r, d)
	return d
}

func hasDeclaredFeature(features []string, name string) bool {
	for _, f := range features {
		if f == name {
			return true
		}
	}
	return false
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

func (cc *claimCheck) checkBinding(i int, req *request, r *resourceapi.DeviceRequestAllocationResult, d *device) {
	var wantCond, wantFail []string
	if cc.features.DRADeviceBindingConditions && cc.features.DRAResourceClaimDeviceStatus {
		wantCond, wantFail = d.dev.BindingConditions, d.dev.BindingFailureConditions
	}
	if !equality.Semantic.DeepEqual(nilIfEmpty(r.BindingConditions), nilIfEmpty(wantCond)) ||
		!equality.Semantic.DeepEqual(nilIfEmpty(r.BindingFailureConditions), nilIfEmpty(wantFail)) {
		cc.violation(RuleBinding, req.name, i, d.id, "binding conditions %v / failure conditions %v, the device has %v / %v",
			r.BindingConditions, r.BindingFailureConditions, wantCond, wantFail)
	}
	var wantSkip []resourceapi.SkipNodeOperation
	if cc.features.Implementation() == variantExperimental {
		wantSkip = d.slice.Spec.SkipNodeOperations
	}
	if !equality.Semantic.DeepEqual(nilIfEmpty(r.SkipNodeOperations), nilIfEmpty(wantSkip)) {
		cc.violation(RuleBinding, req.name, i, d.id, "skipNodeOperations %v, expected %v", r.SkipNodeOperations, wantSkip)
	}
}
