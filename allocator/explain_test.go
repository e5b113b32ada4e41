package allocator_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
)

// explainCase is one table case: a scenario where the claims do not fit, the reason expected and, for a
// filter, how many devices it removes and its first cause; for an obstacle, the obstacle.
type explainCase struct {
	scenario
	budget   int
	reason   allocator.Reason
	removed  int
	cause    allocator.Cause     // Device compared only when set
	obstacle *allocator.Obstacle // Values not compared
	check    func(t *testing.T, e *allocator.Explanation)
}

func (c explainCase) run(t *testing.T) {
	t.Helper()
	s := c.snapshot(t)
	if c.budget > 0 {
		s = allocator.NewSnapshot(allocator.Options{Features: c.features, ShareIDs: c.shareIDs, StepBudget: c.budget})
		c.scenario.fill(t, s)
	}
	n := c.node
	if n == nil {
		n = node(node1, nil)
	}
	e, err := s.Explain(context.Background(), n, c.claims)
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	if e.Fits {
		t.Fatalf("claims fit, want them not to:\n%s", e)
	}
	fits, err := s.Fits(context.Background(), n, c.claims)
	if fits || err != nil && !errors.Is(err, allocator.ErrSearchBudget) && !errors.Is(err, allocator.ErrInvalidInput) {
		t.Fatalf("Fits = %v, %v; the explanation says they do not fit", fits, err)
	}
	if c.obstacle != nil {
		var got *allocator.Obstacle
		for i := range e.Obstacles {
			if e.Obstacles[i].Reason == c.reason {
				got = &e.Obstacles[i]
			}
		}
		if got == nil {
			t.Fatalf("no obstacle %s in\n%s", c.reason, e)
		}
		g := *got
		g.Values = nil
		if !reflect.DeepEqual(g, *c.obstacle) {
			t.Errorf("obstacle\n got %+v\nwant %+v\n%s", g, *c.obstacle, e)
		}
	} else {
		var got *allocator.Filter
		for _, ce := range e.Claims {
			for _, re := range ce.Requests {
				for i := range re.Filters {
					if re.Filters[i].Reason == c.reason && got == nil {
						got = &re.Filters[i]
					}
				}
			}
		}
		if got == nil {
			t.Fatalf("no filter %s in\n%s", c.reason, e)
		}
		if got.Removed != c.removed {
			t.Errorf("%s removed %d devices, want %d\n%s", c.reason, got.Removed, c.removed, e)
		}
		cause := got.Causes[0]
		if c.cause.Device == (allocator.DeviceID{}) {
			cause.Device = allocator.DeviceID{}
		}
		if c.check == nil && !reflect.DeepEqual(cause, c.cause) {
			t.Errorf("cause\n got %+v\nwant %+v\n%s", cause, c.cause, e)
		}
	}
	if c.check != nil {
		c.check(t, e)
	}
	if !errors.Is(e.Err(), allocator.ErrUnsatisfiable) {
		t.Errorf("Err() = %v, want ErrUnsatisfiable", e.Err())
	}
	var ue *allocator.UnsatisfiableError
	if !errors.As(e.Err(), &ue) || ue.Explanation != e || len(ue.Reasons) == 0 {
		t.Errorf("Err() = %#v, want the explanation and its reasons", e.Err())
	}
	js, err := json.Marshal(e)
	if err != nil {
		t.Errorf("json: %v", err)
	}
	if want := `"reason":"` + string(c.reason) + `"`; !strings.Contains(string(js), want) {
		t.Errorf("json %s lacks %s", js, want)
	}
}

// fill adds the scenario's objects to s.
func (sc scenario) fill(t *testing.T, s *allocator.Snapshot) {
	t.Helper()
	for _, o := range sc.slices {
		must(t, s.AddOrUpdateSlice(o))
	}
	for _, o := range sc.classes {
		must(t, s.AddOrUpdateClass(o))
	}
	for _, o := range sc.allocated {
		must(t, s.AddOrUpdateClaim(o))
	}
	for _, o := range sc.rules {
		must(t, s.AddOrUpdateTaintRule(o))
	}
}

func dev(name string) allocator.DeviceID {
	return allocator.DeviceID{Driver: driverA, Pool: "pool-1", Device: name}
}

func modelDevice(name, model string) resourceapi.Device {
	return device(name, map[string]any{"model": model})
}

const isH100 = `device.attributes["` + driverA + `"].model == "H100"`

func TestExplainFilters(t *testing.T) {
	anyOne := []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))}
	anyTwo := []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 2))}
	classes := []*resourceapi.DeviceClass{anyClass}
	dupDevice := []*resourceapi.ResourceSlice{
		withPool(nodeSlice("s1", node1, driverA, "pool-1", devices("d0")...), 1, 2),
		withPool(nodeSlice("s2", node1, driverA, "pool-1", devices("d0")...), 1, 2),
	}
	noBinding := allocator.DefaultFeatures()
	noBinding.DRADeviceBindingConditions = false
	bound := resourceapi.Device{Name: "d0", BindingConditions: []string{"attached"}, BindingFailureConditions: []string{"failed"}}
	skip := nodeSlice("s1", node1, driverA, "pool-1", devices("d0")...)
	skip.Spec.SkipNodeOperations = []resourceapi.SkipNodeOperation{resourceapi.SkipNodeOperationAll}
	perDevice := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "s1"},
		Spec: resourceapi.ResourceSliceSpec{
			Driver: driverA, Pool: resourceapi.ResourcePool{Name: "pool-1", Generation: 1, ResourceSliceCount: 1},
			PerDeviceNodeSelection: ptr(true),
			Devices:                []resourceapi.Device{{Name: "d0", NodeName: ptr(node2)}, {Name: "d1", NodeName: ptr(node1)}},
		},
	}
	for _, c := range []explainCase{{
		scenario: scenario{name: "devices of an incomplete pool are not used, and the pool says so",
			slices:  []*resourceapi.ResourceSlice{withPool(nodeSlice("s1", node1, driverA, "pool-1", devices("d0", "d1")...), 1, 2)},
			classes: classes, claims: anyOne},
		reason: allocator.ReasonPoolIncomplete, removed: 2,
		cause: allocator.Cause{Devices: 2, Object: "ResourcePool driver-a.example.com/pool-1", Message: "resource pool driver-a.example.com/pool-1 is being updated"},
		check: func(t *testing.T, e *allocator.Explanation) {
			if !errors.Is(e.Err(), allocator.ErrPoolIncomplete) || errors.Is(e.Err(), allocator.ErrPoolInvalid) {
				t.Errorf("Err() = %v, want ErrPoolIncomplete", e.Err())
			}
		},
	}, {
		scenario: scenario{name: "devices of an invalid pool are not used, and errors.Is tells why",
			slices: dupDevice, classes: classes, claims: anyOne},
		reason: allocator.ReasonPoolInvalid, removed: 2,
		cause: allocator.Cause{Devices: 2, Object: "ResourcePool driver-a.example.com/pool-1", Message: "resource pool driver-a.example.com/pool-1 is invalid: duplicate device name d0"},
	}, {
		scenario: scenario{name: "devices with binding conditions are not used while the gate is off", features: &noBinding,
			slices: attrSlice(bound), classes: classes, claims: anyOne},
		reason: allocator.ReasonBindingConditions, removed: 1,
		cause: allocator.Cause{Devices: 1, Device: dev("d0"), Object: "ResourceSlice s1"},
	}, {
		scenario: scenario{name: "a class selector names the class, the selector and its expression",
			slices:  attrSlice(modelDevice("d0", "A100"), modelDevice("d1", "A100"), modelDevice("d2", "H100")),
			classes: []*resourceapi.DeviceClass{class("gpu-h100", isH100)},
			claims:  []*resourceapi.ResourceClaim{claim("c", exact("req", "gpu-h100", 2))}},
		reason: allocator.ReasonClassSelector, removed: 2,
		cause: allocator.Cause{Devices: 2, Device: dev("d0"), Object: "DeviceClass gpu-h100", Field: "spec.selectors[0]", Expression: isH100},
	}, {
		scenario: scenario{name: "a request selector names the claim and the request's field",
			slices: attrSlice(modelDevice("d0", "A100")), classes: classes,
			claims: []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1, isH100))}},
		reason: allocator.ReasonRequestSelector, removed: 1,
		cause: allocator.Cause{Devices: 1, Device: dev("d0"), Object: "ResourceClaim default/c", Field: "spec.devices.requests[0].exactly.selectors[0]", Expression: isH100},
	}, {
		scenario: scenario{name: "a CEL runtime error is reported once, naming the device once",
			slices: attrSlice(device("d0", nil), modelDevice("d1", "H100")), classes: classes,
			claims: []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 2, isH100))}},
		reason: allocator.ReasonCELError, removed: 1,
		check: func(t *testing.T, e *allocator.Explanation) {
			c := e.Claims[0].Requests[0].Filters[0].Causes[0]
			if c.Object != "ResourceClaim default/c" || c.Field != "spec.devices.requests[0].exactly.selectors[0]" || c.Device != dev("d0") {
				t.Errorf("cause %+v", c)
			}
			if strings.Count(c.Message, "d0") != 1 {
				t.Errorf("message %q names the device %d times, want once", c.Message, strings.Count(c.Message, "d0"))
			}
		},
	}, {
		scenario: scenario{name: "a device whose per-device node selection excludes the node is not on this node",
			slices: []*resourceapi.ResourceSlice{perDevice}, classes: classes, claims: anyTwo},
		reason: allocator.ReasonNotOnNode, removed: 1,
		cause: allocator.Cause{Devices: 1, Device: dev("d0"), Object: "ResourceSlice s1"},
	}, {
		scenario: scenario{name: "an allocated device names the claim holding it",
			slices: attrSlice(devices("d0", "d1")...), classes: classes, claims: anyTwo,
			allocated: []*resourceapi.ResourceClaim{allocatedClaim("other", result(driverA, "pool-1", "d1"))}},
		reason: allocator.ReasonAllocated, removed: 1,
		cause: allocator.Cause{Devices: 1, Device: dev("d1"), Object: "ResourceClaim default/other"},
	}, {
		scenario: scenario{name: "a device too small for the requested capacity names the capacity, needed and what it has",
			slices: attrSlice(shareable("d0", "10Gi", nil)), classes: classes,
			claims: []*resourceapi.ResourceClaim{claim("c", withCapacity(exact("req", "any", 1), "20Gi"))}},
		reason: allocator.ReasonCapacity, removed: 1,
		cause: allocator.Cause{Devices: 1, Device: dev("d0"), Name: "memory", Needed: "20Gi", Available: "10Gi"},
	}, {
		scenario: scenario{name: "a shared device without room next to its shares says what is free",
			slices: attrSlice(shareable("d0", "10Gi", nil)), classes: classes,
			allocated: []*resourceapi.ResourceClaim{allocatedClaim("other", sharedResult("d0", sequentialSharePrefix+"000000000001", "8Gi"))},
			claims:    []*resourceapi.ResourceClaim{claim("c", withCapacity(exact("req", "any", 1), "4Gi"))}},
		reason: allocator.ReasonCapacity, removed: 1,
		cause: allocator.Cause{Devices: 1, Device: dev("d0"), Name: "memory", Needed: "4Gi", Available: "2Gi"},
	}, {
		scenario: scenario{name: "a device skipping node operations on a node that does not declare them", features: ptr(allocator.AllFeatures()),
			slices: []*resourceapi.ResourceSlice{skip}, classes: classes, claims: anyOne},
		reason: allocator.ReasonNodeOperations, removed: 1,
		cause: allocator.Cause{Devices: 1, Device: dev("d0"), Object: "ResourceSlice s1"},
	}, {
		scenario: scenario{name: "a device needing more of a counter than is left names the counter set and counter",
			slices: partitionedPool(partition("big", "whole", "16Gi")), classes: classes, claims: anyOne},
		reason: allocator.ReasonCounters, removed: 1,
		cause: allocator.Cause{Devices: 1, Device: dev("big"), CounterSet: "gpu-0", Name: "memory", Needed: "16Gi", Available: "8Gi"},
	}, {
		scenario: scenario{name: "a device of another compatibility group than the allocated ones", features: ptr(allocator.AllFeatures()),
			slices:    partitionedPool(partition("p-a", "half", "2Gi", "a"), partition("p-b", "half", "2Gi", "b")),
			allocated: []*resourceapi.ResourceClaim{allocatedClaim("other", result(driverA, "pool-1", "p-a"))},
			classes:   classes, claims: anyOne},
		reason: allocator.ReasonCompatibilityGroup, removed: 1,
		cause: allocator.Cause{Devices: 1, Device: dev("p-b"), CounterSet: "gpu-0"},
	}, {
		scenario: scenario{name: "a taint from the slice names its key, effect and slice",
			slices: attrSlice(tainted("d0", noSchedule)), classes: classes, claims: anyOne},
		reason: allocator.ReasonTaint, removed: 1,
		cause: allocator.Cause{Devices: 1, Device: dev("d0"), Object: "ResourceSlice s1", Name: "example.com/broken", Effect: "NoSchedule"},
	}, {
		scenario: scenario{name: "a taint from a DeviceTaintRule names the rule",
			slices: attrSlice(devices("d0", "d1")...), classes: classes, claims: anyTwo,
			rules: []*resourceapi.DeviceTaintRule{taintRule("firmware-rollout", "d1", noExecute)}},
		reason: allocator.ReasonTaint, removed: 1,
		cause: allocator.Cause{Devices: 1, Device: dev("d1"), Object: "DeviceTaintRule firmware-rollout", Name: "example.com/broken", Effect: "NoExecute"},
	}} {
		t.Run(c.name, c.run)
	}
}

func TestExplainObstacles(t *testing.T) {
	classes := []*resourceapi.DeviceClass{anyClass, class("none", "false"), sizeClass("half"), sizeClass("whole")}
	model := resourceapi.FullyQualifiedName(driverA + "/model")
	for _, c := range []explainCase{{
		scenario: scenario{name: "a claim that would hold more than 32 devices",
			slices: attrSlice(manyDevices(40)...), classes: classes,
			claims: []*resourceapi.ResourceClaim{claim("c", exact("a", "any", 16),
				firstAvailable("b", sub("big", "any", 20), sub("small", "none", 1)))}},
		reason: allocator.ReasonTooManyResults,
		obstacle: &allocator.Obstacle{Reason: allocator.ReasonTooManyResults, Needed: 36,
			Requests: []allocator.RequestRef{{Claim: "default/c", Request: "a"}, {Claim: "default/c", Request: "b/big"}}},
	}, {
		scenario: scenario{name: "matchAttribute reports the largest group with one value and how many are needed",
			slices: attrSlice(modelDevice("d0", "A"), modelDevice("d1", "A"), modelDevice("d2", "B"), modelDevice("d3", "C")), classes: classes,
			claims: []*resourceapi.ResourceClaim{withConstraints(claim("c", exact("req", "any", 3)), matchAttr(string(model)))}},
		reason: allocator.ReasonConstraint,
		obstacle: &allocator.Obstacle{Reason: allocator.ReasonConstraint, Attribute: string(model), Field: "spec.devices.constraints[0].matchAttribute",
			Largest: 2, Needed: 3, Requests: []allocator.RequestRef{{Claim: "default/c", Request: "req"}}},
		check: func(t *testing.T, e *allocator.Explanation) {
			want := []allocator.ValueCount{{Value: `"A"`, Devices: 2}, {Value: `"B"`, Devices: 1}, {Value: `"C"`, Devices: 1}}
			if got := e.Obstacles[0].Values; !reflect.DeepEqual(got, want) {
				t.Errorf("values %v, want %v", got, want)
			}
		},
	}, {
		scenario: scenario{name: "matchAttribute across requests counts each request's devices with the value",
			slices: attrSlice(modelDevice("d0", "A"), modelDevice("d1", "A"), modelDevice("d2", "B")), classes: classes,
			claims: []*resourceapi.ResourceClaim{withConstraints(claim("c", exact("x", "any", 1, `device.attributes["`+driverA+`"].model == "A"`),
				exact("y", "any", 1, `device.attributes["`+driverA+`"].model == "B"`)), matchAttr(string(model)))}},
		reason: allocator.ReasonConstraint,
		obstacle: &allocator.Obstacle{Reason: allocator.ReasonConstraint, Attribute: string(model), Field: "spec.devices.constraints[0].matchAttribute",
			Largest: 1, Needed: 2, Requests: []allocator.RequestRef{{Claim: "default/c", Request: "x"}, {Claim: "default/c", Request: "y"}}},
	}, {
		scenario: scenario{name: "distinctAttribute reports how many distinct values there are",
			slices: attrSlice(modelDevice("d0", "A"), modelDevice("d1", "A"), modelDevice("d2", "B")), classes: classes,
			claims: []*resourceapi.ResourceClaim{withConstraints(claim("c", exact("req", "any", 3)), distinctAttr(string(model)))}},
		reason: allocator.ReasonConstraint,
		obstacle: &allocator.Obstacle{Reason: allocator.ReasonConstraint, Attribute: string(model), Field: "spec.devices.constraints[0].distinctAttribute",
			Largest: 2, Needed: 3, Requests: []allocator.RequestRef{{Claim: "default/c", Request: "req"}}},
	}, {
		scenario: scenario{name: "two claims competing for the same devices, each alone with enough",
			slices: attrSlice(devices("d0", "d1", "d2")...), classes: classes,
			claims: []*resourceapi.ResourceClaim{claim("c1", exact("req", "any", 2)), claim("c2", exact("req", "any", 2))}},
		reason: allocator.ReasonCompeting,
		obstacle: &allocator.Obstacle{Reason: allocator.ReasonCompeting, Largest: 3, Needed: 4,
			Requests: []allocator.RequestRef{{Claim: "default/c1", Request: "req"}, {Claim: "default/c2", Request: "req"}}},
	}, {
		scenario: scenario{name: "the search giving up reports its steps",
			slices: attrSlice(devices("d0", "d1")...), classes: classes,
			claims: []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 2))}},
		budget: 2, reason: allocator.ReasonSearchGaveUp,
		obstacle: &allocator.Obstacle{Reason: allocator.ReasonSearchGaveUp, Steps: 3},
	}, {
		scenario: scenario{name: "shared counters drawn on by two requests leave no combination",
			slices:  partitionedPoolSpare(partition("p-a", "half", "4Gi"), partition("p-b", "half", "4Gi"), partition("whole", "whole", "8Gi")),
			classes: classes,
			claims:  []*resourceapi.ResourceClaim{claim("c", exact("w", "whole", 1), exact("h", "half", 1))}},
		reason: allocator.ReasonNoCombination,
		// The pool's two sets have the 12Gi the two draw, but only gpu-0 serves them, which no count
		// before the search sees: the search takes the whole device, moves on to the next request and
		// finds both halves refused by the counters: three steps.
		obstacle: &allocator.Obstacle{Reason: allocator.ReasonNoCombination, Steps: 3},
	}} {
		t.Run(c.name, c.run)
	}
}

func TestAllocateErrorsAreTyped(t *testing.T) {
	classes := []*resourceapi.DeviceClass{anyClass}
	incomplete := []*resourceapi.ResourceSlice{withPool(nodeSlice("s1", node1, driverA, "pool-1", devices("d0")...), 1, 2)}
	invalid := []*resourceapi.ResourceSlice{
		withPool(nodeSlice("s1", node1, driverA, "pool-1", devices("d0")...), 1, 2),
		withPool(nodeSlice("s2", node1, driverA, "pool-1", devices("d0")...), 1, 2),
	}
	for _, c := range []struct {
		name   string
		slices []*resourceapi.ResourceSlice
		claim  *resourceapi.ResourceClaim
		want   []error
		text   string
	}{
		{name: "an incomplete pool is ErrPoolIncomplete", slices: incomplete, claim: claim("c", exact("req", "any", 1)),
			want: []error{allocator.ErrUnsatisfiable, allocator.ErrPoolIncomplete}, text: "resource pool driver-a.example.com/pool-1 is being updated"},
		{name: "an invalid pool is ErrPoolInvalid", slices: invalid, claim: claim("c", exact("req", "any", 1)),
			want: []error{allocator.ErrUnsatisfiable, allocator.ErrPoolInvalid}, text: "resource pool driver-a.example.com/pool-1 is invalid: duplicate device name d0"},
		{name: "all devices of an invalid pool is ErrPoolNotReady and ErrPoolInvalid", slices: invalid, claim: claim("c", allOf("req", "any")),
			want: []error{allocator.ErrPoolNotReady, allocator.ErrPoolInvalid}},
		{name: "all devices of an incomplete pool is ErrPoolNotReady and ErrPoolIncomplete", slices: incomplete, claim: claim("c", allOf("req", "any")),
			want: []error{allocator.ErrPoolNotReady, allocator.ErrPoolIncomplete}},
		{name: "too few devices names the request and counts in the singular", slices: attrSlice(devices("d0")...), claim: claim("c", exact("gpus", "any", 2)),
			want: []error{allocator.ErrUnsatisfiable}, text: `claim default/c, request "gpus": needs 2 devices, 1 matches and is free`},
		{name: "a subrequest is named request/subrequest", slices: attrSlice(devices("d0")...), claim: claim("c", firstAvailable("gpus", sub("two", "any", 2))),
			want: []error{allocator.ErrUnsatisfiable}},
		{name: "a constraint no group of candidates meets is a reason", slices: attrSlice(modelDevice("d0", "A"), modelDevice("d1", "B")),
			claim: withConstraints(claim("c", exact("gpus", "any", 2)), matchAttr(driverA+"/model")),
			want:  []error{allocator.ErrUnsatisfiable}, text: "spec.devices.constraints[0].matchAttribute: no value of driver-a.example.com/model is shared by enough free matching devices"},
		{name: "shared counters that leave no combination are a reason", slices: partitionedPoolSpare(partition("p-a", "half", "4Gi"), partition("whole", "whole", "8Gi")),
			claim: claim("c", exact("w", "any", 1, `device.attributes["`+driverA+`"].size == "whole"`), exact("h", "any", 1, `device.attributes["`+driverA+`"].size == "half"`)),
			want:  []error{allocator.ErrUnsatisfiable}, text: "no combination of the candidates satisfies every request together"},
		// 8Gi and 4Gi drawn on a set of 8Gi: 12884901888 bytes needed, 8589934592 left.
		{name: "shared counters the requests overdraw together are a reason", slices: partitionedPool(partition("p-a", "half", "4Gi"), partition("whole", "whole", "8Gi")),
			claim: claim("c", exact("w", "any", 1, `device.attributes["`+driverA+`"].size == "whole"`), exact("h", "any", 1, `device.attributes["`+driverA+`"].size == "half"`)),
			want:  []error{allocator.ErrUnsatisfiable},
			text:  "ResourceClaim default/c: together with the requests before it, draws at least 12884901888 of counter memory of the counter sets of pool driver-a.example.com/pool-1, 8589934592 left"},
		{name: "a CEL runtime error names the device once", slices: attrSlice(device("d0", nil)), claim: claim("c", exact("req", "any", 1, isH100)),
			want: []error{allocator.ErrInvalidInput}, text: "on device driver-a.example.com/pool-1/d0: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := scenario{slices: c.slices, classes: classes}.snapshot(t)
			_, err := s.Allocate(context.Background(), node(node1, nil), []*resourceapi.ResourceClaim{c.claim})
			for _, w := range c.want {
				if !errors.Is(err, w) {
					t.Errorf("error %v, want errors.Is %v", err, w)
				}
			}
			if err != nil && !strings.Contains(err.Error(), c.text) {
				t.Errorf("error %q, want it to contain %q", err, c.text)
			}
			if err != nil && strings.Count(err.Error(), "d0") > 1 {
				t.Errorf("error %q names the device more than once", err)
			}
			var ue *allocator.UnsatisfiableError
			if errors.As(err, &ue) && len(ue.Reasons) == 0 {
				t.Errorf("error %v gives no reasons", err)
			}
		})
	}
}
