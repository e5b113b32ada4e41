package pods_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
)

// freedFleet is a generated fleet for the Explain property: nodes alike (4 GPUs, rack a) and some
// different (2 to 6 GPUs, rack a or b), about half with some of their GPUs held by one or two claims of
// their own.
type freedFleet struct {
	nodes []freedNode
}

type freedNode struct {
	name string
	rack string
	gpus int
	held [][]int // per holder, the GPUs it holds
}

func drawFreedFleet(t *rapid.T) freedFleet {
	var f freedFleet
	alike := rapid.IntRange(2, 12).Draw(t, "alike")
	different := rapid.IntRange(0, 4).Draw(t, "different")
	for i := range alike + different {
		n := freedNode{name: fmt.Sprintf("node-%02d", i), rack: "a", gpus: 4}
		if i >= alike {
			n.gpus = rapid.IntRange(2, 6).Draw(t, "gpus")
			n.rack = rapid.SampledFrom([]string{"a", "b"}).Draw(t, "rack")
		}
		held := 0
		if rapid.Bool().Draw(t, "in use") {
			held = rapid.IntRange(1, n.gpus).Draw(t, "held")
		}
		split := held
		if held > 1 && rapid.Bool().Draw(t, "two holders") {
			split = rapid.IntRange(1, held-1).Draw(t, "split")
		}
		if split > 0 {
			n.held = append(n.held, seq(0, split))
		}
		if held > split {
			n.held = append(n.held, seq(split, held))
		}
		f.nodes = append(f.nodes, n)
	}
	return f
}

func seq(from, to int) []int {
	var s []int
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}

// holder is the claim holding the devices on its node.
func holder(node string, k int, devs []int) *resourceapi.ResourceClaim {
	c := claim(fmt.Sprintf("hold-%s-%d", node, k), int64(len(devs)))
	c.Status.Allocation = &resourceapi.AllocationResult{}
	for _, d := range devs {
		c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results, resourceapi.DeviceRequestAllocationResult{
			Request: "gpu", Driver: driver, Pool: node, Device: fmt.Sprintf("gpu-%d", d)})
	}
	return c
}

func (f freedFleet) cluster(t *rapid.T) *pods.Cluster {
	snap := allocator.NewSnapshot(allocator.Options{})
	rmust(t, snap.AddOrUpdateClass(gpuClass("gpu", "example.com/gpu")))
	for _, n := range f.nodes {
		rmust(t, snap.AddOrUpdateNode(node(n.name, map[string]string{"example.com/rack": n.rack})))
		rmust(t, snap.AddOrUpdateSlice(gpus(n.name, n.gpus)))
		for k, devs := range n.held {
			rmust(t, snap.AddOrUpdateClaim(holder(n.name, k, devs)))
		}
	}
	for want := int64(1); want <= 6; want++ {
		rmust(t, snap.AddOrUpdateClaim(claim(fmt.Sprintf("want-%d", want), want)))
	}
	c := pods.New(snap, pods.Options{NameSuffix: fixedSuffixes(), Workers: 2})
	for want := int64(1); want <= 6; want++ {
		rmust(t, c.AddOrUpdateTemplate(template(fmt.Sprintf("want-%d", want), want)))
	}
	return c
}

// TestPropExplainAgreesPerNode: Explain's answer is the same whether it explains the nodes of a class
// of alike nodes once (where the explanation names nothing of its node) and asks where the pod fits
// once holders release their devices on one fork, kept from pod to pod while the snapshot does not
// change, once per class, or explains every node on its own and forks afresh for every pod and asks it
// node by node; on fleets of many alike nodes and a few different ones, for claims, templates and
// extended resources, with or without a node selector, before and after a holder releases its devices,
// a node's devices are taken or a node loses its free devices (which changes no holder).
func TestPropExplainAgreesPerNode(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ctx := context.Background()
		f := drawFreedFleet(t)
		shared, ref := f.cluster(t), pods.WithExplainPerNode(f.cluster(t))
		var want int64
		kind, rack := 0, false
		for step := range rapid.IntRange(1, 6).Draw(t, "steps") {
			if step > 0 && rapid.Bool().Draw(t, "change") {
				// The same change on both snapshots: the kept fork must not outlive it.
				n := f.nodes[rapid.IntRange(0, len(f.nodes)-1).Draw(t, "node")]
				held := 0
				for _, devs := range n.held {
					held += len(devs)
				}
				shrink := rapid.Bool().Draw(t, "shrink")
				for _, c := range []*pods.Cluster{shared, ref} {
					switch {
					case shrink:
						// The node keeps the GPUs held and loses the others: no holder changes.
						rmust(t, c.Snapshot().AddOrUpdateSlice(gpus(n.name, max(held, 1))))
					case len(n.held) > 0:
						rmust(t, c.Snapshot().DeleteClaim("default", fmt.Sprintf("hold-%s-0", n.name)))
					default:
						rmust(t, c.Snapshot().AddOrUpdateClaim(holder(n.name, 0, seq(0, n.gpus))))
					}
				}
				// The pod explained last is explained again: the fork kept for it is one of the change's past.
			} else {
				want = rapid.Int64Range(1, 6).Draw(t, "want")
				kind = rapid.IntRange(0, 2).Draw(t, "kind")
				rack = rapid.Bool().Draw(t, "rack a")
			}
			p := pod(fmt.Sprintf("p-%d", step))
			if rack {
				p.Spec.NodeSelector = map[string]string{"example.com/rack": "a"}
			}
			switch kind {
			case 0:
				p = pod(p.Name, fmt.Sprintf("gpu=claim:want-%d", want))
			case 1:
				p = pod(p.Name, fmt.Sprintf("gpu=template:want-%d", want))
			default:
				p = withExtended(p, "example.com/gpu", want)
			}
			got, err := shared.Explain(ctx, p)
			rmust(t, err)
			exp, err := ref.Explain(ctx, p)
			rmust(t, err)
			if !reflect.DeepEqual(got, exp) {
				t.Fatalf("step %d, pod asking %d GPUs: explanation\n%+v\nper node\n%+v", step, want, got, exp)
			}
		}
	})
}
