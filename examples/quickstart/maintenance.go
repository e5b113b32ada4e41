package main

import (
	"fmt"
	"time"

	"github.com/dralloc/dralloc/taints"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// maintenance is the quickstart's maintenance scene: an operator takes one GPU of an H100 node out for a
// firmware update with a DeviceTaintRule. It first publishes the rule with effect None, as a dry run that
// says who would be evicted, then switches it to NoExecute: the other seven GPUs stay schedulable, and the
// claims on the tainted GPU are evicted now or after their tolerationSeconds.
func maintenance(slices []*resourceapi.ResourceSlice) error {
	const node, device = "node-h100-0", "gpu-3"
	now := time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)
	added := metav1.NewTime(now.Add(-2 * time.Minute))
	rule := &resourceapi.DeviceTaintRule{
		ObjectMeta: metav1.ObjectMeta{Name: "firmware-" + node + "-" + device, Generation: 1},
		Spec: resourceapi.DeviceTaintRuleSpec{
			DeviceSelector: &resourceapi.DeviceTaintSelector{Driver: ptr.To(driver), Pool: ptr.To(node), Device: ptr.To(device)},
			Taint: resourceapi.DeviceTaint{Key: "example.com/maintenance", Value: "firmware",
				Effect: resourceapi.DeviceTaintEffectNone, TimeAdded: &added},
		},
	}

	// Claims already running on the node; their allocation results carry the requests' tolerations.
	claims := []*resourceapi.ResourceClaim{
		allocatedClaim("train", device),
		allocatedClaim("notebook", device, resourceapi.DeviceToleration{Key: "example.com/maintenance",
			Operator: resourceapi.DeviceTolerationOpExists, Effect: resourceapi.DeviceTaintEffectNoExecute, TolerationSeconds: ptr.To(int64(600))}),
		allocatedClaim("monitor", device, resourceapi.DeviceToleration{Operator: resourceapi.DeviceTolerationOpExists,
			Effect: resourceapi.DeviceTaintEffectNoExecute}),
		allocatedClaim("serve", "gpu-5"),
	}

	fmt.Println("\n== maintenance: DeviceTaintRule", rule.Name)
	dryRun, err := taints.NewEvaluator([]*resourceapi.DeviceTaintRule{rule})
	if err != nil {
		return err
	}
	plan, err := dryRun.Plan(now, slices, claims)
	if err != nil {
		return err
	}
	fmt.Println("effect None (dry run):", plan.RuleStatus[rule.Name].Conditions[0].Message)

	rule.Spec.Taint.Effect = resourceapi.DeviceTaintEffectNoExecute
	rule.Generation++
	e, err := taints.NewEvaluator([]*resourceapi.DeviceTaintRule{rule})
	if err != nil {
		return err
	}
	for _, s := range slices {
		if s.Spec.Pool.Name != node {
			continue
		}
		schedulable := 0
		for i := range s.Spec.Devices {
			d := &s.Spec.Devices[i]
			if t, blocked := taints.Blocking(e.Taints(s.Spec.Driver, s.Spec.Pool.Name, d), nil); blocked {
				fmt.Printf("%s/%s blocked for new claims by %s\n", node, d.Name, t.String())
				continue
			}
			schedulable++
		}
		fmt.Printf("%s: %d of %d GPUs schedulable for claims without tolerations\n", node, schedulable, len(s.Spec.Devices))
	}

	plan, err = e.Plan(now, slices, claims)
	if err != nil {
		return err
	}
	for _, ev := range plan.Now {
		fmt.Printf("evict now:  claim %s (pods %s)\n", ev.Claim, podNames(ev.Pods))
	}
	for _, ev := range plan.Later {
		fmt.Printf("evict at %s: claim %s (pods %s)\n", ev.At.Format(time.TimeOnly), ev.Claim, podNames(ev.Pods))
	}
	evicted := map[string]bool{}
	for _, ev := range append(plan.Now, plan.Later...) {
		evicted[ev.Claim.Name] = true
	}
	for _, c := range claims {
		if !evicted[c.Name] {
			res := c.Status.Allocation.Devices.Results[0]
			fmt.Printf("stays:      claim %s/%s on %s (%d tolerations)\n", c.Namespace, c.Name, res.Device, len(res.Tolerations))
		}
	}
	cond := plan.RuleStatus[rule.Name].Conditions[0]
	fmt.Printf("status: %s=%s (%s)\n", cond.Type, cond.Status, cond.Message)
	return nil
}

func allocatedClaim(name, device string, tolerations ...resourceapi.DeviceToleration) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name}}
	c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
		{Request: "gpu", Driver: driver, Pool: "node-h100-0", Device: device, Tolerations: tolerations},
	}}}
	c.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: name + "-0", UID: types.UID("uid-" + name)}}
	return c
}

func podNames(refs []resourceapi.ResourceClaimConsumerReference) string {
	out := ""
	for i, r := range refs {
		if i > 0 {
			out += ", "
		}
		out += r.Name
	}
	return out
}
