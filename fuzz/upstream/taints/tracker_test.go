package taints_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dralloc/dralloc/taints"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/dynamic-resource-allocation/resourceslice/tracker"
	"pgregory.net/rapid"
)

// TestEvaluatorAgreesWithTracker compares the effective taints of every device with what the upstream
// ResourceSlice tracker (the component kube-scheduler uses to apply DeviceTaintRules) publishes for the same
// slices and rules, over a fake clientset. The tracker lists rules in informer order, so taints are compared
// as multisets; dralloc's own order (slice taints, then rules by name) is checked by its unit tests.
func TestEvaluatorAgreesWithTracker(t *testing.T) {
	var compared, devices atomic.Int64
	rapid.Check(t, func(t *rapid.T) {
		var objs []runtime.Object
		var sliceList []*resourceapi.ResourceSlice
		for _, drv := range []string{"gpu.example.com", "other.example.com"} {
			for _, pool := range []string{"node-1", "node-2"} {
				n := pool
				s := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: drv + "-" + pool}, Spec: resourceapi.ResourceSliceSpec{
					Driver: drv, NodeName: &n, Pool: resourceapi.ResourcePool{Name: pool, Generation: 1, ResourceSliceCount: 1}}}
				for i := range 2 {
					d := resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i)}
					if rapid.IntRange(0, 3).Draw(t, s.Name+d.Name) == 0 {
						d.Taints = []resourceapi.DeviceTaint{genTaint(t)}
					}
					s.Spec.Devices = append(s.Spec.Devices, d)
				}
				sliceList = append(sliceList, s)
				objs = append(objs, s)
			}
		}
		var rules []*resourceapi.DeviceTaintRule
		for i := range rapid.IntRange(0, 4).Draw(t, "rules") {
			var sel *resourceapi.DeviceTaintSelector
			if rapid.IntRange(0, 5).Draw(t, fmt.Sprint("hasSel", i)) > 0 {
				sel = &resourceapi.DeviceTaintSelector{}
				if rapid.Bool().Draw(t, fmt.Sprint("driver", i)) {
					sel.Driver = ptr(rapid.SampledFrom([]string{"gpu.example.com", "other.example.com"}).Draw(t, fmt.Sprint("drivername", i)))
				}
				if rapid.Bool().Draw(t, fmt.Sprint("pool", i)) {
					sel.Pool = ptr(rapid.SampledFrom([]string{"node-1", "node-2"}).Draw(t, fmt.Sprint("poolname", i)))
				}
				if rapid.Bool().Draw(t, fmt.Sprint("device", i)) {
					sel.Device = ptr(rapid.SampledFrom([]string{"gpu-0", "gpu-1"}).Draw(t, fmt.Sprint("devicename", i)))
				}
			}
			taint := genTaint(t)
			taint.Effect = rapid.SampledFrom(effects[:3]).Draw(t, fmt.Sprint("ruleEffect", i))
			r := &resourceapi.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("rule-", i)},
				Spec: resourceapi.DeviceTaintRuleSpec{DeviceSelector: sel, Taint: taint}}
			rules = append(rules, r)
			objs = append(objs, r)
		}
		e, err := taints.NewEvaluator(rules)
		if err != nil {
			t.Fatal(err)
		}
		patched, err := trackedSlices(objs)
		if err != nil {
			t.Fatal(err)
		}
		compared.Add(1)
		byName := map[string]*resourceapi.ResourceSlice{}
		for _, s := range patched {
			byName[s.Name] = s
		}
		for _, s := range sliceList {
			p := byName[s.Name]
			if p == nil {
				t.Fatalf("tracker lost slice %s", s.Name)
			}
			for i := range s.Spec.Devices {
				devices.Add(1)
				got := taintStrings(e.Taints(s.Spec.Driver, s.Spec.Pool.Name, &s.Spec.Devices[i]))
				want := taintStrings(p.Spec.Devices[i].Taints)
				if !slices.Equal(got, want) {
					t.Fatalf("%s/%s: dralloc %v, tracker %v", s.Name, s.Spec.Devices[i].Name, got, want)
				}
			}
		}
	})
	t.Logf("compared %d clusters (%d devices) with the upstream tracker", compared.Load(), devices.Load())
}

func taintStrings(ts []resourceapi.DeviceTaint) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.String())
	}
	sort.Strings(out)
	return out
}

// trackedSlices runs the upstream tracker over a fake clientset holding objs and returns the patched slices.
func trackedSlices(objs []runtime.Object) ([]*resourceapi.ResourceSlice, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client := fake.NewSimpleClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	tr, err := tracker.StartTracker(ctx, tracker.Options{
		EnableDeviceTaintRules: true,
		SliceInformer:          factory.Resource().V1().ResourceSlices(),
		TaintInformer:          factory.Resource().V1().DeviceTaintRules(),
	})
	if err != nil {
		return nil, err
	}
	defer tr.Stop()
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	factory.WaitForCacheSync(ctx.Done())
	for !tr.HasSynced() {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		time.Sleep(time.Millisecond)
	}
	defer cancel()
	return tr.ListPatchedResourceSlices()
}
