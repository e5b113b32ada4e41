package allocator_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/dralloc/dralloc/allocator"
)

// networkSlice is a network-attached slice: for all nodes (selector nil) or for nodes matching the
// selector's single term.
func networkSlice(name, pool string, sel *v1.NodeSelector, devs ...resourceapi.Device) *resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:  driverA,
			Pool:    resourceapi.ResourcePool{Name: pool, Generation: 1, ResourceSliceCount: 1},
			Devices: devs,
		},
	}
	if sel == nil {
		s.Spec.AllNodes = ptr(true)
	} else {
		s.Spec.NodeSelector = sel
	}
	return s
}

func labelSelector(key string, values ...string) *v1.NodeSelector {
	return &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
		MatchExpressions: []v1.NodeSelectorRequirement{{Key: key, Operator: v1.NodeSelectorOpIn, Values: values}},
	}}}
}

func TestAllocateNetworkAttached(t *testing.T) {
	classes := []*resourceapi.DeviceClass{anyClass}
	zoneA := node(node1, map[string]string{"zone": "a", "rack": "r1"})
	runAll(t, []scenario{{
		name:   "a device for all nodes leaves the claim without a node selector",
		slices: []*resourceapi.ResourceSlice{networkSlice("s1", "fabric", nil, devices("dev-1")...)}, classes: classes,
		claims: []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))},
		check: func(t *testing.T, r []resourceapi.AllocationResult) {
			if r[0].NodeSelector != nil {
				t.Errorf("node selector %v, want none", r[0].NodeSelector)
			}
		},
	}, {
		name: "a device for the nodes of a zone passes the zone on to the claim", node: zoneA,
		slices: []*resourceapi.ResourceSlice{networkSlice("s1", "fabric", labelSelector("zone", "a"), devices("dev-1")...)}, classes: classes,
		claims: []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))},
		wantResults: []resourceapi.AllocationResult{{
			Devices:      resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{Request: "req", Driver: driverA, Pool: "fabric", Device: "dev-1"}}},
			NodeSelector: labelSelector("zone", "a"),
		}},
	}, {
		name: "devices for other zones are invisible", node: zoneA,
		slices: []*resourceapi.ResourceSlice{networkSlice("s1", "fabric", labelSelector("zone", "b"), devices("dev-1")...)}, classes: classes,
		claims:  []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))},
		wantErr: allocator.ErrUnsatisfiable,
	}, {
		name: "the selectors of two network devices are merged", node: zoneA,
		slices: []*resourceapi.ResourceSlice{
			networkSlice("s1", "fabric-1", labelSelector("zone", "a"), devices("dev-1")...),
			networkSlice("s2", "fabric-2", labelSelector("rack", "r1"), devices("dev-2")...),
		},
		classes: classes,
		claims:  []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 2))},
		check: func(t *testing.T, r []resourceapi.AllocationResult) {
			ns := r[0].NodeSelector
			if ns == nil || len(ns.NodeSelectorTerms) != 1 || len(ns.NodeSelectorTerms[0].MatchExpressions) != 2 {
				t.Errorf("node selector %v, want one term with zone and rack", ns)
			}
		},
	}, {
		name: "a local device pins the claim to the node", node: zoneA,
		slices: []*resourceapi.ResourceSlice{
			networkSlice("s1", "fabric", labelSelector("zone", "a"), devices("dev-1")...),
			nodeSlice("s2", node1, driverA, "local", devices("dev-2")...),
		},
		classes: classes,
		claims:  []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 2))},
		check: func(t *testing.T, r []resourceapi.AllocationResult) {
			if got := r[0].NodeSelector; got == nil || got.String() != localSelector(node1).String() {
				t.Errorf("node selector %v, want node-1", got)
			}
		},
	}, {
		name: "network and local pools are visited in pool order",
		slices: []*resourceapi.ResourceSlice{
			nodeSlice("s2", node1, driverA, "b-local", devices("dev-2")...),
			networkSlice("s1", "a-fabric", nil, devices("dev-1")...),
		},
		classes: classes,
		claims:  []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))},
		want:    [][]string{{"req=a-fabric/dev-1"}},
	}})
}

func TestAllocateBindingConditions(t *testing.T) {
	classes := []*resourceapi.DeviceClass{anyClass}
	bound := resourceapi.Device{Name: "dev-1", BindsToNode: ptr(true),
		BindingConditions: []string{"attached"}, BindingFailureConditions: []string{"failed"}}
	noBinding := allocator.DefaultFeatures()
	noBinding.DRADeviceBindingConditions = false
	runAll(t, []scenario{{
		name:   "binding conditions are copied into the result and bindsToNode pins the node",
		slices: []*resourceapi.ResourceSlice{networkSlice("s1", "fabric", nil, bound)}, classes: classes,
		claims: []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))},
		wantResults: []resourceapi.AllocationResult{{
			Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
				Request: "req", Driver: driverA, Pool: "fabric", Device: "dev-1",
				BindingConditions: []string{"attached"}, BindingFailureConditions: []string{"failed"},
			}}},
			NodeSelector: localSelector(node1),
		}},
	}, {
		name: "devices with binding conditions are not allocated when the gate is off", features: &noBinding,
		slices: []*resourceapi.ResourceSlice{networkSlice("s1", "fabric", nil, bound)}, classes: classes,
		claims:  []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))},
		wantErr: allocator.ErrUnsatisfiable,
	}})
}

func TestAllocateOptionalNodeOperations(t *testing.T) {
	classes := []*resourceapi.DeviceClass{anyClass}
	skip := nodeSlice("s1", node1, driverA, "pool-1", devices("dev-1")...)
	skip.Spec.SkipNodeOperations = []resourceapi.SkipNodeOperation{resourceapi.SkipNodeOperationAll}
	declaring := node(node1, nil)
	declaring.Status.DeclaredFeatures = []string{"DRAOptionalNodeOperations"}
	experimentalWithoutGate := allocator.AllFeatures()
	experimentalWithoutGate.DRAOptionalNodeOperations = false
	runAll(t, []scenario{{
		name: "with the 1.37 default gates the field is ignored, as the allocator Kubernetes then uses does", node: declaring,
		slices: []*resourceapi.ResourceSlice{skip}, classes: classes,
		claims: []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))},
		check: func(t *testing.T, r []resourceapi.AllocationResult) {
			if got := r[0].Devices.Results[0].SkipNodeOperations; got != nil {
				t.Errorf("skipNodeOperations %v, want none", got)
			}
		},
	}, {
		name: "devices skipping node operations are not allocated while the gate is off and other alpha gates are on",
		node: declaring, features: &experimentalWithoutGate,
		slices: []*resourceapi.ResourceSlice{skip}, classes: classes,
		claims:  []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))},
		wantErr: allocator.ErrUnsatisfiable,
	}, {
		name: "devices skipping node operations need a node that declares the feature", features: ptr(allocator.AllFeatures()),
		slices: []*resourceapi.ResourceSlice{skip}, classes: classes,
		claims:  []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))},
		wantErr: allocator.ErrUnsatisfiable,
	}, {
		name: "the skipped operations are copied into the result", features: ptr(allocator.AllFeatures()), node: declaring,
		slices: []*resourceapi.ResourceSlice{skip}, classes: classes,
		claims: []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))},
		check: func(t *testing.T, r []resourceapi.AllocationResult) {
			if got := r[0].Devices.Results[0].SkipNodeOperations; len(got) != 1 || got[0] != resourceapi.SkipNodeOperationAll {
				t.Errorf("skipNodeOperations %v", got)
			}
		},
	}})
}

func opaque(params string) resourceapi.DeviceConfiguration {
	return resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{
		Driver: driverA, Parameters: runtime.RawExtension{Raw: []byte(params)},
	}}
}

func TestAllocateConfiguration(t *testing.T) {
	gpu := class("gpu")
	gpu.Spec.Config = []resourceapi.DeviceClassConfiguration{{DeviceConfiguration: opaque(`{"class":1}`)}}
	nic := class("nic")
	nic.Spec.Config = []resourceapi.DeviceClassConfiguration{{DeviceConfiguration: opaque(`{"nic":1}`)}}
	slices := attrSlice(devices("dev-1", "dev-2", "dev-3")...)
	c := claim("c", exact("a", "gpu", 1), exact("b", "gpu", 1), exact("n", "nic", 1))
	c.Spec.Devices.Config = []resourceapi.DeviceClaimConfiguration{
		{Requests: []string{"a"}, DeviceConfiguration: opaque(`{"a":1}`)},
		{Requests: []string{"a", "b", "n"}, DeviceConfiguration: opaque(`{"all":1}`)},
		{DeviceConfiguration: opaque(`{"none":1}`)},
		{Requests: []string{"unknown"}, DeviceConfiguration: opaque(`{"unknown":1}`)},
	}
	p := claim("p", firstAvailable("req", sub("first", "nic", 1, "false"), sub("second", "gpu", 1)))
	p.Spec.Devices.Config = []resourceapi.DeviceClaimConfiguration{
		{Requests: []string{"req/first"}, DeviceConfiguration: opaque(`{"first":1}`)},
		{Requests: []string{"req/second"}, DeviceConfiguration: opaque(`{"second":1}`)},
	}
	runAll(t, []scenario{{
		name:   "class configuration first, once per class; then the claim's for the requests it names",
		slices: slices, classes: []*resourceapi.DeviceClass{gpu, nic},
		claims: []*resourceapi.ResourceClaim{c},
		check: func(t *testing.T, r []resourceapi.AllocationResult) {
			want := []resourceapi.DeviceAllocationConfiguration{
				{Source: resourceapi.AllocationConfigSourceClass, Requests: []string{"a", "b"}, DeviceConfiguration: opaque(`{"class":1}`)},
				{Source: resourceapi.AllocationConfigSourceClass, Requests: []string{"n"}, DeviceConfiguration: opaque(`{"nic":1}`)},
				{Source: resourceapi.AllocationConfigSourceClaim, Requests: []string{"a"}, DeviceConfiguration: opaque(`{"a":1}`)},
				{Source: resourceapi.AllocationConfigSourceClaim, Requests: nil, DeviceConfiguration: opaque(`{"all":1}`)},
				{Source: resourceapi.AllocationConfigSourceClaim, Requests: nil, DeviceConfiguration: opaque(`{"none":1}`)},
			}
			equalConfig(t, r[0].Devices.Config, want)
		},
	}, {
		name:   "with subrequests, the configuration of the chosen one applies",
		slices: slices, classes: []*resourceapi.DeviceClass{gpu, nic},
		claims: []*resourceapi.ResourceClaim{p},
		check: func(t *testing.T, r []resourceapi.AllocationResult) {
			want := []resourceapi.DeviceAllocationConfiguration{
				{Source: resourceapi.AllocationConfigSourceClass, Requests: nil, DeviceConfiguration: opaque(`{"class":1}`)},
				{Source: resourceapi.AllocationConfigSourceClaim, Requests: nil, DeviceConfiguration: opaque(`{"second":1}`)},
			}
			equalConfig(t, r[0].Devices.Config, want)
		},
	}})
}

func equalConfig(t *testing.T, got, want []resourceapi.DeviceAllocationConfiguration) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d configurations, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Source != w.Source || string(g.Opaque.Parameters.Raw) != string(w.Opaque.Parameters.Raw) || len(g.Requests) != len(w.Requests) {
			t.Errorf("config %d: got %s %v %s, want %s %v %s", i, g.Source, g.Requests, g.Opaque.Parameters.Raw, w.Source, w.Requests, w.Opaque.Parameters.Raw)
			continue
		}
		for j := range w.Requests {
			if g.Requests[j] != w.Requests[j] {
				t.Errorf("config %d: requests %v, want %v", i, g.Requests, w.Requests)
			}
		}
	}
}

func TestAllocateNodeSelectorWithSeveralTerms(t *testing.T) {
	two := labelSelector("zone", "a")
	two.NodeSelectorTerms = append(two.NodeSelectorTerms, labelSelector("rack", "r1").NodeSelectorTerms...)
	runAll(t, []scenario{{
		name:    "a network device whose selector has two terms cannot be recorded in a claim, as in Kubernetes",
		trusted: true,
		node:    node(node1, map[string]string{"zone": "a"}), classes: []*resourceapi.DeviceClass{anyClass},
		slices:  []*resourceapi.ResourceSlice{networkSlice("s1", "fabric", two, devices("dev-1")...)},
		claims:  []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))},
		wantErr: allocator.ErrInvalidInput, wantErrText: "ResourceSlice s1: spec.nodeSelector",
	}})
}
