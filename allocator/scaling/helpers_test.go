package scaling_test

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/allocator/scaling"
	"github.com/dralloc/dralloc/inventory"
)

// The DeviceClasses NVIDIA's DRA driver installs (gpu.nvidia.com selects whole GPUs, mig.nvidia.com MIG
// devices, by the type attribute); the GPU class also serves the extended resource nvidia.com/gpu.
func nvidiaClasses() []*resourceapi.DeviceClass {
	class := func(name, typ, extended string) *resourceapi.DeviceClass {
		c := &resourceapi.DeviceClass{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
				Expression: `device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == '` + typ + `'`,
			}}}},
		}
		if extended != "" {
			c.Spec.ExtendedResourceName = &extended
		}
		return c
	}
	return []*resourceapi.DeviceClass{class("gpu.nvidia.com", "gpu", "nvidia.com/gpu"), class("mig.nvidia.com", "mig", "")}
}

// migDemo is the claim template of NVIDIA's MIG demo: four MIG devices of one A100 (1g.5gb twice,
// 2g.10gb, 3g.20gb), all with the same parentUUID.
func migDemo() *resourceapi.ResourceClaimTemplate {
	t := &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "mig-devices"}}
	for i, prof := range []string{"1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"} {
		t.Spec.Spec.Devices.Requests = append(t.Spec.Spec.Devices.Requests, resourceapi.DeviceRequest{
			Name: fmt.Sprintf("mig-%d", i),
			Exactly: &resourceapi.ExactDeviceRequest{
				DeviceClassName: "mig.nvidia.com",
				AllocationMode:  resourceapi.DeviceAllocationModeExactCount, // as the API server defaults it
				Count:           1,
				Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
					Expression: `device.attributes['gpu.nvidia.com'].profile == '` + prof + `'`,
				}}},
			},
		})
	}
	t.Spec.Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{MatchAttribute: ptr(resourceapi.FullyQualifiedName("gpu.nvidia.com/parentUUID"))}}
	return t
}

// gpusTemplate is a claim template for n whole GPUs.
func gpusTemplate(name string, n int64) *resourceapi.ResourceClaimTemplate {
	t := &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	t.Spec.Spec.Devices.Requests = []resourceapi.DeviceRequest{{Name: "gpus", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu.nvidia.com", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: n}}}
	return t
}

func ptr[T any](v T) *T { return &v }

// claimPod is a pod with one claim from the template.
func claimPod(name, template string) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{
			Containers:     []v1.Container{{Name: "main", Resources: v1.ResourceRequirements{Claims: []v1.ResourceClaim{{Name: "gpu"}}}}},
			ResourceClaims: []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr(template)}},
		},
	}
	return p
}

// extPod asks for n GPUs as the extended resource nvidia.com/gpu.
func extPod(name string, n int64) *v1.Pod {
	q := *resource.NewQuantity(n, resource.DecimalSI)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "main", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{"nvidia.com/gpu": q}, Limits: v1.ResourceList{"nvidia.com/gpu": q},
		}}}},
	}
}

// gang is a PodGroup of n pods with claims from the template, all of which must be placed.
func gang(name string, n int, template string) scaling.Pending {
	g := &schedulingapi.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)}}
	g.Spec.SchedulingPolicy.Gang = &schedulingapi.GangSchedulingPolicy{MinCount: int32(n)}
	u := scaling.Pending{Group: g}
	for i := range n {
		p := claimPod(fmt.Sprintf("%s-%d", name, i), template)
		p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr(name)}
		u.Pods = append(u.Pods, p)
	}
	return u
}

// suffixes gives generated claims deterministic names.
func suffixes() func() string {
	n := 0
	return func() string { n++; return fmt.Sprintf("s%04d", n) }
}

// newCluster is a cluster with NVIDIA's classes, the claim templates and the gangs' PodGroups, and the
// given nodes.
func newCluster(t tb, nodes []inventory.Instance, gangs ...scaling.Pending) *pods.Cluster {
	t.Helper()
	snap := allocator.NewSnapshot(allocator.Options{})
	for _, c := range nvidiaClasses() {
		must(t, snap.AddOrUpdateClass(c))
	}
	for _, in := range nodes {
		must(t, snap.AddOrUpdateNode(in.Node))
		for _, s := range in.Slices {
			must(t, snap.AddOrUpdateSlice(s))
		}
	}
	c := pods.New(snap, pods.Options{NameSuffix: suffixes(), Workers: 1})
	for _, tmpl := range []*resourceapi.ResourceClaimTemplate{migDemo(), gpusTemplate("one-gpu", 1), gpusTemplate("four-gpus", 4), gpusTemplate("two-gpus", 2)} {
		must(t, c.AddOrUpdateTemplate(tmpl))
	}
	for _, g := range gangs {
		must(t, c.AddOrUpdatePodGroup(g.Group))
	}
	return c
}

func must(t tb, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func profile(t tb, name string) inventory.Template {
	t.Helper()
	p, err := inventory.Profile(name)
	must(t, err)
	return p
}

func instance(t tb, tmpl inventory.Template, node string) inventory.Instance {
	t.Helper()
	in, err := tmpl.Instantiate(node)
	must(t, err)
	return in
}

// bind places the pod on the cluster, assumes it and returns it bound, as the scheduler leaves it.
func bind(t tb, c *pods.Cluster, pod *v1.Pod) *v1.Pod {
	t.Helper()
	pl, err := c.Place(context.Background(), pod)
	must(t, err)
	must(t, c.Assume(pl))
	out := pod.DeepCopy()
	out.Spec.NodeName = pl.Node
	out.Status.ResourceClaimStatuses = pl.ResourceClaimStatuses
	out.Status.ExtendedResourceClaimStatus = pl.ExtendedResourceClaimStatus
	return out
}

func single(p *v1.Pod) scaling.Pending { return scaling.Pending{Pod: p} }

// tb is what the helpers need of *testing.T and *rapid.T.
type tb interface {
	Helper()
	Fatal(...any)
	Fatalf(string, ...any)
	Errorf(string, ...any)
}
