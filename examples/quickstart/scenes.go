package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/taints"
)

// gpus is a template of count whole GPUs of the class gpu.nvidia.com.
func gpus(name string, count int64) *resourceapi.ResourceClaimTemplate {
	t := &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	t.Spec.Spec.Devices.Requests = []resourceapi.DeviceRequest{{Name: "gpus", Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: "gpu.nvidia.com", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count}}}
	return t
}

// gangScene: a PodGroup of two pods with six GPUs each, all or nothing, on nodes of one rack.
func gangScene(ctx context.Context, w io.Writer, s *story) error {
	fmt.Fprintln(w, "\n== 5. a gang: PodGroup trainer, 2 pods x 6 GPUs, all or nothing, in one rack")
	t := gpus("six-gpus", 6)
	if err := s.cluster.AddOrUpdateTemplate(t); err != nil {
		return err
	}
	s.objects.add(t)
	g := &schedulingapi.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "trainer", UID: "uid-trainer"}}
	g.Spec.SchedulingPolicy.Gang = &schedulingapi.GangSchedulingPolicy{MinCount: 2}
	g.Spec.SchedulingConstraints = &schedulingapi.PodGroupSchedulingConstraints{
		Topology: []schedulingapi.TopologyConstraint{{Key: rackLabel}}}
	if err := s.cluster.AddOrUpdatePodGroup(g); err != nil {
		return err
	}
	s.objects.add(g)
	var members []*v1.Pod
	for _, name := range []string{"trainer-0", "trainer-1"} {
		p := withClaim(newPod(name), "gpus", "", "six-gpus")
		p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &g.Name}
		members = append(members, p)
	}
	// Where kube-scheduler puts the gang: one pass over its pods, as it schedules a PodGroup.
	gp, err := s.cluster.PlaceGroup(ctx, g, members)
	if err != nil {
		return err
	}
	if err := s.cluster.AssumeGroup(gp); err != nil {
		return err
	}
	fmt.Fprintf(w, "PodGroup %s placed in %s=%s:\n", g.Name, rackLabel, gp.Domain)
	for _, pl := range gp.Pods {
		s.record(pl)
		fmt.Fprintf(w, "  pod %s -> %s: %s\n", pl.Pod.Name, pl.Node, devices(pl))
	}
	s.gang = gp
	return nil
}

// maintenanceScene: one GPU of the gang goes out for a firmware update. The DeviceTaintRule is published
// with effect None first, a dry run that says whom it would evict, then with NoExecute.
func maintenanceScene(ctx context.Context, w io.Writer, s *story) error {
	pl := s.gang.Pods[1]
	target := pl.Claims[0].Claim.Status.Allocation.Devices.Results[0]
	fmt.Fprintf(w, "\n== 6. maintenance: a DeviceTaintRule on %s/%s, dry run first, then NoExecute\n", target.Pool, target.Device)
	now := time.Date(2026, 12, 1, 14, 0, 0, 0, time.UTC)
	added := metav1.NewTime(now.Add(-time.Minute))
	rule := &resourceapi.DeviceTaintRule{
		ObjectMeta: metav1.ObjectMeta{Name: "firmware-" + target.Pool + "-" + target.Device, Generation: 1},
		Spec: resourceapi.DeviceTaintRuleSpec{
			DeviceSelector: &resourceapi.DeviceTaintSelector{Driver: &target.Driver, Pool: &target.Pool, Device: &target.Device},
			Taint: resourceapi.DeviceTaint{Key: "example.com/maintenance", Value: "firmware",
				Effect: resourceapi.DeviceTaintEffectNone, TimeAdded: &added},
		},
	}
	claims := s.snap.Claims(namespace)
	plan := func() (taints.Plan, error) {
		e, err := taints.NewEvaluator([]*resourceapi.DeviceTaintRule{rule})
		if err != nil {
			return taints.Plan{}, err
		}
		return e.Plan(now, s.slices, claims)
	}
	var err error
	if s.dryRun, err = plan(); err != nil {
		return err
	}
	fmt.Fprintf(w, "effect None (dry run): %s\n", s.dryRun.RuleStatus[rule.Name].Conditions[0].Message)

	rule = rule.DeepCopy()
	rule.Spec.Taint.Effect = resourceapi.DeviceTaintEffectNoExecute
	rule.Generation++
	if s.evictions, err = plan(); err != nil {
		return err
	}
	for _, ev := range s.evictions.Now {
		fmt.Fprintf(w, "effect NoExecute: evict now claim %s (pods %s)\n", ev.Claim, podNames(ev.Pods))
	}
	if err := s.snap.AddOrUpdateTaintRule(rule); err != nil {
		return err
	}
	s.rule = rule
	s.objects.add(rule)
	// New claims without a toleration stay off the device: the other GPUs of the node are still offered.
	e, err := taints.NewEvaluator([]*resourceapi.DeviceTaintRule{rule})
	if err != nil {
		return err
	}
	for _, sl := range s.slices {
		if sl.Spec.Pool.Name != target.Pool {
			continue
		}
		for i := range sl.Spec.Devices {
			d := &sl.Spec.Devices[i]
			if t, blocked := taints.Blocking(e.Taints(sl.Spec.Driver, sl.Spec.Pool.Name, d), nil); blocked {
				s.blocked = append(s.blocked, sl.Spec.Pool.Name+"/"+d.Name)
				fmt.Fprintf(w, "blocked for new claims: %s (%s)\n", sl.Spec.Pool.Name+"/"+d.Name, t.String())
			}
		}
	}
	return nil
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

// bigClaim asks for six whole GPUs on one node.
func bigClaim() *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "finetune"}}
	c.Spec = gpus("", 6).Spec.Spec
	return c
}

// explainScene: a pod asking for six more whole GPUs fits on no node; the explanation says why, node by
// node, grouped by reason.
func explainScene(ctx context.Context, w io.Writer, s *story) error {
	fmt.Fprintln(w, "\n== 7. a pod that fits nowhere, and why")
	if err := s.snap.AddOrUpdateClaim(bigClaim()); err != nil {
		return err
	}
	p := withClaim(newPod("finetune"), "gpus", "finetune", "")
	if _, err := s.cluster.Place(ctx, p); !errors.Is(err, pods.ErrNoNode) {
		return fmt.Errorf("pod finetune should fit nowhere yet, got %v", err)
	}
	why, err := s.cluster.Explain(ctx, p)
	if err != nil {
		return err
	}
	s.why = why
	fmt.Fprintf(w, "pod %s fits nowhere:\n", p.Name)
	for _, n := range why.Nodes {
		reason := n.Reason
		if n.Claims != nil { // every cause, not only the main one
			reason = strings.Join(n.Claims.Reasons(), "; ")
		}
		fmt.Fprintf(w, "  %-7s %s\n", n.Node, reason)
	}
	return nil
}

// requeueScene: pod train ends, which frees its claim; the requeue index says which pending claim may
// fit now, and the scheduler places that pod.
func requeueScene(ctx context.Context, w io.Writer, s *story) error {
	fmt.Fprintln(w, "\n== 8. requeue: pod train ends and frees its GPU; which pending claims may fit now?")
	r, err := allocator.NewRequeue(allocator.RequeueOptions{})
	if err != nil {
		return err
	}
	// An informer would feed these events as they happen.
	for _, c := range s.snap.Classes() {
		if _, err := r.AddOrUpdateClass(ctx, c); err != nil {
			return err
		}
	}
	for _, sl := range s.slices {
		if _, err := r.AddOrUpdateSlice(ctx, sl); err != nil {
			return err
		}
	}
	if _, err := r.AddOrUpdateTaintRule(ctx, s.rule); err != nil {
		return err
	}
	pending, _ := s.snap.Claim(namespace, "finetune")
	if err := r.AddPending(pending); err != nil {
		return err
	}
	freed, _ := s.snap.Claim(namespace, "train")
	trainPod := s.train.Pod
	if err := s.cluster.Remove(trainPod); err != nil { // the claim, reserved by no one, is deallocated
		return err
	}
	if s.requeued, err = r.ClaimDeallocated(ctx, freed); err != nil {
		return err
	}
	fmt.Fprintf(w, "claim %s/%s deallocated (%s); retry: %v\n", freed.Namespace, freed.Name,
		freed.Status.Allocation.Devices.Results[0].Pool+"/"+freed.Status.Allocation.Devices.Results[0].Device, s.requeued)
	for _, n := range s.requeued {
		if n.Name != "finetune" {
			continue
		}
		r.RemovePending(n.Namespace, n.Name)
		if s.big, err = s.place(ctx, w, withClaim(newPod("finetune"), "gpus", "finetune", "")); err != nil {
			return err
		}
	}
	return nil
}
