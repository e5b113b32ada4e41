package pods

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const gpuRes = v1.ResourceName("example.com/gpu")

func ctr(name string, gpus int64, sidecar bool) v1.Container {
	c := v1.Container{Name: name, Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse("1"),
		v1.ResourceMemory: resource.MustParse("1Gi"),
	}}}
	if gpus > 0 {
		c.Resources.Requests[gpuRes] = *resource.NewQuantity(gpus, resource.DecimalSI)
	}
	if sidecar {
		always := v1.ContainerRestartPolicyAlways
		c.RestartPolicy = &always
	}
	return c
}

func req(name string, count int64) resourceapi.DeviceRequest {
	return resourceapi.DeviceRequest{Name: name, Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count}}
}

func mapping(container, request string) v1.ContainerExtendedResourceRequest {
	return v1.ContainerExtendedResourceRequest{ContainerName: container, ResourceName: string(gpuRes), RequestName: request}
}

func TestRequestsAndMappings(t *testing.T) {
	classes := map[v1.ResourceName]*resourceapi.DeviceClass{gpuRes: {ObjectMeta: metav1.ObjectMeta{Name: "gpu"}}}
	tests := []struct {
		name         string
		init, main   []v1.Container
		wantRequests []resourceapi.DeviceRequest
		wantMappings []v1.ContainerExtendedResourceRequest
	}{
		{name: "one container: request named by container index and the resource's index among its sorted requests (cpu, example.com/gpu, memory)",
			main:         []v1.Container{ctr("a", 2, false)},
			wantRequests: []resourceapi.DeviceRequest{req("container-0-request-1", 2)},
			wantMappings: []v1.ContainerExtendedResourceRequest{mapping("a", "container-0-request-1")}},
		{name: "two containers get one request each",
			main:         []v1.Container{ctr("a", 1, false), ctr("b", 1, false)},
			wantRequests: []resourceapi.DeviceRequest{req("container-0-request-1", 1), req("container-1-request-1", 1)},
			wantMappings: []v1.ContainerExtendedResourceRequest{mapping("a", "container-0-request-1"), mapping("b", "container-1-request-1")}},
		{name: "an init container reuses a later container's devices and asks for the rest; indexes count init containers first",
			init:         []v1.Container{ctr("init", 3, false)},
			main:         []v1.Container{ctr("a", 2, false)},
			wantRequests: []resourceapi.DeviceRequest{req("container-0-request-1", 1), req("container-1-request-1", 2)},
			wantMappings: []v1.ContainerExtendedResourceRequest{mapping("a", "container-1-request-1"), mapping("init", "container-1-request-1"), mapping("init", "container-0-request-1")}},
		{name: "an init container that needs no more than a later container asks for nothing",
			init:         []v1.Container{ctr("init", 1, false)},
			main:         []v1.Container{ctr("a", 2, false)},
			wantRequests: []resourceapi.DeviceRequest{req("container-1-request-1", 2)},
			wantMappings: []v1.ContainerExtendedResourceRequest{mapping("a", "container-1-request-1"), mapping("init", "container-1-request-1")}},
		{name: "of several init containers only the largest request is kept and all map to it",
			init:         []v1.Container{ctr("i0", 2, false), ctr("i1", 3, false)},
			main:         []v1.Container{ctr("a", 0, false)},
			wantRequests: []resourceapi.DeviceRequest{req("container-1-request-1", 3)},
			wantMappings: []v1.ContainerExtendedResourceRequest{mapping("i0", "container-1-request-1"), mapping("i1", "container-1-request-1")}},
		{name: "a sidecar is long-lived: its own request, reusable by earlier init containers",
			init:         []v1.Container{ctr("i0", 1, false), ctr("side", 1, true)},
			main:         []v1.Container{ctr("a", 1, false)},
			wantRequests: []resourceapi.DeviceRequest{req("container-1-request-1", 1), req("container-2-request-1", 1)},
			wantMappings: []v1.ContainerExtendedResourceRequest{mapping("side", "container-1-request-1"), mapping("a", "container-2-request-1"), mapping("i0", "container-1-request-1")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{InitContainers: tt.init, Containers: tt.main}}
			before := pod.DeepCopy()
			reqs, maps := requestsAndMappings(pod, map[v1.ResourceName]int64{gpuRes: 99}, classes)
			if !equality.Semantic.DeepEqual(reqs, tt.wantRequests) {
				t.Errorf("requests\n%+v\nwant\n%+v", reqs, tt.wantRequests)
			}
			if !equality.Semantic.DeepEqual(maps, tt.wantMappings) {
				t.Errorf("mappings\n%+v\nwant\n%+v", maps, tt.wantMappings)
			}
			if !equality.Semantic.DeepEqual(before, pod) {
				t.Error("pod modified")
			}
		})
	}
}

func TestIsDRAExtendedResourceName(t *testing.T) {
	tests := []struct {
		name v1.ResourceName
		want bool
	}{
		{"example.com/gpu", true},
		{"deviceclass.resource.kubernetes.io/gpu", true},
		{"cpu", false},
		{"hugepages-2Mi", false},
		{"kubernetes.io/something", false},
		{"requests.example.com/gpu", false},
		{"example.com/bad name", false},
	}
	for _, tt := range tests {
		t.Run(string(tt.name), func(t *testing.T) {
			if got := isDRAExtendedResourceName(tt.name); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestExtendedClasses(t *testing.T) {
	at := func(name string, ts int64, ext string) *resourceapi.DeviceClass {
		c := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(time.Unix(ts, 0))}}
		if ext != "" {
			c.Spec.ExtendedResourceName = &ext
		}
		return c
	}
	tests := []struct {
		name    string
		classes []*resourceapi.DeviceClass // sorted by name, as Snapshot.Classes lists them
		res     v1.ResourceName
		want    string
	}{
		{"implicit name of every class", []*resourceapi.DeviceClass{at("gpu", 1, "example.com/gpu")}, "deviceclass.resource.kubernetes.io/gpu", "gpu"},
		{"explicit name", []*resourceapi.DeviceClass{at("gpu", 1, "example.com/gpu")}, gpuRes, "gpu"},
		{"of two classes with one name the one created later wins", []*resourceapi.DeviceClass{at("a", 2, "example.com/gpu"), at("b", 1, "example.com/gpu")}, gpuRes, "a"},
		{"the one created later wins whatever its name", []*resourceapi.DeviceClass{at("a", 1, "example.com/gpu"), at("b", 2, "example.com/gpu")}, gpuRes, "b"},
		{"created at the same time: the name that sorts first wins", []*resourceapi.DeviceClass{at("a", 1, "example.com/gpu"), at("b", 1, "example.com/gpu")}, gpuRes, "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := extendedClasses(tt.classes)[tt.res]
			if got == nil || got.Name != tt.want {
				t.Errorf("got %v, want %s", got, tt.want)
			}
		})
	}
}
