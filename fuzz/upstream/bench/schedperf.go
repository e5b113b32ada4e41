package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
)

// The objects of kube-scheduler's own DRA benchmarks, test/integration/scheduler_perf/dra in
// k8s.io/kubernetes v1.37.2 (performance-config.yaml, test case SchedulingWithResourceClaimTemplate, and
// the templates under dra/templates it names), built in Go so that dralloc's pods layer places the same
// pods on the same cluster as kube-scheduler does there.
const (
	// SchedPerfDriver is the driver of every device (resourceslice-basic-devices.yaml).
	SchedPerfDriver = "test-driver.cdi.k8s.io"
	// SchedPerfClass is the one DeviceClass (deviceclass.yaml).
	SchedPerfClass = "test-class"
	// SchedPerfTemplate is the ResourceClaimTemplate every measured pod names (resourceclaimtemplate.yaml).
	SchedPerfTemplate = "test-claim-template"
	// SchedPerfInitNamespace holds the claims allocated before the measure; SchedPerfNamespace holds the
	// measured pods and their claims (the namespaces of the workload template's ops).
	SchedPerfInitNamespace = "init"
	SchedPerfNamespace     = "test"

	// schedPerfSelector is the CEL selector of the "selector" workloads, as performance-config.yaml writes it:
	// every device matches, but it must be evaluated.
	schedPerfSelector = `device.attributes["test-driver.cdi.k8s.io"].driverVersion.major() >= 1 && device.capacity["test-driver.cdi.k8s.io"].memory.isGreaterThan(quantity("1Mi"))`
	// schedPerfMatchAttribute is the matchAttribute of the "match" workloads.
	schedPerfMatchAttribute = "resource.kubernetes.io/pciRoot"
)

// SchedPerfWorkload is one workload of SchedulingWithResourceClaimTemplate in scheduler_perf's
// dra/performance-config.yaml: its parameters, as the workload's params set them.
type SchedPerfWorkload struct {
	// Name is the workload's name there (the benchmark is
	// BenchmarkPerfScheduling/SchedulingWithResourceClaimTemplate/<Name>).
	Name string
	// Nodes is nodesWithDRA: nodes with one ResourceSlice each (nodesWithoutDRA is 0 in every workload here).
	Nodes int
	// Devices is numDevices, the devices of each slice; PCIRoots is numPCIRoots, over which the devices
	// alternate.
	Devices, PCIRoots int
	// InitClaims is initClaims: claims of one device allocated before the measure, without pods, each on
	// a node chosen at random (the allocResourceClaims op).
	InitClaims int
	// MeasurePods is measurePods: with SteadyState false, the pods created at once whose scheduling is
	// measured; with SteadyState true, the pods kept pending while each scheduled pod is deleted and
	// replaced, for the workload's duration (10s).
	MeasurePods int
	SteadyState bool
	// Requests is numRequests, the requests of the template's claim, each for one device of the class.
	Requests int
	// Selector adds the CEL selector to every request; MatchAttribute adds the matchAttribute constraint
	// on resource.kubernetes.io/pciRoot over all requests.
	Selector, MatchAttribute bool
	// Threshold is the workload's threshold in pods/s: the least SchedulingThroughput (average) the
	// upstream benchmark accepts.
	Threshold float64
}

// SchedPerfWorkloads returns the workloads of SchedulingWithResourceClaimTemplate that carry the
// "performance" label and have 500 nodes: the burst of 2500 pods onto a half-used cluster, the steady
// state on an empty, a half-used and a full cluster, and the empty cluster with a CEL selector and with
// five requests matched on the PCI root.
func SchedPerfWorkloads() []SchedPerfWorkload {
	base := SchedPerfWorkload{Nodes: 500, Devices: 10, PCIRoots: 2, Requests: 1, MeasurePods: 10, SteadyState: true}
	w := func(name string, threshold float64, edit func(*SchedPerfWorkload)) SchedPerfWorkload {
		c := base
		c.Name, c.Threshold = name, threshold
		if edit != nil {
			edit(&c)
		}
		return c
	}
	return []SchedPerfWorkload{
		w("5000pods_500nodes", 56, func(c *SchedPerfWorkload) { c.InitClaims, c.MeasurePods, c.SteadyState = 2500, 2500, false }),
		w("empty_500nodes", 64, nil),
		w("half_500nodes", 60, func(c *SchedPerfWorkload) { c.InitClaims = 2500 }),
		w("full_500nodes", 60, func(c *SchedPerfWorkload) { c.InitClaims = 4990 }),
		w("selector_empty_500nodes", 64, func(c *SchedPerfWorkload) { c.Selector = true }),
		w("match_empty_500nodes", 64, func(c *SchedPerfWorkload) { c.Requests, c.MatchAttribute = 5, true }),
	}
}

// SchedPerfObjects are a workload's objects as scheduler_perf creates them through the API server.
type SchedPerfObjects struct {
	Nodes      []*v1.Node
	Slices     []*resourceapi.ResourceSlice
	Class      *resourceapi.DeviceClass
	InitClaims []*resourceapi.ResourceClaim // unallocated, in namespace init
	Template   *resourceapi.ResourceClaimTemplate
}

// Objects builds the workload's nodes, slices, class, init claims (not yet allocated) and template.
func (w SchedPerfWorkload) Objects() SchedPerfObjects {
	o := SchedPerfObjects{Class: schedPerfClass(), Template: w.template()}
	for i := range w.Nodes {
		o.Nodes = append(o.Nodes, schedPerfNode(i))
		o.Slices = append(o.Slices, w.slice(i))
	}
	for i := range w.InitClaims {
		o.InitClaims = append(o.InitClaims, schedPerfClaim(i))
	}
	return o
}

// schedPerfNodeName is the name of node-with-dra-test-driver.yaml, which the slice of the same index names.
func schedPerfNodeName(i int) string { return "scheduler-perf-dra-" + strconv.Itoa(i) }

// schedPerfNode reproduces templates/node-with-dra-test-driver.yaml: status.capacity of 110 pods, 4 CPUs
// and 32Gi, Ready. The template sets no allocatable; the API server defaults it to the capacity
// (SetDefaults_NodeStatus in pkg/apis/core/v1/defaults.go), and so does this.
func schedPerfNode(i int) *v1.Node {
	name := schedPerfNodeName(i)
	capacity := v1.ResourceList{
		v1.ResourcePods:   resource.MustParse("110"),
		v1.ResourceCPU:    resource.MustParse("4"),
		v1.ResourceMemory: resource.MustParse("32Gi"),
	}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"node-with-dra": "true"}},
		Status: v1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity.DeepCopy(),
			Conditions:  []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}},
			Phase:       v1.NodeRunning,
		},
	}
}

// slice reproduces templates/resourceslice-basic-devices.yaml: one slice per node, pool of the slice's
// name, Devices devices modelled on an Intel GPU, whose PCI root attributes cycle through PCIRoots roots.
func (w SchedPerfWorkload) slice(i int) *resourceapi.ResourceSlice {
	name := "resourceslice-" + strconv.Itoa(i)
	str := func(s string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{StringValue: ptr.To(s)} }
	devices := make([]resourceapi.Device, w.Devices)
	for d := range devices {
		root := strconv.Itoa(d % max(w.PCIRoots, 1))
		pci := "0000:0" + strconv.Itoa(d) + ":00.0"
		devices[d] = resourceapi.Device{
			Name: "basic-device-" + strconv.Itoa(d),
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				"driver":                          str("xe"),
				"driverVersion":                   {VersionValue: ptr.To("1.2.3")},
				"resource.k8s.io/pciRoot":         str(root),
				"family":                          str("Arc Pro B-Series"),
				"health":                          str("Healthy"),
				"model":                           str("B60"),
				"pciAddress":                      str(pci),
				"pciId":                           str("0xe211"),
				"pciRoot":                         str("0" + root),
				"resource.kubernetes.io/pciBusID": str(pci),
				"resource.kubernetes.io/pciRoot":  str("pci0000:0" + root),
				"sriov":                           {BoolValue: ptr.To(true)},
				"type":                            str("gpu"),
			},
			Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
				"memory":     {Value: resource.MustParse("24480Mi")},
				"millicores": {Value: resource.MustParse("1k")},
			},
		}
	}
	return &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   SchedPerfDriver,
			Pool:     resourceapi.ResourcePool{Name: name, Generation: 1, ResourceSliceCount: 1},
			NodeName: ptr.To(schedPerfNodeName(i)),
			Devices:  devices,
		},
	}
}

// schedPerfClass reproduces templates/deviceclass.yaml: every device of the test driver.
func schedPerfClass() *resourceapi.DeviceClass {
	return &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: SchedPerfClass, UID: "uid-" + SchedPerfClass},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{
			{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "` + SchedPerfDriver + `"`}},
		}},
	}
}

// exactlyOne is a request for one device of the class, with the allocation mode and count the API server
// defaults (SetDefaults_ExactDeviceRequest in pkg/apis/resource/v1/defaults.go).
func exactlyOne(selectors []resourceapi.DeviceSelector) *resourceapi.ExactDeviceRequest {
	return &resourceapi.ExactDeviceRequest{
		DeviceClassName: SchedPerfClass,
		Selectors:       selectors,
		AllocationMode:  resourceapi.DeviceAllocationModeExactCount,
		Count:           1,
	}
}

// schedPerfClaim reproduces templates/resourceclaim.yaml in namespace init: one request for one device.
func schedPerfClaim(i int) *resourceapi.ResourceClaim {
	name := "test-claim-" + strconv.Itoa(i)
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: SchedPerfInitNamespace, Name: name, UID: types.UID("uid-init-" + name)},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{{Name: "req-0", Exactly: exactlyOne(nil)}},
		}},
	}
}

// template reproduces templates/resourceclaimtemplate.yaml in namespace test: Requests requests req-0…,
// each for one device of the class with the workload's selectors, and its constraints.
func (w SchedPerfWorkload) template() *resourceapi.ResourceClaimTemplate {
	var selectors []resourceapi.DeviceSelector
	if w.Selector {
		selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: schedPerfSelector}}}
	}
	var spec resourceapi.DeviceClaim
	for r := range w.Requests {
		spec.Requests = append(spec.Requests, resourceapi.DeviceRequest{Name: "req-" + strconv.Itoa(r), Exactly: exactlyOne(selectors)})
	}
	if w.MatchAttribute {
		spec.Constraints = []resourceapi.DeviceConstraint{{MatchAttribute: ptr.To[resourceapi.FullyQualifiedName](schedPerfMatchAttribute)}}
	}
	return &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: SchedPerfNamespace, Name: SchedPerfTemplate, UID: "uid-" + SchedPerfTemplate},
		Spec:       resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: spec}},
	}
}

// SchedPerfPod reproduces templates/pod-with-claim-template.yaml in namespace test: one pause container
// using the claim "resource", generated from the template. The API server names it test-dra plus five
// characters (metadata.generateName); this is the i-th such name.
func SchedPerfPod(i int) *v1.Pod {
	name := fmt.Sprintf("test-dra%05d", i)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: SchedPerfNamespace, Name: name, UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{
			Containers: []v1.Container{{
				Name: "pause", Image: "registry.k8s.io/pause:3.10.1",
				Resources: v1.ResourceRequirements{Claims: []v1.ResourceClaim{{Name: "resource"}}},
			}},
			ResourceClaims: []v1.PodResourceClaim{{Name: "resource", ResourceClaimTemplateName: ptr.To(SchedPerfTemplate)}},
		},
	}
}

// SchedPerfRun is a workload's cluster ready for its measured pods: the objects in a pods.Cluster, the
// init claims allocated.
type SchedPerfRun struct {
	Workload SchedPerfWorkload
	Objects  SchedPerfObjects
	// Init are the init claims as allocated, each pinned to its node.
	Init    []*resourceapi.ResourceClaim
	Cluster *pods.Cluster
	next    int // index of the next measured pod
}

// NewSchedPerfRun builds the workload's cluster for dralloc: the objects in a FirstFit snapshot and a
// pods.Cluster, and the init claims allocated as scheduler_perf's allocResourceClaims op allocates them
// (dra.go there): one claim at a time, on the first node in a random order where it fits, without a pod.
// seed fixes that order.
func NewSchedPerfRun(ctx context.Context, w SchedPerfWorkload, seed uint64) (*SchedPerfRun, error) {
	o := w.Objects()
	s := allocator.NewSnapshot(allocator.Options{})
	if err := s.AddOrUpdateClass(o.Class); err != nil {
		return nil, err
	}
	for _, slice := range o.Slices {
		if err := s.AddOrUpdateSlice(slice); err != nil {
			return nil, err
		}
	}
	for _, node := range o.Nodes {
		if err := s.AddOrUpdateNode(node); err != nil {
			return nil, err
		}
	}
	rng := rand.New(rand.NewPCG(seed, 0))
	order := append([]*v1.Node(nil), o.Nodes...)
	init := make([]*resourceapi.ResourceClaim, 0, len(o.InitClaims))
	for _, claim := range o.InitClaims {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		var allocated *resourceapi.ResourceClaim
		for _, node := range order {
			res, err := s.Allocate(ctx, node, []*resourceapi.ResourceClaim{claim})
			if errors.Is(err, allocator.ErrUnsatisfiable) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("workload %s: init claim %s: %w", w.Name, claim.Name, err)
			}
			allocated = claim.DeepCopy()
			allocated.Status.Allocation = &res[0]
			break
		}
		if allocated == nil {
			return nil, fmt.Errorf("workload %s: init claim %s fits on no node", w.Name, claim.Name)
		}
		if err := s.AddOrUpdateClaim(allocated); err != nil {
			return nil, err
		}
		init = append(init, allocated)
	}
	var suffix uint64
	c := pods.New(s, pods.Options{NameSuffix: func() string {
		suffix++
		s := strconv.FormatUint(suffix%(36*36*36*36*36), 36)
		return strings.Repeat("0", 5-len(s)) + s
	}})
	if err := c.AddOrUpdateTemplate(o.Template); err != nil {
		return nil, err
	}
	return &SchedPerfRun{Workload: w, Objects: o, Init: init, Cluster: c}, nil
}

// Schedule makes kube-scheduler's decision for the next n measured pods, one after the other: each pod
// is placed (Cluster.Place) and assumed (Cluster.Assume), as kube-scheduler allocates its claim and binds
// it; in a steady-state workload it is then removed (Cluster.Remove, which deletes its generated claim),
// as scheduler_perf deletes every scheduled pod and the garbage collector its claim, so that each pod
// meets the cluster in its starting condition. observe, when not nil, sees each placement once it is
// assumed (before the removal). Every pod must fit: a pod placed nowhere is an error.
func (r *SchedPerfRun) Schedule(ctx context.Context, n int, observe func(*pods.Placement) error) error {
	for range n {
		pod := SchedPerfPod(r.next)
		r.next++
		p, err := r.Cluster.Place(ctx, pod)
		if err != nil {
			return fmt.Errorf("workload %s: pod %s/%s: %w", r.Workload.Name, pod.Namespace, pod.Name, err)
		}
		if err := r.Cluster.Assume(p); err != nil {
			return fmt.Errorf("workload %s: pod %s/%s: %w", r.Workload.Name, pod.Namespace, pod.Name, err)
		}
		if observe != nil {
			if err := observe(p); err != nil {
				return err
			}
		}
		if r.Workload.SteadyState {
			if err := r.Cluster.Remove(pod); err != nil {
				return fmt.Errorf("workload %s: pod %s/%s: %w", r.Workload.Name, pod.Namespace, pod.Name, err)
			}
		}
	}
	return nil
}
