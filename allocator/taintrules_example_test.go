package allocator_test

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
)

// A DeviceTaintRule taints every device of a driver; TaintRules gives the effective taints the
// allocator filters devices with.
func ExampleSnapshot_TaintRules() {
	snap := allocator.NewSnapshot(allocator.Options{})
	dev := &resourceapi.Device{Name: "gpu-0"}
	fmt.Println(len(snap.TaintRules().Taints("gpu.example.com", "node-a", dev)))
	driver := "gpu.example.com"
	rule := &resourceapi.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: "maintenance"}}
	rule.Spec.DeviceSelector = &resourceapi.DeviceTaintSelector{Driver: &driver}
	rule.Spec.Taint = resourceapi.DeviceTaint{Key: "example.com/maintenance", Effect: resourceapi.DeviceTaintEffectNoSchedule}
	if err := snap.AddOrUpdateTaintRule(rule); err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range snap.TaintRules().Taints("gpu.example.com", "node-a", dev) {
		fmt.Println(t.Key, t.Effect)
	}
	// Output:
	// 0
	// example.com/maintenance NoSchedule
}
