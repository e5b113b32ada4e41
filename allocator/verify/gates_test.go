package verify_test

import (
	"context"
	"slices"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"

	"github.com/dralloc/dralloc/allocator/verify"
)

// Pools, compatibility groups, binding conditions and node operations, and how the feature gates change them.
func TestCheckPoolsAndGates(t *testing.T) {
	withGroups := func(groups ...[]string) func(*verify.Input) {
		return func(in *verify.Input) {
			mig := in.Slices[2]
			for i := range groups {
				mig.Spec.Devices[i].ConsumesCounters[0].CompatibilityGroups = groups[i]
			}
		}
	}
	gates := func(f func(*verify.Features)) func(*verify.Input) {
		return func(in *verify.Input) {
			fs := verify.AllFeatures()
			f(&fs)
			in.Features = &fs
		}
	}
	both := func(fs ...func(*verify.Input)) func(*verify.Input) {
		return func(in *verify.Input) {
			for _, f := range fs {
				f(in)
			}
		}
	}
	skipOps := func(in *verify.Input) { in.Slices[0].Spec.SkipNodeOperations = []resourceapi.SkipNodeOperation{"*"} }
	declares := func(in *verify.Input) { in.Node.Status.DeclaredFeatures = []string{"DRAOptionalNodeOperations"} }
	binding := func(in *verify.Input) {
		d := &in.Slices[0].Spec.Devices[0]
		d.BindingConditions, d.BindingFailureConditions = []string{"attached"}, []string{"failed"}
	}
	two := claim("c", exact("r", "gpu", 2))
	halves := local(mig("r", "mig-half-0"), mig("r", "mig-half-1"))
	withSkip := gpu("r", "gpu-0")
	withSkip.SkipNodeOperations = []resourceapi.SkipNodeOperation{"*"}
	withBinding := gpu("r", "gpu-0")
	withBinding.BindingConditions, withBinding.BindingFailureConditions = []string{"attached"}, []string{"failed"}

	for _, tc := range []struct {
		name   string
		input  func(*verify.Input)
		claim  *resourceapi.ResourceClaim
		result resourceapi.AllocationResult
		want   []verify.Rule
	}{
		{name: "two halves sharing compatibility group g1 may be co-allocated",
			input: withGroups(nil, []string{"g1", "g2"}, []string{"g1"}), claim: two, result: halves},
		{name: "two halves with disjoint compatibility groups may not",
			input: withGroups(nil, []string{"g1"}, []string{"g2"}), claim: two, result: halves,
			want: []verify.Rule{verify.RuleCompatibility}},
		{name: "a half with groups and a half without may not",
			input: withGroups(nil, []string{"g1"}, nil), claim: two, result: halves,
			want: []verify.Rule{verify.RuleCompatibility}},
		{name: "with DRADeviceCompatibilityGroups off a slice using groups is left out of its pool",
			input: both(withGroups(nil, []string{"g1"}, []string{"g1"}), gates(func(f *verify.Features) { f.DRADeviceCompatibilityGroups = false })),
			claim: two, result: halves, want: []verify.Rule{verify.RuleFeature}},
		{name: "a pool with a slice missing is incomplete",
			input: func(in *verify.Input) { in.Slices = slices.Delete(in.Slices, 1, 2) }, claim: two, result: halves,
			want: []verify.Rule{verify.RulePool}},
		{name: "an older generation of a pool is not allocatable",
			input: func(in *verify.Input) {
				newer := in.Slices[0].DeepCopy()
				newer.Name, newer.Spec.Pool.Generation = "node-a-gpus-2", 2
				newer.Spec.Devices = newer.Spec.Devices[1:]
				in.Slices = append(in.Slices, newer)
			},
			claim: claim("c", exact("r", "gpu", 1)), result: local(gpu("r", "gpu-0")),
			want: []verify.Rule{verify.RuleUnknownDevice}},
		{name: "skipped node operations are copied into the result when the node declares the feature",
			input: both(skipOps, declares), claim: claim("c", exact("r", "gpu", 1)), result: local(withSkip)},
		{name: "skipped node operations need a node that declares DRAOptionalNodeOperations",
			input: skipOps, claim: claim("c", exact("r", "gpu", 1)), result: local(withSkip),
			want: []verify.Rule{verify.RuleNode}},
		{name: "the stable variant of the allocator ignores skipped node operations",
			input: both(skipOps, gates(func(f *verify.Features) {
				*f = verify.Features{DRAAdminAccess: true, DRAPrioritizedList: true, DRADeviceTaints: true, DRAPartitionableDevices: true}
			})),
			claim: claim("c", exact("r", "gpu", 1)), result: local(gpu("r", "gpu-0"))},
		{name: "binding conditions are copied into the result",
			input: binding, claim: claim("c", exact("r", "gpu", 1)), result: local(withBinding)},
		{name: "binding conditions missing from the result",
			input: binding, claim: claim("c", exact("r", "gpu", 1)), result: local(gpu("r", "gpu-0")),
			want: []verify.Rule{verify.RuleBinding}},
		{name: "devices with binding conditions are not allocatable while DRADeviceBindingConditions is off",
			input: both(binding, gates(func(f *verify.Features) { f.DRADeviceBindingConditions = false })),
			claim: claim("c", exact("r", "gpu", 1)), result: local(gpu("r", "gpu-0")),
			want: []verify.Rule{verify.RuleFeature}},
		{name: "with DRADeviceTaints off taints do not block",
			input: gates(func(f *verify.Features) { f.DRADeviceTaints = false }),
			claim: claim("c", exact("r", "gpu", 1)), result: local(gpu("r", "gpu-1"))},
		{name: "a DeviceTaintRule taints the devices it selects",
			input: func(in *verify.Input) {
				r := &resourceapi.DeviceTaintRule{}
				r.Name = "maintenance"
				r.Spec.DeviceSelector = &resourceapi.DeviceTaintSelector{Pool: ptr.To("node-a"), Device: ptr.To("gpu-0")}
				r.Spec.Taint = resourceapi.DeviceTaint{Key: "example.com/maintenance", Effect: resourceapi.DeviceTaintEffectNoExecute}
				in.TaintRules = []*resourceapi.DeviceTaintRule{r}
			},
			claim: claim("c", exact("r", "gpu", 1)), result: local(gpu("r", "gpu-0")),
			want: []verify.Rule{verify.RuleTaint}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := baseInput()
			all := verify.AllFeatures()
			in.Features = &all
			if tc.input != nil {
				tc.input(&in)
			}
			got, err := verify.Check(context.Background(), in, []*resourceapi.ResourceClaim{tc.claim}, []resourceapi.AllocationResult{tc.result})
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
		})
	}
}
