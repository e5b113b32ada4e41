package headroom_test

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/headroom"
	"github.com/dralloc/dralloc/allocator/pods"
)

// readCSV reads a testdata CSV into rows keyed by its header.
func readCSV(t *testing.T, name string) []map[string]string {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var out []map[string]string
	for _, r := range recs[1:] {
		row := map[string]string{}
		for i, h := range recs[0] {
			row[h] = r[i]
		}
		out = append(out, row)
	}
	return out
}

func atoi(t *testing.T, row map[string]string, col string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(row[col], 10, 64)
	if err != nil {
		t.Fatalf("%v: %s: %v", row, col, err)
	}
	return n
}

// traceTask is one pod of the trace: its CPU and memory requests and, for GPU pods, the template of its
// claim (whole-<k> for k whole GPUs, share-<milli> for a share of one).
type traceTask struct {
	cpu, mem int64
	tmpl     string
}

// loadTrace builds, from the slice of Alibaba's GPU trace v2023 in testdata (see its README), the nodes
// with their CPUs, memory and shared GPUs ("shares" 1000 each: gpu_milli) and the tasks in arrival
// order; the mix is the tasks' GPU shapes weighted by how often they occur.
func loadTrace(t *testing.T) (specs []nodeSpec, tasks []traceTask, mix []headroom.Shape) {
	for _, r := range readCSV(t, "openb_nodes_slice.csv") {
		specs = append(specs, nodeSpec{name: r["sn"], cpuMilli: atoi(t, r, "cpu_milli"), memMiB: atoi(t, r, "memory_mib"), gpus: int(atoi(t, r, "gpu"))})
	}
	counts := map[string]int{}
	shapes := map[string]headroom.Shape{}
	gpuTasks := 0
	for _, r := range readCSV(t, "openb_pods_slice.csv") {
		task := traceTask{cpu: atoi(t, r, "cpu_milli"), mem: atoi(t, r, "memory_mib")}
		if n, milli := atoi(t, r, "num_gpu"), atoi(t, r, "gpu_milli"); n > 0 {
			if milli >= 1000 {
				task.tmpl = fmt.Sprintf("whole-%d", n)
				shapes[task.tmpl] = headroom.Shape{Name: task.tmpl, Requests: []headroom.Request{whole(n)}}
			} else {
				task.tmpl = fmt.Sprintf("share-%d", milli)
				shapes[task.tmpl] = headroom.Shape{Name: task.tmpl, Requests: []headroom.Request{share(milli)}}
			}
			counts[task.tmpl]++
			gpuTasks++
		}
		tasks = append(tasks, task)
	}
	names := make([]string, 0, len(shapes))
	for n := range shapes {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		s := shapes[n]
		s.Weight = float64(counts[n]) / float64(gpuTasks)
		mix = append(mix, s)
	}
	return specs, tasks, mix
}

type nodeSpec struct {
	name             string
	cpuMilli, memMiB int64
	gpus             int
}

// replayCluster is the trace's nodes with the templates of its tasks.
func replayCluster(specs []nodeSpec, tasks []traceTask, opts pods.Options) *pods.Cluster {
	snap := allocator.NewSnapshot(allocator.Options{})
	for _, s := range specs {
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: s.name}}
		n.Status.Allocatable = v1.ResourceList{
			v1.ResourcePods:   resource.MustParse("110"),
			v1.ResourceCPU:    *resource.NewMilliQuantity(s.cpuMilli, resource.DecimalSI),
			v1.ResourceMemory: *resource.NewQuantity(s.memMiB<<20, resource.BinarySI),
		}
		n.Status.Capacity = n.Status.Allocatable
		must(snap.AddOrUpdateNode(n))
		must(snap.AddOrUpdateSlice(gpus(s.name, s.gpus, 1000)))
	}
	must(snap.AddOrUpdateClass(gpuClass()))
	k := 0
	opts.NameSuffix = func() string { k++; return fmt.Sprintf("s%05d", k) }
	c := pods.New(snap, opts)
	seen := map[string]bool{}
	for _, task := range tasks {
		if task.tmpl == "" || seen[task.tmpl] {
			continue
		}
		seen[task.tmpl] = true
		var n, milli int64
		if _, err := fmt.Sscanf(task.tmpl, "whole-%d", &n); err == nil {
			must(c.AddOrUpdateTemplate(template(task.tmpl, n, 0)))
		} else if _, err := fmt.Sscanf(task.tmpl, "share-%d", &milli); err == nil {
			must(c.AddOrUpdateTemplate(template(task.tmpl, 0, milli)))
		}
	}
	return c
}

// TestReplayAlibabaTrace replays 500 tasks of Alibaba's GPU trace v2023 (openb_pod_list_default, in
// arrival order, none leaving) on 61 of its GPU nodes (314 GPUs) with FirstFit, BestFit and FGD, and
// logs what each leaves unallocated. It asserts that every placement is assumed and that the measure's
// free capacity is the GPUs less what the placed tasks hold (the measure agrees with the allocator).
// At commit time: FirstFit leaves 10.03 GPUs unallocated, BestFit 9.80, FGD 8.48, each placing 397 tasks.
func TestReplayAlibabaTrace(t *testing.T) {
	if testing.Short() {
		t.Skip("replay")
	}
	specs, tasks, mix := loadTrace(t)
	totalGPUs := 0
	for _, s := range specs {
		totalGPUs += s.gpus
	}
	inv, err := headroom.NewInventory(func() (out []*resourceapi.ResourceSlice) {
		for _, s := range specs {
			out = append(out, gpus(s.name, s.gpus, 1000))
		}
		return out
	}())
	if err != nil {
		t.Fatal(err)
	}
	cost, err := inv.FGD(mix)
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range []struct {
		name string
		opts pods.Options
	}{{"FirstFit", pods.Options{}}, {"BestFit", pods.Options{Choice: pods.BestFit}}, {"FGD", pods.Options{Cost: cost}}} {
		c := replayCluster(specs, tasks, run.opts)
		placed, failedGPU, failedCPU := 0, 0, 0
		asked := 0.0 // GPUs the placed tasks hold
		for i, task := range tasks {
			p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("task-%04d", i), UID: types.UID(fmt.Sprint("task-", i))}}
			p.Spec.Containers = []v1.Container{{Name: "main", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
				v1.ResourceCPU:    *resource.NewMilliQuantity(task.cpu, resource.DecimalSI),
				v1.ResourceMemory: *resource.NewQuantity(task.mem<<20, resource.BinarySI),
			}}}}
			if task.tmpl != "" {
				tmpl := task.tmpl
				p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &tmpl}}
			}
			pl, err := c.Place(context.Background(), p)
			if errors.Is(err, pods.ErrNoNode) {
				if task.tmpl != "" {
					failedGPU++
				} else {
					failedCPU++
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s: %s: %v", run.name, p.Name, err)
			}
			if err := c.Assume(pl); err != nil {
				t.Fatalf("%s: %s: %v", run.name, p.Name, err)
			}
			placed++
			var n, milli int64
			if _, err := fmt.Sscanf(task.tmpl, "whole-%d", &n); err == nil {
				asked += float64(n)
			} else if _, err := fmt.Sscanf(task.tmpl, "share-%d", &milli); err == nil {
				asked += float64(milli) / 1000
			}
		}
		rep, err := inv.Fragmentation(c.Snapshot(), mix)
		if err != nil {
			t.Fatal(err)
		}
		if !near(rep.Free, float64(totalGPUs)-asked) {
			t.Errorf("%s: measured %v GPUs free, but %d GPUs less %v asked is %v", run.name, rep.Free, totalGPUs, asked, float64(totalGPUs)-asked)
		}
		t.Logf("%s: %d of %d tasks placed (%d GPU and %d CPU-only tasks fit nowhere); GPUs allocated %.2f, unallocated %.2f of %d; F(M) %.2f, stranded %.2f",
			run.name, placed, len(tasks), failedGPU, failedCPU, asked, rep.Free, totalGPUs, rep.F, rep.Stranded)
	}
}
