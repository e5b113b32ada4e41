package trace_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/dralloc/dralloc/allocator/headroom/trace"
	"github.com/dralloc/dralloc/allocator/pods"
)

// The tasks' GPU shapes become claim templates and the workload mix of the fragmentation measure.
func ExampleTrace_Objects() {
	tasks, err := trace.ReadTasks("pods.csv", strings.NewReader("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"+
		"p0,8000,16384,1,1000,\n"+
		"p1,4000,8192,1,250,\n"+
		"p2,4000,8192,1,250,\n"+
		"p3,16000,32768,2,1000,V100M16|V100M32\n"+
		"p4,2000,4096,0,0,\n"), trace.ReadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	objs, err := (&trace.Trace{Tasks: tasks}).Objects()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range objs.Templates {
		r := t.Spec.Spec.Devices.Requests[0].Exactly
		fmt.Println(t.Name, r.Count, r.Capacity != nil)
		if len(r.Selectors) > 0 {
			fmt.Println("  " + r.Selectors[0].CEL.Expression)
		}
	}
	for _, s := range objs.Mix {
		fmt.Printf("%s %.2f\n", s.Name, s.Weight)
	}
	// Output:
	// gpu-1 1 false
	// gpu-2-models-1 2 false
	//   device.attributes["gpu.example.com"].model in ["V100M16", "V100M32"]
	// gpu-share-250 1 true
	// no-gpu/cpu-2000/mem-4096 0.20
	// gpu-1/cpu-8000/mem-16384 0.20
	// gpu-2-models-1/cpu-16000/mem-32768 0.20
	// gpu-share-250/cpu-4000/mem-8192 0.40
}

// A task's pod placed on a cluster of the objects, as Replay places it.
func ExampleObjects_Cluster() {
	nodes, err := trace.ReadNodes("nodes.csv", strings.NewReader("sn,cpu_milli,memory_mib,gpu,model\nnode-a,64000,262144,8,T4\n"), trace.ReadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	tasks, err := trace.ReadTasks("pods.csv", strings.NewReader("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,4000,8192,1,250\n"), trace.ReadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	objs, err := (&trace.Trace{Nodes: nodes, Tasks: tasks}).Objects()
	if err != nil {
		fmt.Println(err)
		return
	}
	k := 0
	c, err := objs.Cluster(pods.Options{Choice: pods.BestFit, NameSuffix: func() string { k++; return fmt.Sprint(k) }})
	if err != nil {
		fmt.Println(err)
		return
	}
	pl, err := c.Place(context.Background(), objs.Pod(0, "p0"))
	if err != nil {
		fmt.Println(err)
		return
	}
	res := pl.Claims[0].Claim.Status.Allocation.Devices.Results[0]
	shares := res.ConsumedCapacity[trace.Shares]
	fmt.Println(pl.Node, res.Device, shares.String())
	// Output:
	// node-a gpu-0 250
}

// The GPUs left unallocated when the arrived workload first reached the cluster's GPUs.
func ExampleCurve_At() {
	tr, err := trace.Open("testdata/nodes_slice.csv", "testdata/pods_multigpu50_slice.csv", trace.ReadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	objs, err := tr.Objects()
	if err != nil {
		fmt.Println(err)
		return
	}
	curve, err := trace.Replay(context.Background(), objs, trace.ReplayOptions{Samples: 10})
	if err != nil {
		fmt.Println(err)
		return
	}
	if p, ok := curve.At(1); ok {
		fmt.Printf("arrived %.1f%% after %d tasks: %.2f of %d GPUs unallocated, %d tasks failed\n", 100*p.Arrived, p.Arrivals, p.Unallocated, curve.GPUs, p.Failed)
	}
	// Output:
	// arrived 100.5% after 382 tasks: 10.91 of 314 GPUs unallocated, 7 tasks failed
}
