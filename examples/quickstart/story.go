package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/inventory"
	"github.com/dralloc/dralloc/taints"
)

const namespace = "ml"

// story is the cluster the quickstart builds and what each scene decided; the test checks the decisions.
type story struct {
	snap    *allocator.Snapshot
	cluster *pods.Cluster
	slices  []*resourceapi.ResourceSlice
	nodes   []*v1.Node
	objects objects

	legacy, train, notebook *pods.Placement
	serve                   []*pods.Placement
	gang                    *pods.GroupPlacement
	dryRun, evictions       taints.Plan
	rule                    *resourceapi.DeviceTaintRule
	blocked                 []string // devices the rule blocks for new claims
	why                     *pods.Explanation
	requeued                []types.NamespacedName
	big                     *pods.Placement
}

// tell plays the story's scenes in order, printing each to w.
func tell(w io.Writer) (*story, error) {
	ctx := context.Background()
	shareIDs := 0
	s := &story{
		// Deterministic share IDs and generated names, so that every run prints the same; nil means
		// random ones, as Kubernetes draws them.
		snap: allocator.NewSnapshot(allocator.Options{ShareIDs: func() types.UID {
			shareIDs++
			return types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", shareIDs))
		}}),
		objects: objects{},
	}
	suffix := 0
	s.cluster = pods.New(s.snap, pods.Options{
		NameSuffix: func() string { suffix++; return fmt.Sprintf("x%04d", suffix) },
		Preferred:  preferKVCache,
	})
	fmt.Fprintln(w, "dralloc quickstart: Dynamic Resource Allocation of Kubernetes 1.37 (resource.k8s.io/v1) on an in-memory fleet")
	fmt.Fprintln(w, "(-show list names every object the story creates, -show KIND/NAME prints one as YAML)")
	fmt.Fprintln(w)
	for _, scene := range []func(context.Context, io.Writer, *story) error{
		func(_ context.Context, w io.Writer, s *story) error { return inventoryScene(w, s) },
		extendedResourceScene, prioritizedScene, inferenceScene, gangScene, maintenanceScene, explainScene, requeueScene,
	} {
		if err := scene(ctx, w, s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// classSelector is true for the GPUs of NVIDIA's driver of one type ("gpu" or "mig").
func classSelector(typ string) string {
	return fmt.Sprintf(`device.driver == '%s' && device.attributes['%s'].type == '%s'`, inventory.DefaultDriver, inventory.DefaultDriver, typ)
}

// deviceClasses are what the platform team publishes: NVIDIA's two classes, gpu.nvidia.com serving the
// extended resource nvidia.com/gpu (so that pods written for the device plugin run unchanged), both kept
// off the GPUs that are shared by memory, which have a class of their own.
func deviceClasses() []*resourceapi.DeviceClass {
	class := func(name, expr string) *resourceapi.DeviceClass {
		return &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: resourceapi.DeviceClassSpec{
			Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: expr}}}}}
	}
	gpu := class("gpu.nvidia.com", classSelector(inventory.TypeGPU)+` && !device.allowMultipleAllocations`)
	gpu.Spec.ExtendedResourceName = new("nvidia.com/gpu")
	return []*resourceapi.DeviceClass{
		gpu,
		class("mig.nvidia.com", classSelector("mig")),
		class("inference.nvidia.com", classSelector(inventory.TypeGPU)+` && device.allowMultipleAllocations`),
	}
}

func newPod(name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID("uid-" + name)},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "main", Image: "nvcr.io/nvidia/cuda:12.4.0-base-ubuntu22.04"}}},
	}
}

// withClaim makes the pod's container use a claim: a ResourceClaim by name, or one generated from a
// template when template is set.
func withClaim(p *v1.Pod, entry, claim, template string) *v1.Pod {
	pc := v1.PodResourceClaim{Name: entry}
	if template != "" {
		pc.ResourceClaimTemplateName = &template
	} else {
		pc.ResourceClaimName = &claim
	}
	p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, pc)
	p.Spec.Containers[0].Resources.Claims = append(p.Spec.Containers[0].Resources.Claims, v1.ResourceClaim{Name: entry})
	return p
}

// place places and assumes a pod, records its objects and prints where it went.
func (s *story) place(ctx context.Context, w io.Writer, p *v1.Pod) (*pods.Placement, error) {
	pl, err := s.cluster.Place(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	if err := s.cluster.Assume(pl); err != nil {
		return nil, err
	}
	s.record(pl)
	fmt.Fprintf(w, "pod %s -> %s: %s\n", p.Name, pl.Node, devices(pl))
	return pl, nil
}

func (s *story) record(pl *pods.Placement) {
	s.objects.add(pl.Pod)
	for _, pc := range pl.Claims {
		s.objects.add(pc.Claim)
	}
}

// devices says which devices a placement allocated, per claim and request.
func devices(pl *pods.Placement) string {
	var parts []string
	for _, pc := range pl.Claims {
		if pc.Claim.Status.Allocation == nil {
			continue
		}
		byRequest := map[string][]string{}
		var order []string
		for _, r := range pc.Claim.Status.Allocation.Devices.Results {
			if byRequest[r.Request] == nil {
				order = append(order, r.Request)
			}
			d := r.Device
			if m, ok := r.ConsumedCapacity[inventory.CapMemory]; ok {
				d += fmt.Sprintf(" (%s of its memory, share %s)", m.String(), *r.ShareID)
			}
			byRequest[r.Request] = append(byRequest[r.Request], d)
		}
		for _, req := range order {
			parts = append(parts, fmt.Sprintf("claim %s request %s: %s", pc.Claim.Name, req, strings.Join(byRequest[req], ", ")))
		}
	}
	return strings.Join(parts, "; ")
}

// extendedResourceScene: the platform team's classes, and a pod written for NVIDIA's device plugin.
func extendedResourceScene(ctx context.Context, w io.Writer, s *story) error {
	fmt.Fprintln(w, "\n== 2. the platform team's DeviceClasses; an unchanged `nvidia.com/gpu: 2` pod gets DRA devices")
	for _, c := range deviceClasses() {
		if err := s.snap.AddOrUpdateClass(c); err != nil {
			return err
		}
		s.objects.add(c)
		ext := ""
		if c.Spec.ExtendedResourceName != nil {
			ext = " (serves extended resource " + *c.Spec.ExtendedResourceName + ")"
		}
		fmt.Fprintf(w, "DeviceClass %s%s: %s\n", c.Name, ext, c.Spec.Selectors[0].CEL.Expression)
	}
	two := resource.MustParse("2")
	p := newPod("legacy")
	// Requests as the API server defaults them from limits.
	p.Spec.Containers[0].Resources.Limits = v1.ResourceList{"nvidia.com/gpu": two}
	p.Spec.Containers[0].Resources.Requests = v1.ResourceList{"nvidia.com/gpu": two}
	pl, err := s.place(ctx, w, p)
	if err != nil {
		return err
	}
	m := pl.ExtendedResourceClaimStatus.RequestMappings[0]
	fmt.Fprintf(w, "  the scheduler's claim %s maps container %s's %s to request %s\n",
		pl.ExtendedResourceClaimStatus.ResourceClaimName, m.ContainerName, m.ResourceName, m.RequestName)
	s.legacy = pl
	return nil
}

// h100ElseMIG is a claim in the resource.k8s.io/v1 API itself: a whole GPU with at least 80Gi of memory
// (a CEL selector on the memory capacity), else a MIG device with at least 10Gi (firstAvailable).
func h100ElseMIG(name string) *resourceapi.ResourceClaim {
	memory := func(q string) []resourceapi.DeviceSelector {
		return []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf(
			`device.capacity['%s'].memory.compareTo(quantity('%s')) >= 0`, inventory.DefaultDriver, q)}}}
	}
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	c.Spec.Devices.Requests = []resourceapi.DeviceRequest{{Name: "gpu", FirstAvailable: []resourceapi.DeviceSubRequest{
		{Name: "whole", DeviceClassName: "gpu.nvidia.com", Selectors: memory("80Gi"), AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1},
		{Name: "mig", DeviceClassName: "mig.nvidia.com", Selectors: memory("10Gi"), AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1},
	}}}
	return c
}

// prioritizedScene: the same claim twice: on an H100 node it gets its first choice; on the A100 node,
// whose GPUs run in MIG mode and so publish no whole GPU, its second.
func prioritizedScene(ctx context.Context, w io.Writer, s *story) error {
	fmt.Fprintln(w, "\n== 3. a native claim: a whole GPU with >= 80Gi (CEL), else a MIG device with >= 10Gi (firstAvailable)")
	for _, c := range []*resourceapi.ResourceClaim{h100ElseMIG("train"), h100ElseMIG("notebook")} {
		if err := s.snap.AddOrUpdateClaim(c); err != nil {
			return err
		}
	}
	// One pod on the H100 pool, one on the A100 pool (node.kubernetes.io/instance-type, which every node
	// of a profile carries).
	train := withClaim(newPod("train"), "gpu", "train", "")
	train.Spec.NodeSelector = map[string]string{v1.LabelInstanceTypeStable: "dgxh100"}
	var err error
	if s.train, err = s.place(ctx, w, train); err != nil {
		return err
	}
	notebook := withClaim(newPod("notebook"), "gpu", "notebook", "")
	notebook.Spec.NodeSelector = map[string]string{v1.LabelInstanceTypeStable: "dgxa100"}
	s.notebook, err = s.place(ctx, w, notebook)
	return err
}

// preferKVCache asks for up to 24Gi for the claims of the pods' "kv-cache" entries, above their
// capacity.requests minimum: a range (an SDK extension; the result records one valid amount).
func preferKVCache(claim *resourceapi.ResourceClaim, request string) map[resourceapi.QualifiedName]resource.Quantity {
	if claim.Annotations[resourceapi.PodResourceClaimAnnotation] != "kv-cache" {
		return nil
	}
	return map[resourceapi.QualifiedName]resource.Quantity{inventory.CapMemory: resource.MustParse("24Gi")}
}

// inferenceScene: two inference servers share one H200 by memory.
func inferenceScene(ctx context.Context, w io.Writer, s *story) error {
	fmt.Fprintln(w, "\n== 4. consumable capacity: inference servers ask for at least 10Gi of a shared GPU and prefer 24Gi")
	fmt.Fprintln(w, "(Kubernetes records the point amount, 10Gi rounded up to the device's 4Gi steps: 12Gi; the range records 24Gi)")
	t := &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "kv-cache"}}
	t.Spec.Spec.Devices.Requests = []resourceapi.DeviceRequest{{Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: "inference.nvidia.com", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1,
		Capacity: &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{
			inventory.CapMemory: resource.MustParse("10Gi")}},
	}}}
	if err := s.cluster.AddOrUpdateTemplate(t); err != nil {
		return err
	}
	s.objects.add(t)
	for _, name := range []string{"serve-0", "serve-1"} {
		pl, err := s.place(ctx, w, withClaim(newPod(name), "kv-cache", "", "kv-cache"))
		if err != nil {
			return err
		}
		s.serve = append(s.serve, pl)
	}
	return nil
}
