package verify_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/dralloc/dralloc/allocator/verify"
)

func baseInput() verify.Input {
	return verify.Input{Slices: fixtureSlices(), Classes: classes(), Node: node("node-a", "a")}
}

func nicShare(request, share string, consumed string) resourceapi.DeviceRequestAllocationResult {
	r := result(request, "nic.example.com", "fabric", "nic-0")
	if share != "" {
		r.ShareID = ptr.To(types.UID(share))
	}
	if consumed != "" {
		r.ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{"bandwidth": q(consumed)}
	}
	return r
}

func TestCheck(t *testing.T) {
	held := claim("holder", exact("r", "gpu", 1))
	held.Status.Allocation = ptr.To(local(gpu("r", "gpu-0")))
	adminHeld := claim("monitor", exact("r", "gpu", 1))
	adminHeld.Status.Allocation = ptr.To(local(gpu("r", "gpu-0")))
	adminHeld.Status.Allocation.Devices.Results[0].AdminAccess = ptr.To(true)

	tolerating := exact("r", "gpu", 1)
	tolerating.Exactly.Tolerations = []resourceapi.DeviceToleration{{Key: "example.com/broken", Operator: resourceapi.DeviceTolerationOpExists}}
	tolerated := gpu("r", "gpu-1")
	tolerated.Tolerations = tolerating.Exactly.Tolerations

	matchNuma := claim("c", exact("a", "gpu", 1), tolerating)
	matchNuma.Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{MatchAttribute: ptr.To(resourceapi.FullyQualifiedName("gpu.example.com/numa"))}}
	distinctModel := claim("c", exact("a", "gpu", 1), exact("b", "gpu", 1))
	distinctModel.Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{DistinctAttribute: ptr.To(resourceapi.FullyQualifiedName("gpu.example.com/model"))}}

	firstAvailable := claim("c", resourceapi.DeviceRequest{Name: "r", FirstAvailable: []resourceapi.DeviceSubRequest{
		{Name: "big", DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 2},
		{Name: "small", DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1},
	}})
	all := claim("c", resourceapi.DeviceRequest{Name: "r", Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeAll,
		Selectors: []resourceapi.DeviceSelector{sel(`device.attributes["gpu.example.com"].model == "a100"`)}}})
	admin := claim("c", exact("r", "gpu", 1))
	admin.Spec.Devices.Requests[0].Exactly.AdminAccess = ptr.To(true)
	adminResult := gpu("r", "gpu-0")
	adminResult.AdminAccess = ptr.To(true)
	nicCapacity := exact("r", "nic", 1)
	nicCapacity.Exactly.Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{"bandwidth": q("15G")}}
	configured := claim("c", exact("r", "gpu", 1))
	configured.Spec.Devices.Config = []resourceapi.DeviceClaimConfiguration{{DeviceConfiguration: resourceapi.DeviceConfiguration{
		Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: "gpu.example.com", Parameters: runtime.RawExtension{Raw: []byte(`{"a":1}`)}}}}}
	configuredResult := local(gpu("r", "gpu-0"))
	configuredResult.Devices.Config = []resourceapi.DeviceAllocationConfiguration{{Source: resourceapi.AllocationConfigSourceClaim,
		DeviceConfiguration: configured.Spec.Devices.Config[0].DeviceConfiguration}}
	nicResult := func(rs ...resourceapi.DeviceRequestAllocationResult) resourceapi.AllocationResult {
		return resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: rs}, NodeSelector: zoneSelector("a")}
	}

	for _, tc := range []struct {
		name    string
		input   func(*verify.Input)
		claims  []*resourceapi.ResourceClaim
		results []resourceapi.AllocationResult
		want    []verify.Rule
	}{
		{name: "a matching free untainted device on the node is valid",
			claims:  []*resourceapi.ResourceClaim{claim("c", exact("r", "gpu", 1, `device.attributes["gpu.example.com"].model == "a100"`))},
			results: []resourceapi.AllocationResult{local(gpu("r", "gpu-0"))}},
		{name: "a device the request selector rejects, with a taint the request does not tolerate",
			claims:  []*resourceapi.ResourceClaim{claim("c", exact("r", "gpu", 1, `device.attributes["gpu.example.com"].model == "a100"`))},
			results: []resourceapi.AllocationResult{local(gpu("r", "gpu-1"))},
			want:    []verify.Rule{verify.RuleSelector, verify.RuleTaint}},
		{name: "a device of another driver than the class selects",
			claims:  []*resourceapi.ResourceClaim{claim("c", exact("r", "nic", 1))},
			results: []resourceapi.AllocationResult{local(gpu("r", "gpu-0"))},
			want:    []verify.Rule{verify.RuleClass}},
		{name: "a device held exclusively by an allocated claim is in use",
			input:   func(in *verify.Input) { in.Claims = []*resourceapi.ResourceClaim{held} },
			claims:  []*resourceapi.ResourceClaim{claim("c", exact("r", "gpu", 1))},
			results: []resourceapi.AllocationResult{local(gpu("r", "gpu-0"))},
			want:    []verify.Rule{verify.RuleInUse}},
		{name: "a device held only with admin access is free",
			input:   func(in *verify.Input) { in.Claims = []*resourceapi.ResourceClaim{adminHeld} },
			claims:  []*resourceapi.ResourceClaim{claim("c", exact("r", "gpu", 1))},
			results: []resourceapi.AllocationResult{local(gpu("r", "gpu-0"))}},
		{name: "the claim being checked is not part of the state it is checked against",
			input:   func(in *verify.Input) { in.Claims = []*resourceapi.ResourceClaim{held} },
			claims:  []*resourceapi.ResourceClaim{held},
			results: []resourceapi.AllocationResult{local(gpu("r", "gpu-0"))}},
		{name: "two claims taking one exclusive device",
			claims:  []*resourceapi.ResourceClaim{claim("c", exact("r", "gpu", 1)), claim("d", exact("r", "gpu", 1))},
			results: []resourceapi.AllocationResult{local(gpu("r", "gpu-0")), local(gpu("r", "gpu-0"))},
			want:    []verify.Rule{verify.RuleInUse}},
		{name: "admin access may take a device in use",
			input:   func(in *verify.Input) { in.Claims = []*resourceapi.ResourceClaim{held} },
			claims:  []*resourceapi.ResourceClaim{admin},
			results: []resourceapi.AllocationResult{local(adminResult)}},
		{name: "a result without the adminAccess its request asks for",
			claims:  []*resourceapi.ResourceClaim{admin},
			results: []resourceapi.AllocationResult{local(gpu("r", "gpu-0"))},
			want:    []verify.Rule{verify.RuleAdminAccess}},
		{name: "admin access while DRAAdminAccess is off",
			input: func(in *verify.Input) {
				in.Features = ptr.To(verify.DefaultFeatures())
				in.Features.DRAAdminAccess = false
			},
			claims:  []*resourceapi.ResourceClaim{admin},
			results: []resourceapi.AllocationResult{local(adminResult)},
			want:    []verify.Rule{verify.RuleFeature}},
		{name: "fewer devices than ExactCount asks for",
			claims:  []*resourceapi.ResourceClaim{claim("c", exact("r", "gpu", 2))},
			results: []resourceapi.AllocationResult{local(gpu("r", "gpu-0"))},
			want:    []verify.Rule{verify.RuleResultCount}},
		{name: "one device twice for one request",
			claims:  []*resourceapi.ResourceClaim{claim("c", exact("r", "gpu", 2))},
			results: []resourceapi.AllocationResult{local(gpu("r", "gpu-0"), gpu("r", "gpu-0"))},
			want:    []verify.Rule{verify.RuleInUse}},
		{name: "a device that is not published",
			claims:  []*resourceapi.ResourceClaim{claim("c", exact("r", "gpu", 1))},
			results: []resourceapi.AllocationResult{local(gpu("r", "gpu-9"))},
			want:    []verify.Rule{verify.RuleUnknownDevice}},
		{name: "a result for a request the claim does not have",
			claims:  []*resourceapi.ResourceClaim{claim("c", exact("r", "gpu", 1))},
			results: []resourceapi.AllocationResult{local(gpu("r", "gpu-0"), gpu("x", "gpu-1"))},
			want:    []verify.Rule{verify.RuleUnknownRequest}},
		{name: "a device local to another node",
			input:   func(in *verify.Input) { in.Node = node("node-b", "a") },
			claims:  []*resourceapi.ResourceClaim{claim("c", exact("r", "gpu", 1))},
			results: []resourceapi.AllocationResult{local(gpu("r", "gpu-0"))},
			want:    []verify.Rule{verify.RuleNode, verify.RuleNodeSelector}},
		{name: "a network-attached device outside the node's zone",
			input:   func(in *verify.Input) { in.Node = node("node-a", "b") },
			claims:  []*resourceapi.ResourceClaim{claim("c", exact("r", "nic", 1))},
			results: []resourceapi.AllocationResult{nicResult(nicShare("r", "s1", "10G"))},
			want:    []verify.Rule{verify.RuleNode}},
		{name: "a full partition and a half drawing 60Gi of 40Gi counters",
			claims:  []*resourceapi.ResourceClaim{claim("c", exact("a", "gpu", 1), exact("b", "gpu", 1))},
			results: []resourceapi.AllocationResult{local(mig("a", "mig-full"), mig("b", "mig-half-0"))},
			want:    []verify.Rule{verify.RuleCounters}},
		{name: "two halves fit the counters",
			claims:  []*resourceapi.ResourceClaim{claim("c", exact("r", "gpu", 2))},
			results: []resourceapi.AllocationResult{local(mig("r", "mig-half-0"), mig("r", "mig-half-1"))}},
		{name: "partitions while DRAPartitionableDevices is off",
			input: func(in *verify.Input) {
				in.Features = ptr.To(verify.DefaultFeatures())
				in.Features.DRAPartitionableDevices = false
			},
			claims:  []*resourceapi.ResourceClaim{claim("c", exact("r", "gpu", 1))},
			results: []resourceapi.AllocationResult{local(mig("r", "mig-half-0"))},
			want:    []verify.Rule{verify.RuleFeature}},
		{name: "matchAttribute numa broken by devices on numa 0 and 1",
			claims:  []*resourceapi.ResourceClaim{matchNuma},
			results: []resourceapi.AllocationResult{local(gpu("a", "gpu-0"), tolerated)},
			want:    []verify.Rule{verify.RuleConstraint}},
		{name: "distinctAttribute model kept by an a100 and an h100",
			claims:  []*resourceapi.ResourceClaim{distinctModel},
			results: []resourceapi.AllocationResult{local(gpu("a", "gpu-0"), mig("b", "mig-full"))},
			want:    []verify.Rule{verify.RuleConstraint}},
		{name: "a tolerated taint, with the tolerations copied into the result",
			claims:  []*resourceapi.ResourceClaim{claim("c", tolerating)},
			results: []resourceapi.AllocationResult{local(tolerated)}},
		{name: "a tolerated taint without the tolerations in the result",
			claims:  []*resourceapi.ResourceClaim{claim("c", tolerating)},
			results: []resourceapi.AllocationResult{local(gpu("r", "gpu-1"))},
			want:    []verify.Rule{verify.RuleTolerations}},
		{name: "a share of a shareable device with the default consumption",
			claims:  []*resourceapi.ResourceClaim{claim("c", exact("r", "nic", 1))},
			results: []resourceapi.AllocationResult{nicResult(nicShare("r", "s1", "10G"))}},
		{name: "a share without shareID",
			claims:  []*resourceapi.ResourceClaim{claim("c", exact("r", "nic", 1))},
			results: []resourceapi.AllocationResult{nicResult(nicShare("r", "", "10G"))},
			want:    []verify.Rule{verify.RuleShare}},
		{name: "a capacity request of 15G rounds up to the 20G step, not 15G",
			claims:  []*resourceapi.ResourceClaim{claim("c", nicCapacity)},
			results: []resourceapi.AllocationResult{nicResult(nicShare("r", "s1", "15G"))},
			want:    []verify.Rule{verify.RuleCapacity}},
		{name: "a ranged share of 40G for a 15G request: refused unless ranged shares are accepted",
			claims:  []*resourceapi.ResourceClaim{claim("c", nicCapacity)},
			results: []resourceapi.AllocationResult{nicResult(nicShare("r", "s1", "40G"))},
			want:    []verify.Rule{verify.RuleCapacity}},
		{name: "a ranged share of 40G for a 15G request: at least the 20G point amount, on the 10G steps",
			input:   func(in *verify.Input) { in.RangedShares = true },
			claims:  []*resourceapi.ResourceClaim{claim("c", nicCapacity)},
			results: []resourceapi.AllocationResult{nicResult(nicShare("r", "s1", "40G"))}},
		{name: "a ranged share of 35G: off the 10G steps",
			input:   func(in *verify.Input) { in.RangedShares = true },
			claims:  []*resourceapi.ResourceClaim{claim("c", nicCapacity)},
			results: []resourceapi.AllocationResult{nicResult(nicShare("r", "s1", "35G"))},
			want:    []verify.Rule{verify.RuleCapacity}},
		{name: "a ranged share of 10G: below the 20G the request consumes",
			input:   func(in *verify.Input) { in.RangedShares = true },
			claims:  []*resourceapi.ResourceClaim{claim("c", nicCapacity)},
			results: []resourceapi.AllocationResult{nicResult(nicShare("r", "s1", "10G"))},
			want:    []verify.Rule{verify.RuleCapacity}},
		{name: "a ranged share of 200G: beyond the device's 100G",
			input:   func(in *verify.Input) { in.RangedShares = true },
			claims:  []*resourceapi.ResourceClaim{claim("c", nicCapacity)},
			results: []resourceapi.AllocationResult{nicResult(nicShare("r", "s1", "200G"))},
			want:    []verify.Rule{verify.RuleCapacity}},
		{name: "shares beyond the device's bandwidth",
			claims: []*resourceapi.ResourceClaim{claim("c", nicCapacity, func() resourceapi.DeviceRequest {
				r := nicCapacity
				r.Name = "s"
				return r
			}())},
			input: func(in *verify.Input) {
				big := claim("big", exact("r", "nic", 1))
				big.Status.Allocation = ptr.To(nicResult(nicShare("r", "s0", "70G")))
				in.Claims = []*resourceapi.ResourceClaim{big}
			},
			results: []resourceapi.AllocationResult{nicResult(nicShare("r", "s1", "20G"), nicShare("s", "s2", "20G"))},
			want:    []verify.Rule{verify.RuleCapacity}},
		{name: "firstAvailable: the second alternative with its count",
			claims:  []*resourceapi.ResourceClaim{firstAvailable},
			results: []resourceapi.AllocationResult{local(gpu("r/small", "gpu-0"))}},
		{name: "firstAvailable: a result naming the request instead of a subrequest",
			claims:  []*resourceapi.ResourceClaim{firstAvailable},
			results: []resourceapi.AllocationResult{local(gpu("r", "gpu-0"))},
			want:    []verify.Rule{verify.RuleUnknownRequest, verify.RuleResultCount}},
		{name: "firstAvailable while DRAPrioritizedList is off",
			input: func(in *verify.Input) {
				in.Features = ptr.To(verify.DefaultFeatures())
				in.Features.DRAPrioritizedList = false
			},
			claims:  []*resourceapi.ResourceClaim{firstAvailable},
			results: []resourceapi.AllocationResult{local(gpu("r/small", "gpu-0"))},
			want:    []verify.Rule{verify.RuleFeature}},
		{name: "allocation mode All gets every matching device",
			claims:  []*resourceapi.ResourceClaim{all},
			results: []resourceapi.AllocationResult{local(gpu("r", "gpu-0"), mig("r", "mig-full"), mig("r", "mig-half-0"), mig("r", "mig-half-1"))},
			want:    []verify.Rule{verify.RuleCounters}},
		{name: "allocation mode All missing a matching device",
			claims:  []*resourceapi.ResourceClaim{all},
			results: []resourceapi.AllocationResult{local(gpu("r", "gpu-0"))},
			want:    []verify.Rule{verify.RuleResultCount}},
		{name: "claim configuration for all requests is copied with no request names",
			claims:  []*resourceapi.ResourceClaim{configured},
			results: []resourceapi.AllocationResult{configuredResult}},
		{name: "claim configuration missing from the result",
			claims:  []*resourceapi.ResourceClaim{configured},
			results: []resourceapi.AllocationResult{local(gpu("r", "gpu-0"))},
			want:    []verify.Rule{verify.RuleConfig}},
		{name: "a node-local device without a node selector in the result",
			claims:  []*resourceapi.ResourceClaim{claim("c", exact("r", "gpu", 1))},
			results: []resourceapi.AllocationResult{{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{gpu("r", "gpu-0")}}}},
			want:    []verify.Rule{verify.RuleNodeSelector}},
		{name: "a selector that fails at runtime",
			claims:  []*resourceapi.ResourceClaim{claim("c", exact("r", "gpu", 1, `device.attributes["gpu.example.com"].missing == 1`))},
			results: []resourceapi.AllocationResult{local(gpu("r", "gpu-0"))},
			want:    []verify.Rule{verify.RuleCEL}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := baseInput()
			if tc.input != nil {
				tc.input(&in)
			}
			before := snapshot(in, tc.claims, tc.results)
			got, err := verify.Check(context.Background(), in, tc.claims, tc.results)
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			var rules []verify.Rule
			for _, v := range got {
				if !slices.Contains(rules, v.Rule) {
					rules = append(rules, v.Rule)
				}
			}
			slices.Sort(rules)
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if !slices.Equal(rules, want) {
				t.Errorf("rules %v, want %v; violations:", rules, want)
				for _, v := range got {
					t.Errorf("  %s", v)
				}
			}
			if !equality.Semantic.DeepEqual(before, snapshot(in, tc.claims, tc.results)) {
				t.Errorf("Check mutated its inputs")
			}
		})
	}
}

type inputs struct {
	Slices  []resourceapi.ResourceSlice
	Claims  []resourceapi.ResourceClaim
	Results []resourceapi.AllocationResult
}

func snapshot(in verify.Input, claims []*resourceapi.ResourceClaim, results []resourceapi.AllocationResult) inputs {
	var s inputs
	for _, x := range in.Slices {
		s.Slices = append(s.Slices, *x.DeepCopy())
	}
	for _, x := range append(slices.Clone(in.Claims), claims...) {
		s.Claims = append(s.Claims, *x.DeepCopy())
	}
	for _, r := range results {
		s.Results = append(s.Results, *r.DeepCopy())
	}
	return s
}

func TestCheckRejectsUnusableArguments(t *testing.T) {
	c := claim("c", exact("r", "gpu", 1))
	if _, err := verify.Check(context.Background(), baseInput(), []*resourceapi.ResourceClaim{c}, nil); !errors.Is(err, verify.ErrInput) {
		t.Errorf("mismatched lengths: err %v, want ErrInput", err)
	}
	if _, err := verify.Check(context.Background(), baseInput(), []*resourceapi.ResourceClaim{nil}, make([]resourceapi.AllocationResult, 1)); !errors.Is(err, verify.ErrInput) {
		t.Errorf("nil claim: err %v, want ErrInput", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := verify.Check(ctx, baseInput(), []*resourceapi.ResourceClaim{c}, []resourceapi.AllocationResult{local(gpu("r", "gpu-0"))}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: err %v, want context.Canceled", err)
	}
}
