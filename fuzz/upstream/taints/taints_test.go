package taints_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/dralloc/dralloc/taints"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/dynamic-resource-allocation/structured"
	"pgregory.net/rapid"
)

var (
	keys      = []string{"a", "b", "gpu.example.com/ecc"}
	values    = []string{"", "1", "2"}
	effects   = []resourceapi.DeviceTaintEffect{"None", "NoSchedule", "NoExecute", "PreferNoSchedule"}
	tEffects  = []resourceapi.DeviceTaintEffect{"", "None", "NoSchedule", "NoExecute"}
	operators = []resourceapi.DeviceTolerationOperator{"", "Equal", "Exists", "Gt"}
)

func genTaint(t *rapid.T) resourceapi.DeviceTaint {
	return resourceapi.DeviceTaint{
		Key:    rapid.SampledFrom(keys).Draw(t, "key"),
		Value:  rapid.SampledFrom(values).Draw(t, "value"),
		Effect: rapid.SampledFrom(effects).Draw(t, "effect"),
	}
}

func genToleration(t *rapid.T) resourceapi.DeviceToleration {
	tol := resourceapi.DeviceToleration{
		Key:      rapid.SampledFrom(append([]string{""}, keys...)).Draw(t, "tkey"),
		Operator: rapid.SampledFrom(operators).Draw(t, "op"),
		Value:    rapid.SampledFrom(values).Draw(t, "tvalue"),
		Effect:   rapid.SampledFrom(tEffects).Draw(t, "teffect"),
	}
	if rapid.Bool().Draw(t, "hasSeconds") {
		s := rapid.Int64Range(-10, 600).Draw(t, "seconds")
		tol.TolerationSeconds = &s
	}
	return tol
}

func TestToleratesTaintAgreesWithUpstream(t *testing.T) {
	var compared, tolerated atomic.Int64
	rapid.Check(t, func(t *rapid.T) {
		tol, taint := genToleration(t), genTaint(t)
		got, want := taints.ToleratesTaint(tol, taint), resourceclaim.ToleratesTaint(tol, taint)
		compared.Add(1)
		if got {
			tolerated.Add(1)
		}
		if got != want {
			t.Fatalf("ToleratesTaint(%+v, %+v) = %v, upstream %v", tol, taint, got, want)
		}
	})
	t.Logf("compared %d cases with resourceclaim.ToleratesTaint: %d tolerated", compared.Load(), tolerated.Load())
}

// TestBlockingAgreesWithUpstream publishes one device with taints of its own, adds DeviceTaintRules, and
// compares taints.Blocking over the evaluator's effective taints with whether the upstream allocator (given
// the patched slice, as kube-scheduler's tracker gives it) allocates the device to a request with
// tolerations.
func TestBlockingAgreesWithUpstream(t *testing.T) {
	var compared, blocked atomic.Int64
	rapid.Check(t, func(t *rapid.T) {
		own := rapid.SliceOfN(rapid.Custom(genTaint), 0, 3).Draw(t, "own")
		var rules []*resourceapi.DeviceTaintRule
		for i := range rapid.IntRange(0, 3).Draw(t, "rules") {
			sel := &resourceapi.DeviceTaintSelector{}
			if rapid.Bool().Draw(t, fmt.Sprint("driver", i)) {
				sel.Driver = ptr(rapid.SampledFrom([]string{"gpu.example.com", "other.example.com"}).Draw(t, fmt.Sprint("drivername", i)))
			}
			if rapid.Bool().Draw(t, fmt.Sprint("device", i)) {
				sel.Device = ptr(rapid.SampledFrom([]string{"gpu-0", "gpu-1"}).Draw(t, fmt.Sprint("devicename", i)))
			}
			if rapid.IntRange(0, 5).Draw(t, fmt.Sprint("nil", i)) == 0 {
				sel = nil
			}
			taint := genTaint(t)
			taint.Effect = rapid.SampledFrom(effects[:3]).Draw(t, fmt.Sprint("ruleEffect", i))
			rules = append(rules, &resourceapi.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("rule-", i)},
				Spec: resourceapi.DeviceTaintRuleSpec{DeviceSelector: sel, Taint: taint}})
		}
		tols := rapid.SliceOfN(rapid.Custom(genToleration), 0, 3).Draw(t, "tolerations")
		e, err := taints.NewEvaluator(rules)
		if err != nil {
			t.Fatal(err)
		}
		dev := resourceapi.Device{Name: "gpu-0", Taints: own}
		effective := e.Taints("gpu.example.com", "node-1", &dev)
		_, isBlocked := taints.Blocking(effective, tols)

		patched := dev
		patched.Taints = effective
		ok, err := upstreamAllocates(patched, tols)
		if err != nil {
			t.Fatal(err)
		}
		compared.Add(1)
		if isBlocked {
			blocked.Add(1)
		}
		if ok == isBlocked {
			t.Fatalf("Blocking = %v, upstream allocates = %v (taints %+v, tolerations %+v)", isBlocked, ok, effective, tols)
		}
	})
	t.Logf("compared %d cases with the upstream allocator: %d blocked", compared.Load(), blocked.Load())
}

func ptr[T any](v T) *T { return &v }

var celCache = cel.NewCache(10, cel.Features{})

type classes []*resourceapi.DeviceClass

func (l classes) List() ([]*resourceapi.DeviceClass, error) { return l, nil }
func (l classes) Get(name string) (*resourceapi.DeviceClass, error) {
	if name == "gpu" {
		return l[0], nil
	}
	return nil, fmt.Errorf("deviceclass %q not found", name)
}

func upstreamAllocates(dev resourceapi.Device, tols []resourceapi.DeviceToleration) (bool, error) {
	n := "node-1"
	slice := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Spec: resourceapi.ResourceSliceSpec{
		Driver: "gpu.example.com", NodeName: &n, Devices: []resourceapi.Device{dev},
		Pool: resourceapi.ResourcePool{Name: n, Generation: 1, ResourceSliceCount: 1}}}
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", UID: "c"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "r",
			Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1, Tolerations: tols}}}}}}
	features := structured.Features{AdminAccess: true, CompatibilityGroups: true, ConsumableCapacity: true, DerivedAttributes: true,
		DeviceBindingAndStatus: true, DeviceTaints: true, FractionalCapacityRange: true, ListTypeAttributes: true,
		OptionalNodeOperations: true, PartitionableDevices: true, PrioritizedList: true}
	state := structured.AllocatedState{AllocatedDevices: sets.New[structured.DeviceID](), AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity: structured.NewConsumedCapacityCollection()}
	ctx := context.Background()
	a, err := structured.NewAllocator(ctx, features, state, classes{{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}}}, []*resourceapi.ResourceSlice{slice}, celCache)
	if err != nil {
		return false, err
	}
	res, err := a.Allocate(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, []*resourceapi.ResourceClaim{claim})
	return res != nil, err
}

func BenchmarkToleratesTaint(b *testing.B) {
	taint := resourceapi.DeviceTaint{Key: "gpu.example.com/ecc", Value: "high", Effect: "NoExecute"}
	tols := []resourceapi.DeviceToleration{{Key: "gpu.example.com/ecc", Value: "low"}, {Key: "other", Operator: "Exists"}, {Operator: "Exists", Effect: "NoExecute"}}
	b.Run("dralloc", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, tol := range tols {
				taints.ToleratesTaint(tol, taint)
			}
		}
	})
	b.Run("upstream", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, tol := range tols {
				resourceclaim.ToleratesTaint(tol, taint)
			}
		}
	})
}
