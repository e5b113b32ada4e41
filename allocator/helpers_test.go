package allocator_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dralloc/dralloc/allocator"
)

const (
	driverA = "driver-a.example.com"
	driverB = "driver-b.example.com"
	node1   = "node-1"
	node2   = "node-2"
)

func ptr[T any](v T) *T { return &v }

func node(name string, labels map[string]string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// device builds a device with attributes given as key=value pairs: ints, bools and strings are recognised
// by their Go type; a value of type version is a version attribute.
type version string

func device(name string, attrs map[string]any) resourceapi.Device {
	d := resourceapi.Device{Name: name}
	if len(attrs) > 0 {
		d.Attributes = map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{}
		for k, v := range attrs {
			var a resourceapi.DeviceAttribute
			switch v := v.(type) {
			case int:
				a.IntValue = ptr(int64(v))
			case bool:
				a.BoolValue = ptr(v)
			case string:
				a.StringValue = ptr(v)
			case version:
				a.VersionValue = ptr(string(v))
			case []int64:
				a.IntValues = v
			case []string:
				a.StringValues = v
			default:
				panic(fmt.Sprintf("attribute type %T", v))
			}
			d.Attributes[resourceapi.QualifiedName(k)] = a
		}
	}
	return d
}

func devices(names ...string) []resourceapi.Device {
	out := make([]resourceapi.Device, len(names))
	for i, n := range names {
		out[i] = device(n, nil)
	}
	return out
}

// nodeSlice is a slice of a node-local pool with one slice per generation.
func nodeSlice(name, nodeName, driver, pool string, devs ...resourceapi.Device) *resourceapi.ResourceSlice {
	return &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   driver,
			NodeName: ptr(nodeName),
			Pool:     resourceapi.ResourcePool{Name: pool, Generation: 1, ResourceSliceCount: 1},
			Devices:  devs,
		},
	}
}

func withPool(s *resourceapi.ResourceSlice, gen, count int64) *resourceapi.ResourceSlice {
	s.Spec.Pool.Generation = gen
	s.Spec.Pool.ResourceSliceCount = count
	return s
}

func class(name string, selectors ...string) *resourceapi.DeviceClass {
	c := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, s := range selectors {
		c.Spec.Selectors = append(c.Spec.Selectors, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: s}})
	}
	return c
}

func exact(name, className string, count int64, selectors ...string) resourceapi.DeviceRequest {
	r := resourceapi.DeviceRequest{Name: name, Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: className,
		AllocationMode:  resourceapi.DeviceAllocationModeExactCount,
		Count:           count,
	}}
	for _, s := range selectors {
		r.Exactly.Selectors = append(r.Exactly.Selectors, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: s}})
	}
	return r
}

func allOf(name, className string) resourceapi.DeviceRequest {
	return resourceapi.DeviceRequest{Name: name, Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: className,
		AllocationMode:  resourceapi.DeviceAllocationModeAll,
	}}
}

func sub(name, className string, count int64, selectors ...string) resourceapi.DeviceSubRequest {
	s := resourceapi.DeviceSubRequest{Name: name, DeviceClassName: className, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count}
	for _, e := range selectors {
		s.Selectors = append(s.Selectors, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: e}})
	}
	return s
}

func firstAvailable(name string, subs ...resourceapi.DeviceSubRequest) resourceapi.DeviceRequest {
	return resourceapi.DeviceRequest{Name: name, FirstAvailable: subs}
}

func claim(name string, reqs ...resourceapi.DeviceRequest) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
		Spec:       resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: reqs}},
	}
}

func withConstraints(c *resourceapi.ResourceClaim, cs ...resourceapi.DeviceConstraint) *resourceapi.ResourceClaim {
	c.Spec.Devices.Constraints = cs
	return c
}

func matchAttr(attr string, requests ...string) resourceapi.DeviceConstraint {
	return resourceapi.DeviceConstraint{Requests: requests, MatchAttribute: ptr(resourceapi.FullyQualifiedName(attr))}
}

func distinctAttr(attr string, requests ...string) resourceapi.DeviceConstraint {
	return resourceapi.DeviceConstraint{Requests: requests, DistinctAttribute: ptr(resourceapi.FullyQualifiedName(attr))}
}

// allocatedClaim is a claim whose status holds the given results (request "req").
func allocatedClaim(name string, results ...resourceapi.DeviceRequestAllocationResult) *resourceapi.ResourceClaim {
	c := claim(name, exact("req", "any", int64(len(results))))
	c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: results}}
	return c
}

func result(driver, pool, dev string) resourceapi.DeviceRequestAllocationResult {
	return resourceapi.DeviceRequestAllocationResult{Request: "req", Driver: driver, Pool: pool, Device: dev}
}

func quantity(s string) resource.Quantity { return resource.MustParse(s) }

// scenario is one table case: the cluster, the claims to allocate, and the expected answer.
type scenario struct {
	name      string
	features  *allocator.Features
	shareIDs  func() types.UID
	node      *v1.Node // default: node-1 without labels
	slices    []*resourceapi.ResourceSlice
	classes   []*resourceapi.DeviceClass
	allocated []*resourceapi.ResourceClaim
	rules     []*resourceapi.DeviceTaintRule
	claims    []*resourceapi.ResourceClaim
	// trusted adds the objects as an informer would, without validation (Options.TrustAPIServer): for
	// objects the API server stored before a rule existed, or that test how the allocator copes with
	// input it must refuse itself.
	trusted bool

	// want lists per claim "request=pool/device" (driver omitted when it is driverA, else
	// "request=driver/pool/device"); nil with no error expected means no check of devices.
	want [][]string
	// wantResults, when set, is compared in full.
	wantResults []resourceapi.AllocationResult
	// check, when set, inspects the results further.
	check func(t *testing.T, results []resourceapi.AllocationResult)
	// wantErr is checked with errors.Is; wantErrText must be contained in the message.
	wantErr     error
	wantErrText string
}

func (sc scenario) snapshot(t *testing.T) *allocator.Snapshot {
	t.Helper()
	s := allocator.NewSnapshot(allocator.Options{Features: sc.features, ShareIDs: sc.shareIDs, TrustAPIServer: sc.trusted})
	for _, o := range sc.slices {
		if err := s.AddOrUpdateSlice(o); err != nil {
			t.Fatalf("add slice: %v", err)
		}
	}
	for _, o := range sc.classes {
		// A trusted class whose selector does not compile is kept and reported (the claims using it fail).
		if err := s.AddOrUpdateClass(o); err != nil && !(sc.trusted && errors.Is(err, allocator.ErrInvalidInput)) {
			t.Fatalf("add class: %v", err)
		}
	}
	for _, o := range sc.allocated {
		if err := s.AddOrUpdateClaim(o); err != nil {
			t.Fatalf("add claim: %v", err)
		}
	}
	for _, o := range sc.rules {
		if err := s.AddOrUpdateTaintRule(o); err != nil {
			t.Fatalf("add rule: %v", err)
		}
	}
	return s
}

// run allocates and checks the answer, and that no input was mutated.
func (sc scenario) run(t *testing.T) {
	t.Helper()
	n := sc.node
	if n == nil {
		n = node(node1, nil)
	}
	inputs := []any{sc.slices, sc.classes, sc.allocated, sc.rules, sc.claims, n}
	before := deepCopyAll(inputs)
	s := sc.snapshot(t)
	results, err := s.Allocate(context.Background(), n, sc.claims)
	if !reflect.DeepEqual(before, deepCopyAll(inputs)) {
		t.Errorf("inputs were mutated")
	}
	switch {
	case sc.wantErr != nil || sc.wantErrText != "":
		if err == nil {
			t.Fatalf("want error %v %q, got results %v", sc.wantErr, sc.wantErrText, describe(results))
		}
		if sc.wantErr != nil && !errors.Is(err, sc.wantErr) {
			t.Fatalf("want error wrapping %v, got %v", sc.wantErr, err)
		}
		if !strings.Contains(err.Error(), sc.wantErrText) {
			t.Fatalf("want error containing %q, got %v", sc.wantErrText, err)
		}
		return
	case err != nil:
		t.Fatalf("unexpected error: %v", err)
	}
	if len(results) != len(sc.claims) {
		t.Fatalf("got %d results for %d claims", len(results), len(sc.claims))
	}
	if sc.want != nil {
		if got := describe(results); !reflect.DeepEqual(got, sc.want) {
			t.Errorf("devices:\n got %q\nwant %q", got, sc.want)
		}
	}
	if sc.wantResults != nil && !reflect.DeepEqual(results, sc.wantResults) {
		t.Errorf("results:\n got %+v\nwant %+v", results, sc.wantResults)
	}
	if sc.check != nil {
		sc.check(t, results)
	}
}

func deepCopyAll(inputs []any) []any {
	out := make([]any, len(inputs))
	for i, in := range inputs {
		switch v := in.(type) {
		case []*resourceapi.ResourceSlice:
			c := make([]*resourceapi.ResourceSlice, len(v))
			for j := range v {
				c[j] = v[j].DeepCopy()
			}
			out[i] = c
		case []*resourceapi.DeviceClass:
			c := make([]*resourceapi.DeviceClass, len(v))
			for j := range v {
				c[j] = v[j].DeepCopy()
			}
			out[i] = c
		case []*resourceapi.ResourceClaim:
			c := make([]*resourceapi.ResourceClaim, len(v))
			for j := range v {
				c[j] = v[j].DeepCopy()
			}
			out[i] = c
		case []*resourceapi.DeviceTaintRule:
			c := make([]*resourceapi.DeviceTaintRule, len(v))
			for j := range v {
				c[j] = v[j].DeepCopy()
			}
			out[i] = c
		case *v1.Node:
			out[i] = v.DeepCopy()
		default:
			panic(fmt.Sprintf("type %T", in))
		}
	}
	return out
}

// describe renders results as "request=pool/device" per claim.
func describe(results []resourceapi.AllocationResult) [][]string {
	out := make([][]string, len(results))
	for i, r := range results {
		out[i] = []string{}
		for _, d := range r.Devices.Results {
			if d.Driver == driverA {
				out[i] = append(out[i], d.Request+"="+d.Pool+"/"+d.Device)
			} else {
				out[i] = append(out[i], d.Request+"="+d.Driver+"/"+d.Pool+"/"+d.Device)
			}
		}
	}
	return out
}

func runAll(t *testing.T, cases []scenario) {
	t.Helper()
	for _, sc := range cases {
		t.Run(sc.name, sc.run)
	}
}

func localSelector(nodeName string) *v1.NodeSelector {
	return &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
		MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{nodeName}}},
	}}}
}
