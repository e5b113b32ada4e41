package pods_test

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
)

// distinctFleet is n nodes no two alike: node i has 1 to 8 GPUs (i mod 8, plus one), each with its own
// serial number and memory (a node's GPUs have 40Gi to 80Gi, by node), and a label of its own, so no
// class of alike nodes merges two of them. The template "big-gpus" asks 4 GPUs with at least 64Gi.
func distinctFleet(b *testing.B, n int) *pods.Cluster {
	b.Helper()
	snap := allocator.NewSnapshot(allocator.Options{})
	for i := range n {
		name := fmt.Sprintf("node-%04d", i)
		must(b, snap.AddOrUpdateNode(node(name, map[string]string{"example.com/rack": fmt.Sprint(i)})))
		s := gpus(name, i%8+1)
		mem := resource.MustParse(fmt.Sprintf("%dGi", 40+i%41))
		for d := range s.Spec.Devices {
			serial := fmt.Sprintf("%s-%d", name, d)
			s.Spec.Devices[d].Attributes = map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"serial": {StringValue: &serial}}
			s.Spec.Devices[d].Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: mem}}
		}
		must(b, snap.AddOrUpdateSlice(s))
	}
	must(b, snap.AddOrUpdateClass(gpuClass("gpu", "example.com/gpu")))
	c := pods.New(snap, pods.Options{NameSuffix: fixedSuffixes()})
	t := template("big-gpus", 4)
	t.Spec.Spec.Devices.Requests[0].Exactly.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
		Expression: `device.capacity["` + driver + `"].memory.compareTo(quantity("64Gi")) >= 0`}}}
	must(b, c.AddOrUpdateTemplate(t))
	return c
}

// BenchmarkExplainDistinctNodes explains a pod over 1,000 nodes no two alike (the issue "Scale" asks
// at most 0.5 s): warm, on a snapshot explained before (the devices' CEL views built), and cold, on a
// fresh snapshot each time (built outside the timer), as a first Explain after loading a dump is; with
// the claim from a template, and with the extended resource example.com/gpu.
func BenchmarkExplainDistinctNodes(b *testing.B) {
	for _, tc := range []struct {
		name string
		cold bool
		pod  *v1.Pod
	}{
		{"template/warm", false, pod("train", "gpus=template:big-gpus")},
		{"template/cold", true, pod("train", "gpus=template:big-gpus")},
		{"extended/warm", false, extendedPod("train", 4)},
		{"extended/cold", true, extendedPod("train", 4)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c := distinctFleet(b, 1000)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if tc.cold {
					b.StopTimer()
					c = distinctFleet(b, 1000)
					b.StartTimer()
				}
				e, err := c.Explain(ctx, tc.pod)
				if err != nil {
					b.Fatal(err)
				}
				if len(e.Nodes) != 1000 || len(e.FitsOn) == 0 || len(e.Groups) == 0 {
					b.Fatalf("explanation: %d nodes, fits on %d, %d groups", len(e.Nodes), len(e.FitsOn), len(e.Groups))
				}
			}
		})
	}
}

// extendedPod asks n of the extended resource example.com/gpu (limits and requests equal).
func extendedPod(name string, n int64) *v1.Pod {
	p := pod(name)
	q := *resource.NewQuantity(n, resource.DecimalSI)
	p.Spec.Containers[0].Resources = v1.ResourceRequirements{
		Limits:   v1.ResourceList{"example.com/gpu": q},
		Requests: v1.ResourceList{"example.com/gpu": q},
	}
	return p
}

// heldFleet is n alike nodes of 8 GPUs. busy: every node's GPUs held by two claims of 4 (a fleet full of
// bound pods), but every 50th node's, where one claim holds 4 and the others are free. Otherwise only
// every 50th node has 4 GPUs held, and the others are free.
func heldFleet(b *testing.B, n int, busy bool) *pods.Cluster {
	b.Helper()
	snap := allocator.NewSnapshot(allocator.Options{})
	must(b, snap.AddOrUpdateClass(gpuClass("gpu", "")))
	for i := range n {
		name := fmt.Sprintf("node-%04d", i)
		must(b, snap.AddOrUpdateNode(node(name, map[string]string{"example.com/rack": "a"})))
		must(b, snap.AddOrUpdateSlice(gpus(name, 8)))
		holders := 0
		switch {
		case i%50 == 0:
			holders = 1
		case busy:
			holders = 2
		}
		for h := range holders {
			c := claim(fmt.Sprintf("bound-%04d-%d", i, h), 4)
			c.Status.Allocation = &resourceapi.AllocationResult{}
			for d := range 4 {
				c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results, resourceapi.DeviceRequestAllocationResult{
					Request: "gpu", Driver: driver, Pool: name, Device: fmt.Sprintf("gpu-%d", 4*h+d)})
			}
			must(b, snap.AddOrUpdateClaim(c))
		}
	}
	c := pods.New(snap, pods.Options{NameSuffix: fixedSuffixes()})
	must(b, c.AddOrUpdateTemplate(template("four", 4)))
	must(b, c.AddOrUpdateTemplate(template("eight", 8)))
	return c
}

// BenchmarkExplainHeldFleet explains pending pods of one workload, one after another as `kubectl dra
// explain -A` does, on 200 and 1,000 alike nodes of 8 GPUs. On the idle fleet (every 50th node half
// used) a pod asking 4 or 8 GPUs fits on the free nodes. On the busy one (every node held whole by bound
// claims but every 50th, half used) a pod asking 4 fits on the half-used nodes; one asking 8 fits
// nowhere, and would fit on every node once its holders release their GPUs (the fits-once-freed pass).
func BenchmarkExplainHeldFleet(b *testing.B) {
	for _, n := range []int{200, 1000} {
		for _, busy := range []bool{false, true} {
			for _, gpus := range []string{"four", "eight"} {
				fleet := "idle"
				if busy {
					fleet = "busy"
				}
				b.Run(fmt.Sprintf("nodes=%d/%s/%s", n, fleet, gpus), func(b *testing.B) {
					c := heldFleet(b, n, busy)
					ctx := context.Background()
					b.ReportAllocs()
					i := 0
					for b.Loop() {
						i++
						e, err := c.Explain(ctx, pod(fmt.Sprintf("train-%d", i), "gpus=template:"+gpus))
						if err != nil {
							b.Fatal(err)
						}
						fits, freed := n, 0
						switch {
						case busy && gpus == "four":
							fits = n / 50
						case busy:
							fits, freed = 0, n
						case gpus == "eight":
							fits = n - n/50
						}
						if len(e.FitsOn) != fits || len(e.FitsOnceFreed) != freed {
							b.Fatalf("explanation: fits on %d, once freed on %d; want %d and %d", len(e.FitsOn), len(e.FitsOnceFreed), fits, freed)
						}
					}
				})
			}
		}
	}
}
