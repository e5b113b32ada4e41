package headroom_test

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
)

const driver = "gpu.example.com"

// node is a node with a real node's allocatable (110 pods, cpus CPUs, 256Gi of memory).
func node(name string, cpus string) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	n.Status.Allocatable = v1.ResourceList{
		v1.ResourcePods:   resource.MustParse("110"),
		v1.ResourceCPU:    resource.MustParse(cpus),
		v1.ResourceMemory: resource.MustParse("256Gi"),
	}
	n.Status.Capacity = n.Status.Allocatable
	return n
}

// gpus publishes n GPUs on the node; with shares > 0 each GPU can be shared, with a consumable
// capacity "shares" of that many.
func gpus(nodeName string, n int, shares int64) *resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: nodeName + "-gpus"},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   driver,
			NodeName: &nodeName,
			Pool:     resourceapi.ResourcePool{Name: nodeName, Generation: 1, ResourceSliceCount: 1},
		},
	}
	for i := range n {
		d := resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i)}
		if shares > 0 {
			yes := true
			d.AllowMultipleAllocations = &yes
			d.Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
				"shares": {Value: *resource.NewQuantity(shares, resource.DecimalSI)},
			}
		}
		s.Spec.Devices = append(s.Spec.Devices, d)
	}
	return s
}

func gpuClass() *resourceapi.DeviceClass {
	return &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu"},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
			CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "` + driver + `"`},
		}}},
	}
}

// template asks for count whole GPUs, or with shares > 0 for one share of that many of a GPU.
func template(name string, count int64, shares int64) *resourceapi.ResourceClaimTemplate {
	req := &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count}
	if shares > 0 {
		req.Count = 1
		req.Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{
			"shares": *resource.NewQuantity(shares, resource.DecimalSI),
		}}
	}
	return &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{{Name: "gpu", Exactly: req}},
		}}},
	}
}

// pod is a pod asking for cpu CPUs and, with a template name, the claim from that template.
func pod(name, cpu, tmpl string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)}}
	p.Spec.Containers = []v1.Container{{Name: "main", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}}
	if tmpl != "" {
		t := tmpl
		p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &t}}
	}
	return p
}

// cluster builds a cluster of nodes: each spec is "name cpus gpus shares".
func cluster(opts pods.Options, specs ...string) *pods.Cluster {
	snap := allocator.NewSnapshot(allocator.Options{})
	for _, s := range specs {
		var name, cpus string
		var n int
		var shares int64
		if _, err := fmt.Sscan(s, &name, &cpus, &n, &shares); err != nil {
			panic(s + ": " + err.Error())
		}
		must(snap.AddOrUpdateNode(node(name, cpus)))
		if n > 0 {
			must(snap.AddOrUpdateSlice(gpus(name, n, shares)))
		}
	}
	must(snap.AddOrUpdateClass(gpuClass()))
	k := 0
	opts.NameSuffix = func() string { k++; return fmt.Sprintf("s%04d", k) }
	c := pods.New(snap, opts)
	addTemplates(c)
	return c
}

// addTemplates adds the templates the tests' pods name.
func addTemplates(c *pods.Cluster) {
	for _, t := range []*resourceapi.ResourceClaimTemplate{template("one-gpu", 1, 0), template("two-gpus", 2, 0), template("half-gpu", 0, 500), template("tenth-gpu", 0, 100), template("third-gpu", 0, 300)} {
		must(c.AddOrUpdateTemplate(t))
	}
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}
