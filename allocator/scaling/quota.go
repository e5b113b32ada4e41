package scaling

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/capacity"
	"github.com/dralloc/dralloc/celenv"
)

// ClassMatcher compiles the selectors of the DeviceClasses with celenv and returns the class-membership
// function [capacity.NewInventory] takes: a device belongs to every class all of whose selectors match it
// (a class without selectors selects every device), as the scheduler applies a class. Classes are
// returned sorted by name. A selector that does not compile is an error naming the class and field; one
// that fails on a device is an error naming the device, returned by NewInventory.
func ClassMatcher(classes []*resourceapi.DeviceClass) (func(driver string, dev *resourceapi.Device) ([]string, error), error) {
	env, err := celenv.NewEnv(celenv.Options{})
	if err != nil {
		return nil, err
	}
	type compiled struct {
		name      string
		selectors []*celenv.Selector
	}
	var all []compiled
	for i, c := range classes {
		if c == nil {
			return nil, &allocator.InputError{Object: fmt.Sprintf("classes[%d]", i), Err: errors.New("nil object")}
		}
		cc := compiled{name: c.Name}
		for j, s := range c.Spec.Selectors {
			if s.CEL == nil {
				continue
			}
			sel, err := env.Compile(s.CEL.Expression)
			if err != nil {
				return nil, &allocator.InputError{Object: "DeviceClass " + c.Name, Field: fmt.Sprintf("spec.selectors[%d].cel.expression", j), Err: err}
			}
			cc.selectors = append(cc.selectors, sel)
		}
		all = append(all, cc)
	}
	slices.SortFunc(all, func(x, y compiled) int { return strings.Compare(x.name, y.name) })
	return func(driver string, dev *resourceapi.Device) ([]string, error) {
		d := celenv.NewDevice(driver, dev)
		var out []string
	classes:
		for _, c := range all {
			for _, s := range c.selectors {
				ok, err := s.Matches(context.Background(), d)
				if err != nil {
					return nil, fmt.Errorf("DeviceClass %s: %w", c.name, err)
				}
				if !ok {
					continue classes
				}
			}
			out = append(out, c.name)
		}
		return out, nil
	}, nil
}

// NewInventory is capacity.NewInventory with the classes' own selectors as the matcher ([ClassMatcher]).
func NewInventory(sl []*resourceapi.ResourceSlice, classes []*resourceapi.DeviceClass) (*capacity.Inventory, error) {
	m, err := ClassMatcher(classes)
	if err != nil {
		return nil, err
	}
	return capacity.NewInventory(sl, m)
}

// Quota is what each namespace is charged.
type Quota struct {
	// Allocated is the exact charge of the allocated claims (capacity.ChargeAllocation), per namespace:
	// those of pods through ResourceClaims and through DRA extended resources alike, since the scheduler
	// writes the latter as claims too.
	Allocated map[string]capacity.Charge
	// Pending is the worst-case charge of the pending pods' claims not allocated yet
	// (capacity.ChargeClaim: All counted on the node where the class has the most devices,
	// firstAvailable as its largest alternative), including claims still to be generated from templates
	// and the devices of extended resources backed by DRA, per namespace.
	Pending map[string]capacity.Charge
	// Refused are the pending pods that could not be charged, in the order given, each with why (a
	// claim or template that does not exist, a claim the pod may not use, a claim spec that cannot be
	// priced); they are in no namespace's Pending. Empty when every pending pod was charged.
	Refused []RefusedPod
}

// RefusedPod is a pending pod [Charges] could not charge.
type RefusedPod struct {
	// Pod is "<namespace>/<name>", or "pending[<index>]" for a nil pod.
	Pod string
	// Err says why, naming the pod and the field; it wraps the sentinels of the package that refused
	// it (pods.ErrClaimNotFound, allocator.ErrInvalidInput, ...).
	Err error
}

// Charges computes the quota charges of the cluster's allocated claims and of the pending pods. inv
// ([NewInventory]) bounds All requests and supplies capacities; it may be nil. A pending pod's extended
// resource backed by DRA (a DeviceClass's spec.extendedResourceName, or
// deviceclass.resource.kubernetes.io/<class>) is charged as that many devices of the class, even though
// a node whose device plugin advertises the resource would serve it without DRA. A pending pod that
// cannot be charged (a missing claim or template, a claim it may not use, a nil entry) is listed in
// Quota.Refused with its error and charged nothing; the other pods are charged. The error is for the
// allocated claims, which are charged all or none. Inputs are not modified.
func Charges(c *pods.Cluster, inv *capacity.Inventory, pending []*v1.Pod) (*Quota, error) {
	q := &Quota{Allocated: map[string]capacity.Charge{}, Pending: map[string]capacity.Charge{}}
	snap := c.Snapshot()
	for _, claim := range snap.Claims("") {
		if claim.Status.Allocation == nil {
			continue
		}
		ch, err := capacity.ChargeAllocation(claim, inv)
		if err != nil {
			return nil, err
		}
		q.Allocated[claim.Namespace] = sum(q.Allocated[claim.Namespace], ch)
	}
	features := snap.Features()
	opts := capacity.Options{Features: &features}
	for i, pod := range pending {
		// A pod is refused alone: one pod naming a template not created yet (or a claim it may not
		// use) must not hide what every other namespace asks for.
		if pod == nil {
			name := fmt.Sprintf("pending[%d]", i)
			q.Refused = append(q.Refused, RefusedPod{Pod: name, Err: &allocator.InputError{Object: name, Err: errors.New("nil object")}})
			continue
		}
		ch, err := pendingCharge(c, inv, pod, opts)
		if err != nil {
			q.Refused = append(q.Refused, RefusedPod{Pod: pod.Namespace + "/" + pod.Name, Err: err})
			continue
		}
		q.Pending[pod.Namespace] = sum(q.Pending[pod.Namespace], ch)
	}
	return q, nil
}

// pendingCharge is the worst-case charge of a pending pod's unallocated claims and DRA extended
// resources. A claim shared with other pods is charged once per pod that names it.
func pendingCharge(c *pods.Cluster, inv *capacity.Inventory, pod *v1.Pod, opts capacity.Options) (capacity.Charge, error) {
	var total capacity.Charge
	pcs, err := c.PodClaims(pod)
	if err != nil {
		return total, err
	}
	seen := map[string]bool{}
	for _, pc := range pcs {
		if pc.Claim.Status.Allocation != nil || seen[pc.Claim.Name] {
			continue
		}
		seen[pc.Claim.Name] = true
		ch, err := capacity.ChargeClaim(pc.Claim.Spec, inv, opts)
		if err != nil {
			//lint:ignore ST1005 errors name the object first, by its kind, as Kubernetes writes them
			return total, fmt.Errorf("Pod %s/%s: claim %s: %w", pod.Namespace, pod.Name, pc.Claim.Name, err)
		}
		total = sum(total, ch)
	}
	if spec := extendedSpec(c.Snapshot().Classes(), pod); len(spec.Devices.Requests) > 0 {
		ch, err := capacity.ChargeClaim(spec, inv, opts)
		if err != nil {
			//lint:ignore ST1005 errors name the object first, by its kind, as Kubernetes writes them
			return total, fmt.Errorf("Pod %s/%s: extended resources: %w", pod.Namespace, pod.Name, err)
		}
		total = sum(total, ch)
	}
	return total, nil
}

// extendedSpec is a claim spec with one ExactCount request per extended resource of the pod backed by
// a DeviceClass, for as many devices as the pod requests (component-helpers' PodRequests: containers,
// init containers and sidecars as the scheduler counts them). Classes serve names as in kube-scheduler's
// dynamicresources plugin (and allocator/pods): every class its implicit
// deviceclass.resource.kubernetes.io/<class>; of several classes with one spec.extendedResourceName the
// one created last, and of those created together the one whose name sorts first.
func extendedSpec(classes []*resourceapi.DeviceClass, pod *v1.Pod) resourceapi.ResourceClaimSpec {
	byName := map[v1.ResourceName]*resourceapi.DeviceClass{}
	for _, c := range classes { // sorted by name
		byName[v1.ResourceName(resourceapi.ResourceDeviceClassPrefix+c.Name)] = c
	}
	for _, c := range classes {
		if c.Spec.ExtendedResourceName == nil {
			continue
		}
		name := v1.ResourceName(*c.Spec.ExtendedResourceName)
		if prev, ok := byName[name]; ok && prev.Spec.ExtendedResourceName != nil && *prev.Spec.ExtendedResourceName == string(name) &&
			!c.CreationTimestamp.After(prev.CreationTimestamp.Time) {
			continue
		}
		byName[name] = c
	}
	var spec resourceapi.ResourceClaimSpec
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	names := make([]string, 0, len(reqs))
	for name := range reqs {
		names = append(names, string(name))
	}
	slices.Sort(names)
	for _, name := range names {
		class, ok := byName[v1.ResourceName(name)]
		n := reqs[v1.ResourceName(name)]
		if !ok || n.Value() <= 0 {
			continue
		}
		className := class.Name
		spec.Devices.Requests = append(spec.Devices.Requests, resourceapi.DeviceRequest{
			Name:    fmt.Sprintf("extended-%d", len(spec.Devices.Requests)),
			Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: className, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: n.Value()},
		})
	}
	return spec
}

// sum adds two charges into a new one.
func sum(a, b capacity.Charge) capacity.Charge {
	out := capacity.Charge{Devices: map[string]int64{}, Capacity: map[string]map[resourceapi.QualifiedName]resource.Quantity{}, Counters: map[string]resource.Quantity{}}
	for _, c := range []capacity.Charge{a, b} {
		for k, v := range c.Devices {
			out.Devices[k] += v
		}
		for class, m := range c.Capacity {
			if out.Capacity[class] == nil {
				out.Capacity[class] = map[resourceapi.QualifiedName]resource.Quantity{}
			}
			for name, q := range m {
				s := out.Capacity[class][name]
				s.Add(q)
				out.Capacity[class][name] = s
			}
		}
		for name, q := range c.Counters {
			s := out.Counters[name]
			s.Add(q)
			out.Counters[name] = s
		}
		for _, u := range c.Unbounded {
			if !slices.Contains(out.Unbounded, u) {
				out.Unbounded = append(out.Unbounded, u)
			}
		}
	}
	slices.Sort(out.Unbounded)
	return out
}
