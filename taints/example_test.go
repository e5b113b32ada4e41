package taints_test

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/dralloc/dralloc/celenv"
	"github.com/dralloc/dralloc/taints"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func ptr[T any](v T) *T { return &v }

var (
	now  = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	node = "node-1"
)

func gpuSlice() *resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{Spec: resourceapi.ResourceSliceSpec{
		Driver: "gpu.nvidia.com", Pool: resourceapi.ResourcePool{Name: node}, NodeName: &node}}
	for i := range 4 {
		product := "H100"
		s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i),
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"productName": {StringValue: &product}}})
	}
	s.Spec.Devices[1].Taints = []resourceapi.DeviceTaint{{Key: "gpu.nvidia.com/ecc-errors", Value: "17", Effect: resourceapi.DeviceTaintEffectNone}}
	return s
}

func maintenanceRule() *resourceapi.DeviceTaintRule {
	added := metav1.NewTime(now.Add(-time.Minute))
	return &resourceapi.DeviceTaintRule{
		ObjectMeta: metav1.ObjectMeta{Name: "maintenance-gpu-3"},
		Spec: resourceapi.DeviceTaintRuleSpec{
			DeviceSelector: &resourceapi.DeviceTaintSelector{Driver: ptr("gpu.nvidia.com"), Pool: ptr(node), Device: ptr("gpu-3")},
			Taint:          resourceapi.DeviceTaint{Key: "maintenance", Effect: resourceapi.DeviceTaintEffectNoExecute, TimeAdded: &added},
		},
	}
}

func ExampleToleratesTaint() {
	taint := resourceapi.DeviceTaint{Key: "maintenance", Value: "firmware", Effect: resourceapi.DeviceTaintEffectNoSchedule}
	fmt.Println(
		taints.ToleratesTaint(resourceapi.DeviceToleration{Key: "maintenance", Operator: resourceapi.DeviceTolerationOpExists}, taint),
		taints.ToleratesTaint(resourceapi.DeviceToleration{Key: "maintenance", Value: "reboot"}, taint),
		taints.ToleratesTaint(resourceapi.DeviceToleration{Operator: resourceapi.DeviceTolerationOpExists, Effect: resourceapi.DeviceTaintEffectNoExecute}, taint),
	)
	// Output: true false false
}

func ExampleTolerated() {
	taint := resourceapi.DeviceTaint{Key: "maintenance", Effect: resourceapi.DeviceTaintEffectNoSchedule}
	fmt.Println(taints.Tolerated(taint, []resourceapi.DeviceToleration{{Operator: resourceapi.DeviceTolerationOpExists}}))
	// Output: true
}

func ExampleBlocking() {
	device := []resourceapi.DeviceTaint{
		{Key: "gpu.nvidia.com/ecc-errors", Value: "17", Effect: resourceapi.DeviceTaintEffectNone},
		{Key: "maintenance", Effect: resourceapi.DeviceTaintEffectNoSchedule},
	}
	t, blocked := taints.Blocking(device, nil)
	fmt.Println(blocked, t.Key)
	_, blocked = taints.Blocking(device, []resourceapi.DeviceToleration{{Key: "maintenance", Operator: resourceapi.DeviceTolerationOpExists}})
	fmt.Println(blocked)
	// Output:
	// true maintenance
	// false
}

func ExampleNewEvaluator() {
	e, err := taints.NewEvaluator([]*resourceapi.DeviceTaintRule{maintenanceRule()})
	if err != nil {
		fmt.Println(err)
		return
	}
	s := gpuSlice()
	for i := range s.Spec.Devices {
		d := &s.Spec.Devices[i]
		fmt.Println(d.Name, len(e.Taints(s.Spec.Driver, s.Spec.Pool.Name, d)))
	}
	_, err = taints.NewEvaluator([]*resourceapi.DeviceTaintRule{{ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Spec: resourceapi.DeviceTaintRuleSpec{Taint: resourceapi.DeviceTaint{Key: "maintenance"}}}})
	fmt.Println(err)
	// Output:
	// gpu-0 0
	// gpu-1 1
	// gpu-2 0
	// gpu-3 1
	// invalid DeviceTaintRule: DeviceTaintRule bad: spec.taint.effect: Required value
}

func ExampleEvaluator_RuleNames() {
	e, _ := taints.NewEvaluator([]*resourceapi.DeviceTaintRule{maintenanceRule()})
	fmt.Println(e.RuleNames(taints.DeviceID{Driver: "gpu.nvidia.com", Pool: node, Device: "gpu-3"}))
	// Output: [maintenance-gpu-3]
}

func ExampleEvaluator_Plan() {
	e, _ := taints.NewEvaluator([]*resourceapi.DeviceTaintRule{maintenanceRule()})
	claim := func(name string, tols ...resourceapi.DeviceToleration) *resourceapi.ResourceClaim {
		c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name}}
		c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
			{Request: "gpu", Driver: "gpu.nvidia.com", Pool: node, Device: "gpu-3", Tolerations: tols}}}}
		c.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: name + "-pod"}}
		return c
	}
	patient := resourceapi.DeviceToleration{Key: "maintenance", Operator: resourceapi.DeviceTolerationOpExists,
		Effect: resourceapi.DeviceTaintEffectNoExecute, TolerationSeconds: ptr(int64(600))}
	plan, _ := e.Plan(now, []*resourceapi.ResourceSlice{gpuSlice()}, []*resourceapi.ResourceClaim{claim("train"), claim("serve", patient)})
	for _, ev := range plan.Now {
		fmt.Println("now:", ev.Claim, "because of", ev.Rule)
	}
	for _, ev := range plan.Later {
		fmt.Println("later:", ev.Claim, "at", ev.At.Format(time.TimeOnly))
	}
	fmt.Println(plan.RuleStatus["maintenance-gpu-3"].Conditions[0].Message)
	// Output:
	// now: ml/train because of maintenance-gpu-3
	// later: ml/serve at 12:09:00
	// 2 pods need to be evicted in 1 namespace.
}

func ExampleEvaluator_Conditions() {
	var e *taints.Evaluator // no rules: only the slices' own taints
	for _, c := range e.Conditions([]*resourceapi.ResourceSlice{gpuSlice()}) {
		for _, d := range c.Devices {
			fmt.Println(c.Key, d.Device, d.Taint.Value)
		}
	}
	// Output: gpu.nvidia.com/ecc-errors gpu.nvidia.com/node-1/gpu-1 17
}

func ExampleEscalate() {
	var e *taints.Evaluator
	conds := e.Conditions([]*resourceapi.ResourceSlice{gpuSlice()})
	tooMany := func(c taints.DeviceCondition) bool { // the policy: more than 10 ECC errors
		n, err := strconv.Atoi(c.Taint.Value)
		return err == nil && n > 10
	}
	rules, _ := taints.Escalate(conds[0].Devices, tooMany, resourceapi.DeviceTaintEffectNoSchedule, "ecc")
	for _, r := range rules {
		fmt.Println(*r.Spec.DeviceSelector.Device, r.Spec.Taint.Key, r.Spec.Taint.Effect)
	}
	// Output: gpu-1 gpu.nvidia.com/ecc-errors NoSchedule
}

func ExampleExpandClass() {
	env, _ := celenv.NewEnv(celenv.Options{})
	class := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "h100"}, Spec: resourceapi.DeviceClassSpec{
		Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.attributes["gpu.nvidia.com"].productName == "H100"`}}}}}
	rules, err := taints.ExpandClass(context.Background(), env, class, resourceapi.DeviceTaintSelector{Pool: ptr(node)},
		resourceapi.DeviceTaint{Key: "maintenance", Effect: resourceapi.DeviceTaintEffectNoSchedule}, "h100-maintenance", []*resourceapi.ResourceSlice{gpuSlice()})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(rules), "rules, first selects", *rules[0].Spec.DeviceSelector.Device)
	// Output: 4 rules, first selects gpu-0
}

func ExampleValidateTaints() {
	errs := taints.ValidateTaints([]resourceapi.DeviceTaint{{Key: "maintenance", Effect: "PreferNoSchedule"}},
		field.NewPath("spec", "devices").Index(0).Child("taints"))
	fmt.Println(errs.ToAggregate())
	// Output: spec.devices[0].taints[0].effect: Unsupported value: "PreferNoSchedule": supported values: "None", "NoSchedule", "NoExecute"
}

func ExampleValidateTaint() {
	fmt.Println(len(taints.ValidateTaint(resourceapi.DeviceTaint{Key: "maintenance", Effect: resourceapi.DeviceTaintEffectNoExecute}, field.NewPath("taint"))))
	// Output: 0
}

func ExampleValidateToleration() {
	errs := taints.ValidateToleration(resourceapi.DeviceToleration{Value: "x"}, field.NewPath("tolerations").Index(0))
	fmt.Println(errs.ToAggregate())
	// Output: tolerations[0].operator: Invalid value: "": must be Exists when key is empty
}

func ExampleValidateRule() {
	r := maintenanceRule()
	r.Spec.DeviceSelector.Device = ptr("GPU_3")
	fmt.Println(taints.ValidateRule(r).ToAggregate() != nil)
	// Output: true
}
