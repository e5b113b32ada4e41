package bench

import (
	"context"
	"errors"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/allocator/verify"
)

// schedPerfSteadyPods is how many pods one iteration of a steady-state workload schedules (upstream
// schedules as many as it can in 10s).
const schedPerfSteadyPods = 1000

// TestSchedPerfShapes checks that each workload of kube-scheduler's scheduler_perf DRA benchmarks is built
// as upstream builds it (500 nodes, one slice of 10 devices each, the init claims allocated one device
// each) and that dralloc places every measured pod, with allocations allocator/verify accepts: the
// burst's 2500 pods, which fill the cluster to the last device, and 50 pods of each steady state.
func TestSchedPerfShapes(t *testing.T) {
	// The params of each workload in scheduler_perf's dra/performance-config.yaml (v1.37.2).
	upstream := map[string]struct {
		initClaims, measurePods, numRequests int
		steadyState                          bool
		threshold                            float64
	}{
		"5000pods_500nodes":       {2500, 2500, 1, false, 56},
		"empty_500nodes":          {0, 10, 1, true, 64},
		"half_500nodes":           {2500, 10, 1, true, 60},
		"full_500nodes":           {4990, 10, 1, true, 60},
		"selector_empty_500nodes": {0, 10, 1, true, 64},
		"match_empty_500nodes":    {0, 10, 5, true, 64},
	}
	ctx := context.Background()
	workloads := SchedPerfWorkloads()
	if len(workloads) != len(upstream) {
		t.Fatalf("%d workloads, want %d", len(workloads), len(upstream))
	}
	for _, w := range workloads {
		t.Run(w.Name, func(t *testing.T) {
			want, ok := upstream[w.Name]
			if !ok {
				t.Fatalf("workload %s is not one of upstream's", w.Name)
			}
			if w.Nodes != 500 || w.Devices != 10 || w.PCIRoots != 2 || w.InitClaims != want.initClaims || w.MeasurePods != want.measurePods ||
				w.Requests != want.numRequests || w.SteadyState != want.steadyState || w.Threshold != want.threshold {
				t.Fatalf("params %+v, want upstream's %+v", w, want)
			}
			// The selector workloads add the CEL selector, the match workloads the matchAttribute constraint.
			if w.Selector != strings.HasPrefix(w.Name, "selector_") || w.MatchAttribute != strings.HasPrefix(w.Name, "match_") {
				t.Fatalf("workload %s: selector %v, matchAttribute %v", w.Name, w.Selector, w.MatchAttribute)
			}
			run, err := NewSchedPerfRun(ctx, w, 1)
			if err != nil {
				t.Fatal(err)
			}
			o := run.Objects
			if len(o.Nodes) != 500 || len(o.Slices) != 500 {
				t.Fatalf("%d nodes and %d slices, want 500 of each", len(o.Nodes), len(o.Slices))
			}
			sliceOf := map[string]*resourceapi.ResourceSlice{}
			for i, s := range o.Slices {
				if len(s.Spec.Devices) != 10 {
					t.Fatalf("slice %s: %d devices, want 10", s.Name, len(s.Spec.Devices))
				}
				if *s.Spec.NodeName != o.Nodes[i].Name {
					t.Fatalf("slice %s on node %s, want %s", s.Name, *s.Spec.NodeName, o.Nodes[i].Name)
				}
				sliceOf[*s.Spec.NodeName] = s
			}
			devs := o.Template.Spec.Spec.Devices
			if len(devs.Requests) != w.Requests {
				t.Fatalf("template with %d requests, want %d", len(devs.Requests), w.Requests)
			}
			for _, r := range devs.Requests {
				if r.Exactly == nil || r.Exactly.DeviceClassName != SchedPerfClass || (len(r.Exactly.Selectors) == 1) != w.Selector {
					t.Fatalf("template request %s: %+v, want one device of %s with a selector %v", r.Name, r.Exactly, SchedPerfClass, w.Selector)
				}
			}
			if (len(devs.Constraints) == 1 && devs.Constraints[0].MatchAttribute != nil) != w.MatchAttribute {
				t.Fatalf("template constraints %+v, want a matchAttribute %v", devs.Constraints, w.MatchAttribute)
			}
			// The init claims: all allocated, one device each, pinned to a node.
			if len(run.Init) != w.InitClaims {
				t.Fatalf("%d init claims allocated, want %d", len(run.Init), w.InitClaims)
			}
			initOn := map[string][]*resourceapi.ResourceClaim{}
			for _, c := range run.Init {
				ok, node := pinnedTo(c)
				if !ok || len(c.Status.Allocation.Devices.Results) != 1 {
					t.Fatalf("init claim %s: allocation %+v", c.Name, c.Status.Allocation)
				}
				initOn[node] = append(initOn[node], c)
			}
			for node, cs := range initOn {
				if len(cs) > 10 {
					t.Fatalf("node %s holds %d init claims, more than its 10 devices", node, len(cs))
				}
			}

			// The measured pods: each placed, on its node, with an allocation that verifies against the
			// claims already allocated there (the init claims, and in the burst the pods placed before it).
			measured := w.MeasurePods
			if w.SteadyState {
				measured = 50
			}
			placed := 0
			observe := func(p *pods.Placement) error {
				placed++
				if len(p.Claims) != 1 || !p.Claims[0].Generated || !p.Claims[0].Allocated {
					t.Fatalf("pod %s: claims %+v, want one generated and allocated", p.Pod.Name, p.Claims)
				}
				claim := p.Claims[0].Claim
				if ok, node := pinnedTo(claim); !ok || node != p.Node {
					t.Fatalf("pod %s on %s: claim pinned to %q", p.Pod.Name, p.Node, node)
				}
				if got := len(claim.Status.Allocation.Devices.Results); got != w.Requests {
					t.Fatalf("pod %s: %d devices allocated, want %d", p.Pod.Name, got, w.Requests)
				}
				for _, r := range claim.Status.Allocation.Devices.Results {
					if r.Driver != SchedPerfDriver || r.Pool != sliceOf[p.Node].Spec.Pool.Name {
						t.Fatalf("pod %s on %s: device %s/%s/%s, want one of the node's slice", p.Pod.Name, p.Node, r.Driver, r.Pool, r.Device)
					}
				}
				in := verify.Input{Slices: []*resourceapi.ResourceSlice{sliceOf[p.Node]}, Classes: []*resourceapi.DeviceClass{o.Class},
					Claims: initOn[p.Node], Node: o.Nodes[nodeIndex(t, o, p.Node)]}
				vs, err := verify.Check(ctx, in, []*resourceapi.ResourceClaim{claim}, []resourceapi.AllocationResult{*claim.Status.Allocation})
				if err != nil {
					return err
				}
				if len(vs) > 0 {
					t.Fatalf("pod %s on %s: allocation does not verify: %v", p.Pod.Name, p.Node, vs)
				}
				if !w.SteadyState {
					initOn[p.Node] = append(initOn[p.Node], claim)
				}
				return nil
			}
			if err := run.Schedule(ctx, measured, observe); err != nil {
				t.Fatal(err)
			}
			if placed != measured {
				t.Fatalf("%d pods placed, want %d", placed, measured)
			}
			// The burst fills the cluster: 2500 init claims and 2500 pods on 5000 devices. The steady
			// states leave it as it started, so one more pod still fits.
			_, err = run.Cluster.Place(ctx, SchedPerfPod(1<<20))
			if full := w.InitClaims+w.MeasurePods*w.Requests == w.Nodes*w.Devices && !w.SteadyState; full != errors.Is(err, pods.ErrNoNode) {
				t.Fatalf("one more pod: %v, want a pod that fits nowhere %v", err, full)
			}
		})
	}
}

func nodeIndex(t *testing.T, o SchedPerfObjects, name string) int {
	for i, n := range o.Nodes {
		if n.Name == name {
			return i
		}
	}
	t.Fatalf("no node %s", name)
	return -1
}

// BenchmarkSchedulerPerf measures dralloc's pods layer on the workloads of kube-scheduler's scheduler_perf
// DRA benchmarks (SchedPerfWorkloads): Place and Assume of each measured pod (and Remove, in steady
// state), after the init claims are allocated, reported in pods/s as upstream reports its
// SchedulingThroughput. Building the cluster is not measured, as upstream measures only its measured pods.
// scripts/scheduler-perf runs it next to upstream's benchmarks; fuzz/upstream/bench/scheduler_perf.md has
// the numbers.
func BenchmarkSchedulerPerf(b *testing.B) {
	ctx := context.Background()
	for _, w := range SchedPerfWorkloads() {
		b.Run(w.Name, func(b *testing.B) {
			n := w.MeasurePods
			if w.SteadyState {
				n = schedPerfSteadyPods
			}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				run, err := NewSchedPerfRun(ctx, w, uint64(i+1))
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if err := run.Schedule(ctx, n, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "pods/s")
		})
	}
}
