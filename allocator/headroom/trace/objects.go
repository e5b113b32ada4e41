package trace

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/headroom"
	"github.com/dralloc/dralloc/allocator/pods"
)

const (
	// Driver is the driver name of the trace's GPUs.
	Driver = "gpu.example.com"
	// ClassName is the DeviceClass the trace's claims ask for: every device of Driver.
	ClassName = "gpu"
	// Namespace is the namespace of the trace's pods and templates.
	Namespace = "default"
	// Shares is the consumable capacity of a GPU that tasks share: 1000 per GPU, the trace's gpu_milli.
	Shares resourceapi.QualifiedName = "shares"
	// Memory is a GPU's memory capacity, published for the models whose memory is public. The trace's
	// tasks do not ask for it (its request policy's default is 0): a claim may.
	Memory resourceapi.QualifiedName = "memory"
	// ModelAttribute is the GPU's model, a string attribute; gpu_spec becomes a selector on it.
	ModelAttribute resourceapi.QualifiedName = "model"
	// PodsPerNode is every node's allocatable pods: the kubelet's default maxPods.
	PodsPerNode = 110
)

// gpuMemory is the memory of the trace's GPU models whose memory is public (GiB); the trace does not
// say what G1, G2 and G3 are.
var gpuMemory = map[string]int64{"P100": 16, "T4": 16, "V100M16": 16, "V100M32": 32, "A10": 24, "A100": 40}

// Trace is a node list and a pod list.
type Trace struct {
	Nodes []Node
	Tasks []Task
}

// GPUs is the number of GPUs of the nodes.
func (t *Trace) GPUs() int {
	n := 0
	for _, node := range t.Nodes {
		n += node.GPUs
	}
	return n
}

// Objects is a trace as DRA objects, built once by [Trace.Objects] and used by every [Replay]; it is
// read only after it is built and may be shared.
type Objects struct {
	// Trace is the trace the objects are built from.
	Trace *Trace
	// Nodes are the nodes, one per row of the node list, in its order.
	Nodes []*v1.Node
	// Slices are the ResourceSlices of the GPU nodes, one per node (pool: the node's name).
	Slices []*resourceapi.ResourceSlice
	// Class is the DeviceClass ClassName.
	Class *resourceapi.DeviceClass
	// Templates are the claim templates of the tasks' GPU shapes, by name.
	Templates []*resourceapi.ResourceClaimTemplate
	// Mix is the tasks' whole shapes (GPU request, CPU and memory; tasks without GPUs too, for which
	// every free GPU is a fragment) weighted by how many tasks have each, sorted by name: the target
	// workload of the fragmentation measure and of FGD, as the paper takes it. Nil without GPU tasks.
	Mix []headroom.Shape
	// GPUs is the number of GPUs.
	GPUs int

	taskTemplate []string // per task, the name of its template; "" without GPUs
	templateIdx  []int    // per task, the index of its template in Templates; -1 without GPUs
}

// Objects builds the DRA objects of the trace. Models and task names must be usable in Kubernetes
// objects (names are DNS subdomains, models at most 64 characters); an error names the row's node or
// task.
func (t *Trace) Objects() (*Objects, error) {
	o := &Objects{Trace: t, Class: gpuClass(), GPUs: t.GPUs()}
	for _, n := range t.Nodes {
		if len(n.Model) > resourceapi.DeviceAttributeMaxValueLength {
			return nil, fmt.Errorf("node %s: model: longer than %d characters", n.Name, resourceapi.DeviceAttributeMaxValueLength)
		}
		o.Nodes = append(o.Nodes, nodeObject(n))
		if n.GPUs > 0 {
			o.Slices = append(o.Slices, gpuSlice(n))
		}
	}
	type shape struct {
		tmpl  *resourceapi.ResourceClaimTemplate
		req   headroom.Request
		count int
	}
	shapes := map[string]*shape{}
	modelSets := map[string]int{} // gpu_spec, by first appearance: template names need not spell it
	gpuTasks := 0
	// The mix's shapes: a task's template (none without GPUs), CPU and memory.
	type mixKey struct {
		tmpl     string
		cpu, mem int64
	}
	mixCount := map[mixKey]int{}
	for _, task := range t.Tasks {
		if task.GPUs == 0 {
			o.taskTemplate = append(o.taskTemplate, "")
			mixCount[mixKey{"", task.CPUMilli, task.MemoryMiB}]++
			continue
		}
		for _, m := range task.Models {
			if len(m) > resourceapi.DeviceAttributeMaxValueLength {
				return nil, fmt.Errorf("task %s: gpu_spec: model longer than %d characters", task.Name, resourceapi.DeviceAttributeMaxValueLength)
			}
		}
		name := fmt.Sprintf("gpu-%d", task.GPUs)
		if task.Shared() {
			name = fmt.Sprintf("gpu-share-%d", task.GPUMilli)
		}
		if task.Models != nil {
			key := strings.Join(task.Models, "|")
			k, ok := modelSets[key]
			if !ok {
				k = len(modelSets) + 1
				modelSets[key] = k
			}
			name += fmt.Sprintf("-models-%d", k)
		}
		o.taskTemplate = append(o.taskTemplate, name)
		mixCount[mixKey{name, task.CPUMilli, task.MemoryMiB}]++
		gpuTasks++
		if s, ok := shapes[name]; ok {
			s.count++
			continue
		}
		s := &shape{tmpl: claimTemplate(name, task), count: 1, req: headroom.Request{Count: task.GPUs}}
		if task.Shared() {
			s.req = headroom.Request{Count: 1, Capacity: Shares, Amount: *resource.NewQuantity(task.GPUMilli, resource.DecimalSI)}
		}
		if task.Models != nil {
			s.req.Attributes = map[resourceapi.QualifiedName][]string{ModelAttribute: slices.Clone(task.Models)}
		}
		shapes[name] = s
	}
	names := make([]string, 0, len(shapes))
	for n := range shapes {
		names = append(names, n)
	}
	slices.Sort(names)
	index := map[string]int{}
	for i, n := range names {
		s := shapes[n]
		index[n] = i
		o.Templates = append(o.Templates, s.tmpl)
	}
	if gpuTasks > 0 {
		keys := make([]mixKey, 0, len(mixCount))
		for k := range mixCount {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(x, y mixKey) int {
			return cmp.Or(strings.Compare(x.tmpl, y.tmpl), cmp.Compare(x.cpu, y.cpu), cmp.Compare(x.mem, y.mem))
		})
		for _, k := range keys {
			sh := headroom.Shape{
				Name:   fmt.Sprintf("%s/cpu-%d/mem-%d", cmp.Or(k.tmpl, "no-gpu"), k.cpu, k.mem),
				Weight: float64(mixCount[k]) / float64(len(t.Tasks)),
				CPU:    *resource.NewMilliQuantity(k.cpu, resource.DecimalSI),
				Memory: *resource.NewQuantity(k.mem<<20, resource.BinarySI),
			}
			if k.tmpl != "" {
				sh.Requests = []headroom.Request{shapes[k.tmpl].req}
			}
			o.Mix = append(o.Mix, sh)
		}
	}
	for _, n := range o.taskTemplate {
		i := -1
		if n != "" {
			i = index[n]
		}
		o.templateIdx = append(o.templateIdx, i)
	}
	return o, nil
}

func nodeObject(n Node) *v1.Node {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: map[string]string{v1.LabelHostname: n.Name}}}
	node.Status.Allocatable = v1.ResourceList{
		v1.ResourcePods:   *resource.NewQuantity(PodsPerNode, resource.DecimalSI),
		v1.ResourceCPU:    *resource.NewMilliQuantity(n.CPUMilli, resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(n.MemoryMiB<<20, resource.BinarySI),
	}
	node.Status.Capacity = node.Status.Allocatable
	return node
}

// gpuSlice publishes the node's GPUs: shared by Shares, with the model as an attribute and, where
// known, the memory.
func gpuSlice(n Node) *resourceapi.ResourceSlice {
	name := n.Name
	s := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name + "-" + ClassName},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   Driver,
			NodeName: &name,
			Pool:     resourceapi.ResourcePool{Name: n.Name, Generation: 1, ResourceSliceCount: 1},
		},
	}
	mem, knownMem := gpuMemory[n.Model]
	for i := range n.GPUs {
		yes := true
		model := n.Model
		d := resourceapi.Device{
			Name:                     fmt.Sprintf("gpu-%d", i),
			AllowMultipleAllocations: &yes,
			Attributes:               map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{ModelAttribute: {StringValue: &model}},
			// Without a request policy a claim that does not name Shares consumes all of them (as
			// upstream's consumable capacity does): a whole GPU is one such claim.
			Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{Shares: {Value: *resource.NewQuantity(1000, resource.DecimalSI)}},
		}
		if knownMem {
			zero := resource.MustParse("0")
			d.Capacity[Memory] = resourceapi.DeviceCapacity{
				Value:         *resource.NewQuantity(mem<<30, resource.BinarySI),
				RequestPolicy: &resourceapi.CapacityRequestPolicy{Default: &zero, ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: &zero}},
			}
		}
		s.Spec.Devices = append(s.Spec.Devices, d)
	}
	return s
}

func gpuClass() *resourceapi.DeviceClass {
	return &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: ClassName},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
			CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "` + Driver + `"`},
		}}},
	}
}

// claimTemplate asks for the task's whole GPUs, or one share of a GPU, of its models.
func claimTemplate(name string, task Task) *resourceapi.ResourceClaimTemplate {
	req := &resourceapi.ExactDeviceRequest{DeviceClassName: ClassName, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: task.GPUs}
	if task.Shared() {
		req.Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{
			Shares: *resource.NewQuantity(task.GPUMilli, resource.DecimalSI),
		}}
	}
	if task.Models != nil {
		quoted := make([]string, len(task.Models))
		for i, m := range task.Models {
			quoted[i] = strconv.Quote(m) // Go's escapes are CEL's
		}
		req.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
			Expression: `device.attributes["` + Driver + `"].` + string(ModelAttribute) + ` in [` + strings.Join(quoted, ", ") + `]`,
		}}}
	}
	return &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{{Name: "gpu", Exactly: req}},
		}}},
	}
}

// Pod is task i of the trace as a pod named name: one container asking for the task's CPU and memory
// and, for a GPU task, the claim of its template.
func (o *Objects) Pod(i int, name string) *v1.Pod {
	task := o.Trace.Tasks[i]
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name, UID: types.UID("trace-" + name)}}
	p.Spec.Containers = []v1.Container{{Name: "main", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
		v1.ResourceCPU:    *resource.NewMilliQuantity(task.CPUMilli, resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(task.MemoryMiB<<20, resource.BinarySI),
	}}}}
	if t := o.taskTemplate[i]; t != "" {
		p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &t}}
	}
	return p
}

// Cluster is a new cluster of the objects (no pod placed) with the options.
func (o *Objects) Cluster(opts pods.Options) (*pods.Cluster, error) {
	snap := allocator.NewSnapshot(allocator.Options{})
	for _, n := range o.Nodes {
		if err := snap.AddOrUpdateNode(n); err != nil {
			return nil, err
		}
	}
	for _, s := range o.Slices {
		if err := snap.AddOrUpdateSlice(s); err != nil {
			return nil, err
		}
	}
	if err := snap.AddOrUpdateClass(o.Class); err != nil {
		return nil, err
	}
	c := pods.New(snap, opts)
	for _, t := range o.Templates {
		if err := c.AddOrUpdateTemplate(t); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Inventory is the fragmentation measure's inventory of the GPUs.
func (o *Objects) Inventory() (*headroom.Inventory, error) {
	return headroom.NewInventory(o.Slices)
}

// Strategy is a placement strategy to replay: a name and the options of the cluster.
type Strategy struct {
	Name    string
	Options pods.Options
}

// Strategies are FirstFit, BestFit and Spread ([pods.Choice]) and FGD ([headroom.Inventory.FGD] with
// the trace's Mix; an inventory of its own, so that replays may run concurrently). Without GPU tasks
// there is no mix and no FGD.
func (o *Objects) Strategies() ([]Strategy, error) {
	s := []Strategy{
		{Name: "FirstFit", Options: pods.Options{Choice: pods.FirstFit}},
		{Name: "BestFit", Options: pods.Options{Choice: pods.BestFit}},
		{Name: "Spread", Options: pods.Options{Choice: pods.Spread}},
	}
	if len(o.Mix) == 0 {
		return s, nil
	}
	inv, err := o.Inventory()
	if err != nil {
		return nil, err
	}
	cost, prefer, err := inv.FGD(o.Mix)
	if err != nil {
		return nil, err
	}
	return append(s, Strategy{Name: "FGD", Options: pods.Options{Cost: cost, Prefer: prefer}}), nil
}
