package pods_test

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
)

const driver = "gpu.example.com"

// fixedSuffixes returns suffixes "aaaa0", "aaaa1", … in order.
func fixedSuffixes() func() string {
	n := 0
	return func() string {
		s := fmt.Sprintf("aaaa%d", n)
		n++
		return s
	}
}

// node is a node with the allocatable of a real one (110 pods, 32 CPUs, 128Gi of memory, 100Gi of
// ephemeral storage): kube-scheduler's NodeResourcesFit fits no pod on a node without allocatable pods.
func node(name string, labels map[string]string) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	n.Status.Allocatable = allocatable()
	n.Status.Capacity = allocatable()
	return n
}

// allocatable is a real node's status.allocatable, with the extra resources ("name=quantity") added.
func allocatable(extra ...string) v1.ResourceList {
	l := v1.ResourceList{
		v1.ResourcePods:             resource.MustParse("110"),
		v1.ResourceCPU:              resource.MustParse("32"),
		v1.ResourceMemory:           resource.MustParse("128Gi"),
		v1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	for _, e := range extra {
		name, q, _ := strings.Cut(e, "=")
		l[v1.ResourceName(name)] = resource.MustParse(q)
	}
	return l
}

// gpus publishes n whole GPUs on the node.
func gpus(nodeName string, n int) *resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: nodeName + "-gpus"},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   driver,
			NodeName: &nodeName,
			Pool:     resourceapi.ResourcePool{Name: nodeName, Generation: 1, ResourceSliceCount: 1},
		},
	}
	for i := range n {
		s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i)})
	}
	return s
}

func gpuClass(name string, extended string) *resourceapi.DeviceClass {
	c := &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
			CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "` + driver + `"`},
		}}},
	}
	if extended != "" {
		c.Spec.ExtendedResourceName = &extended
	}
	return c
}

func claimSpec(count int64) resourceapi.ResourceClaimSpec {
	return resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
		Name:    "gpu",
		Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count},
	}}}}
}

func claim(name string, count int64) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: claimSpec(count)}
}

func template(name string, count int64) *resourceapi.ResourceClaimTemplate {
	return &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec:       resourceapi.ResourceClaimTemplateSpec{Spec: claimSpec(count)},
	}
}

// pod returns a pod with the given claims: "name=template:tmpl" or "name=claim:claimname".
func pod(name string, claims ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)}}
	p.Spec.Containers = []v1.Container{{Name: "main"}}
	for _, c := range claims {
		entry, rest, _ := strings.Cut(c, "=")
		kind, ref, _ := strings.Cut(rest, ":")
		pc := v1.PodResourceClaim{Name: entry}
		r := ref
		if kind == "template" {
			pc.ResourceClaimTemplateName = &r
		} else {
			pc.ResourceClaimName = &r
		}
		p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, pc)
	}
	return p
}

// withExtended adds a request for the extended resource to the pod's first container.
func withExtended(p *v1.Pod, name v1.ResourceName, n int64) *v1.Pod {
	if p.Spec.Containers[0].Resources.Requests == nil {
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{}
	}
	p.Spec.Containers[0].Resources.Requests[name] = *resource.NewQuantity(n, resource.DecimalSI)
	return p
}

// cluster builds a Cluster on nodes with gpusPerNode whole GPUs each and the class "gpu".
func cluster(t testing.TB, opts pods.Options, gpusPerNode int, nodes ...*v1.Node) *pods.Cluster {
	t.Helper()
	snap := allocator.NewSnapshot(allocator.Options{})
	for _, n := range nodes {
		must(t, snap.AddOrUpdateNode(n))
		if gpusPerNode > 0 {
			must(t, snap.AddOrUpdateSlice(gpus(n.Name, gpusPerNode)))
		}
	}
	must(t, snap.AddOrUpdateClass(gpuClass("gpu", "")))
	if opts.NameSuffix == nil {
		opts.NameSuffix = fixedSuffixes()
	}
	return pods.New(snap, opts)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }
