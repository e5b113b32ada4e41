package trace

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dralloc/dralloc/allocator/headroom"
)

// DefaultPopularity is the share of the tasks that [Trace.TypicalMix]'s shapes make up when
// TypicalOptions.Popularity is unset: the FGD paper's simulator's podPopularityThreshold, 95 %.
const DefaultPopularity = 0.95

// nonZeroCPU is what kube-scheduler counts for a container that requests no CPU
// (k8s.io/kubernetes/pkg/scheduler/util.DefaultMilliCPURequest, 100m), as the paper's simulator
// counts a task's CPU (pkg/utils/utils.go GetPodResource: GetNonzeroRequests).
const nonZeroCPU = 100

// TypicalOptions say how [Trace.TypicalMix] picks the shapes.
type TypicalOptions struct {
	// Popularity is the share of the tasks the most popular shapes must make up at least; the rarer
	// shapes are left out and the weights renormalised. 0 means DefaultPopularity; 1 keeps every shape.
	Popularity float64
	// Memory keeps the tasks' memory in the shapes (then shapes that differ in memory alone are
	// different shapes, and the measure checks a node's free memory). The simulator's shapes have none.
	Memory bool
}

// TypicalMix is the workload mix of the FGD paper's simulator (github.com/hkust-adsl/
// kubernetes-scheduler-simulator, pkg/utils/frag.go GetTypicalPods, as its experiments configure it:
// isInvolvedCpuPods true, podPopularityThreshold 95, podIncreaseStep 1, gpuResWeight 0): a shape per
// distinct CPU (a task asking for none counts kube-scheduler's 100m), GPU count, GPU share and GPU
// models, tasks without GPUs included (every free GPU is a fragment for them), weighted by how many
// tasks have it; the shapes are taken by decreasing count, ties by name (the simulator's order among
// equal counts is a map's), until they make up Popularity of the tasks, and their weights renormalised
// to sum to 1. Memory is left out unless TypicalOptions.Memory is set.
//
// [Objects.Mix] is instead every shape with memory. With TypicalMix, the simulator's order of the
// tasks and its names of the nodes, [headroom.Inventory.FGD] makes the simulator's own placements
// (allocator/headroom's doc); examples/packing compares both mixes on every pod list.
func (t *Trace) TypicalMix(opts TypicalOptions) ([]headroom.Shape, error) {
	pop := opts.Popularity
	if pop == 0 {
		pop = DefaultPopularity
	}
	if !(pop > 0 && pop <= 1) {
		return nil, fmt.Errorf("trace: TypicalOptions.Popularity: %v is outside (0, 1]", pop)
	}
	type key struct {
		name     string // the GPU request's name, as the claim templates are named; "" without GPUs
		cpu, mem int64
	}
	counts := map[key]int{}
	reqs := map[string]headroom.Request{}
	gpuTasks := 0
	for _, task := range t.Tasks {
		k := key{cpu: task.CPUMilli}
		if k.cpu == 0 {
			k.cpu = nonZeroCPU
		}
		if opts.Memory {
			k.mem = task.MemoryMiB
		}
		if task.GPUs > 0 {
			gpuTasks++
			name, req := taskRequest(task)
			k.name, reqs[name] = name, req
		}
		counts[k]++
	}
	if gpuTasks == 0 {
		return nil, errors.New("trace: no task asks for GPUs")
	}
	keys := make([]key, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	shapeName := func(k key) string {
		n := fmt.Sprintf("%s/cpu-%d", cmp.Or(k.name, "no-gpu"), k.cpu)
		if opts.Memory {
			n += fmt.Sprintf("/mem-%d", k.mem)
		}
		return n
	}
	slices.SortFunc(keys, func(x, y key) int {
		return cmp.Or(cmp.Compare(counts[y], counts[x]), strings.Compare(shapeName(x), shapeName(y)))
	})
	// As GetTypicalPods: shapes are added one at a time while they make up less than the threshold.
	want := pop * float64(len(t.Tasks))
	n, sum := 0, 0
	for n < len(keys) && float64(sum) < want {
		sum += counts[keys[n]]
		n++
	}
	mix := make([]headroom.Shape, 0, n)
	for _, k := range keys[:n] {
		sh := headroom.Shape{
			Name:   shapeName(k),
			Weight: float64(counts[k]) / float64(sum),
			CPU:    *resource.NewMilliQuantity(k.cpu, resource.DecimalSI),
		}
		if opts.Memory {
			sh.Memory = *resource.NewQuantity(k.mem<<20, resource.BinarySI)
		}
		if k.name != "" {
			sh.Requests = []headroom.Request{reqs[k.name]}
		}
		mix = append(mix, sh)
	}
	return mix, nil
}

// taskRequest is the task's GPU request as a shape's request, and a name for it: whole GPUs, or one
// share of a GPU, of the models the task accepts.
func taskRequest(task Task) (string, headroom.Request) {
	name := fmt.Sprintf("gpu-%d", task.GPUs)
	req := headroom.Request{Count: task.GPUs}
	if task.Shared() {
		name = fmt.Sprintf("gpu-share-%d", task.GPUMilli)
		req = headroom.Request{Count: 1, Capacity: Shares, Amount: *resource.NewQuantity(task.GPUMilli, resource.DecimalSI)}
	}
	if task.Models != nil {
		name += "-models-" + strings.Join(task.Models, "|")
		req.Attributes = map[resourceapi.QualifiedName][]string{ModelAttribute: slices.Clone(task.Models)}
	}
	return name, req
}
