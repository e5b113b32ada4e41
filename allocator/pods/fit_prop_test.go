package pods_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
)

// fitWorld is a small cluster for the node-level filters: nodes with drawn allocatable cpu and pods, and
// pods with drawn cpu requests and host ports.
type fitWorld struct {
	nodes []*v1.Node
	cpu   map[string]int64 // allocatable millicores per node
	slots map[string]int64 // allocatable pods per node
}

func drawFitWorld(t *rapid.T) *fitWorld {
	w := &fitWorld{cpu: map[string]int64{}, slots: map[string]int64{}}
	for i := range rapid.IntRange(1, 3).Draw(t, "nodes") {
		n := node(fmt.Sprintf("n%d", i), nil)
		cpu := rapid.Int64Range(0, 4).Draw(t, "cpu") * 1000
		slots := rapid.Int64Range(0, 3).Draw(t, "slots")
		n.Status.Allocatable[v1.ResourceCPU] = *resource.NewMilliQuantity(cpu, resource.DecimalSI)
		n.Status.Allocatable[v1.ResourcePods] = *resource.NewQuantity(slots, resource.DecimalSI)
		w.nodes, w.cpu[n.Name], w.slots[n.Name] = append(w.nodes, n), cpu, slots
	}
	return w
}

// fitCluster is cluster for a property test: the nodes, no devices.
func fitCluster(t *rapid.T, opts pods.Options, nodes []*v1.Node) *pods.Cluster {
	snap := allocator.NewSnapshot(allocator.Options{})
	for _, n := range nodes {
		rmust(t, snap.AddOrUpdateNode(n))
	}
	opts.NameSuffix = fixedSuffixes()
	return pods.New(snap, opts)
}

func rmust(t *rapid.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// drawFitPod is a pod asking for 0 to 3 CPUs (in half CPUs) and maybe host port 80 or 81.
func drawFitPod(t *rapid.T, name string) (*v1.Pod, int64, int32) {
	p := pod(name)
	milli := rapid.Int64Range(0, 6).Draw(t, "halfCPUs") * 500
	if milli > 0 {
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: *resource.NewMilliQuantity(milli, resource.DecimalSI)}
	}
	port := rapid.SampledFrom([]int32{0, 0, 80, 81}).Draw(t, "hostPort")
	if port > 0 {
		p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 8080, HostPort: port}}
	}
	return p, milli, port
}

// TestPropFitFiltersHoldOverAssumes: over random sequences of placing, assuming and removing pods, the
// pods on every node never ask for more CPUs or slots than it has nor share a host port, and a pod that
// fits nowhere has a node-level reason on every node that a count of the node's pods confirms.
func TestPropFitFiltersHoldOverAssumes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := drawFitWorld(t)
		c := fitCluster(t, pods.Options{Workers: 2}, w.nodes)
		type onNode struct {
			pod  *v1.Pod
			cpu  int64
			port int32
		}
		placed := map[string][]onNode{}
		ctx := context.Background()
		for step := range rapid.IntRange(1, 10).Draw(t, "steps") {
			var all []onNode
			for _, n := range w.nodes {
				all = append(all, placed[n.Name]...)
			}
			if len(all) > 0 && rapid.IntRange(0, 3).Draw(t, "remove") == 0 {
				victim := rapid.SampledFrom(all).Draw(t, "victim")
				rmust(t, c.Remove(victim.pod))
				for name, list := range placed {
					placed[name] = slices.DeleteFunc(list, func(o onNode) bool { return o.pod == victim.pod })
				}
				continue
			}
			p, cpu, port := drawFitPod(t, fmt.Sprintf("p%d", step))
			pl, err := c.Place(ctx, p)
			var nn *pods.NoNodeError
			switch {
			case errors.As(err, &nn):
				for _, r := range nn.Nodes {
					used, ports := int64(0), false
					for _, o := range placed[r.Node] {
						used += o.cpu
						ports = ports || (port > 0 && o.port == port)
					}
					room := int64(len(placed[r.Node])) < w.slots[r.Node] && used+cpu <= w.cpu[r.Node] && !ports
					if room {
						t.Fatalf("%s: node %s said %q, but it has room (%d of %d millicores used, %d of %d pods)", p.Name, r.Node, r.Reason, used, w.cpu[r.Node], len(placed[r.Node]), w.slots[r.Node])
					}
				}
				continue
			case err != nil:
				t.Fatal(err)
			}
			rmust(t, c.Assume(pl))
			placed[pl.Node] = append(placed[pl.Node], onNode{pod: p, cpu: cpu, port: port})
			used, seen := int64(0), map[int32]bool{}
			for _, o := range placed[pl.Node] {
				used += o.cpu
				if o.port > 0 && seen[o.port] {
					t.Fatalf("node %s: host port %d twice", pl.Node, o.port)
				}
				seen[o.port] = true
			}
			if used > w.cpu[pl.Node] || int64(len(placed[pl.Node])) > w.slots[pl.Node] {
				t.Fatalf("node %s: %d millicores and %d pods placed, it has %d and %d", pl.Node, used, len(placed[pl.Node]), w.cpu[pl.Node], w.slots[pl.Node])
			}
		}
	})
}

// TestPropGangFitAgreesWithUnpruned: gangs of pods with CPU requests and host ports are placed on the
// same nodes by the pruned search as by the search of every assignment, and the pods put on one node
// fit there together.
func TestPropGangFitAgreesWithUnpruned(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := drawFitWorld(t)
		c := fitCluster(t, pods.Options{}, w.nodes)
		g := gang(int32(rapid.IntRange(1, 3).Draw(t, "minCount")), "")
		rmust(t, c.AddOrUpdatePodGroup(g))
		var ps []*v1.Pod
		cpu := map[string]int64{}
		port := map[string]int32{}
		for i := range rapid.IntRange(int(g.Spec.SchedulingPolicy.Gang.MinCount), 4).Draw(t, "pods") {
			p, milli, hp := drawFitPod(t, fmt.Sprintf("w%d", i))
			p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr("gang")}
			ps, cpu[p.Name], port[p.Name] = append(ps, p), milli, hp
		}
		ctx := context.Background()
		got, err := c.SearchGroupPlacement(ctx, g, ps, nil)
		ref, refErr := c.PlaceGroupUnpruned(ctx, g, ps, nil)
		if (err == nil) != (refErr == nil) {
			t.Fatalf("pruned: %v, every assignment: %v", err, refErr)
		}
		if err != nil {
			if !errors.Is(err, pods.ErrGroupUnschedulable) {
				t.Fatal(err)
			}
			return
		}
		if a, b := placedNodes(got), placedNodes(ref); !slices.Equal(a, b) {
			t.Fatalf("pruned placed on %v, every assignment on %v", a, b)
		}
		used, count := map[string]int64{}, map[string]int64{}
		ports := map[string]map[int32]bool{}
		for _, pl := range got.Pods {
			if pl == nil {
				continue
			}
			used[pl.Node] += cpu[pl.Pod.Name]
			count[pl.Node]++
			if hp := port[pl.Pod.Name]; hp > 0 {
				if ports[pl.Node][hp] {
					t.Fatalf("node %s: host port %d twice", pl.Node, hp)
				}
				if ports[pl.Node] == nil {
					ports[pl.Node] = map[int32]bool{}
				}
				ports[pl.Node][hp] = true
			}
		}
		for n := range used {
			if used[n] > w.cpu[n] || count[n] > w.slots[n] {
				t.Fatalf("node %s: %d millicores and %d pods, it has %d and %d", n, used[n], count[n], w.cpu[n], w.slots[n])
			}
		}
	})
}
