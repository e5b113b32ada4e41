package pods_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/fuzz"
	"github.com/dralloc/dralloc/inventory"
)

// indexCluster loads a generated cluster with its pending claims as templates, for the choice.
func indexCluster(t *rapid.T, c *fuzz.Cluster, choice pods.Choice) *pods.Cluster {
	snap, err := c.Snapshot(allocator.Options{StepBudget: 20000, CEL: propEnv(t)})
	if err != nil {
		t.Fatal(err)
	}
	cl := pods.New(snap, pods.Options{Choice: choice, Workers: 1, NameSuffix: fewSuffixes()})
	for i, claim := range c.Claims {
		tmpl := &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: claim.Namespace, Name: fmt.Sprintf("t-%d", i)}}
		tmpl.Spec.Spec = *claim.Spec.DeepCopy()
		if err := cl.AddOrUpdateTemplate(tmpl); err != nil {
			t.Fatal(err)
		}
	}
	return cl
}

// TestPropNodeIndexSamePlacements places, assumes and removes the same sequence of pods (few shapes, so
// that nodes fill up for a shape) on two copies of a generated cluster, one with the index of full nodes
// and one filtering every node, for each Choice: every step must give the same node, or the same error.
func TestPropNodeIndexSamePlacements(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := fuzz.ClusterGen(propOptions()).Draw(t, "cluster")
		if len(c.Claims) == 0 {
			t.Skip("no claims")
		}
		choice := pods.Choice(rapid.IntRange(0, 2).Draw(t, "choice"))
		ctx := context.Background()
		indexed, plain := indexCluster(t, c, choice), pods.WithoutNodeIndex(indexCluster(t, c, choice))
		shapes := rapid.IntRange(1, min(3, len(c.Claims))).Draw(t, "shapes")
		var placed []*v1.Pod
		steps := rapid.IntRange(1, 40).Draw(t, "steps")
		for step := range steps {
			switch rapid.IntRange(0, 5).Draw(t, "op") {
			case 0, 1, 2, 3: // place and assume
				p := pod(fmt.Sprintf("p-%d", step), fmt.Sprintf("c=template:t-%d", rapid.IntRange(0, shapes-1).Draw(t, "shape")))
				p.Namespace = fuzz.Namespace
				got, gotErr := indexed.Place(ctx, p)
				want, wantErr := plain.Place(ctx, p)
				if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
					t.Fatalf("step %d: %s: indexed error %v, without the index %v", step, p.Name, gotErr, wantErr)
				}
				if gotErr != nil {
					if !acceptable(gotErr) {
						t.Fatalf("step %d: place: %v", step, gotErr)
					}
					continue
				}
				if got.Node != want.Node {
					t.Fatalf("step %d: %s: indexed on %s, without the index on %s", step, p.Name, got.Node, want.Node)
				}
				errA, errB := indexed.Assume(got), plain.Assume(want)
				if fmt.Sprint(errA) != fmt.Sprint(errB) {
					t.Fatalf("step %d: assume: indexed %v, without the index %v", step, errA, errB)
				}
				if errA == nil {
					placed = append(placed, p)
				} else if !errors.Is(errA, allocator.ErrConflict) {
					t.Fatalf("step %d: assume: %v", step, errA)
				}
			case 4: // remove a pod: its node may fit again
				if len(placed) == 0 {
					continue
				}
				i := rapid.IntRange(0, len(placed)-1).Draw(t, "remove")
				p := placed[i]
				placed = append(placed[:i:i], placed[i+1:]...)
				if err := indexed.Remove(p); err != nil {
					t.Fatal(err)
				}
				if err := plain.Remove(p); err != nil {
					t.Fatal(err)
				}
			case 5: // a node taken out of scheduling, or back: the snapshot changes under the index
				nodes := indexed.Snapshot().Nodes()
				n := nodes[rapid.IntRange(0, len(nodes)-1).Draw(t, "node")].DeepCopy()
				n.Spec.Unschedulable = !n.Spec.Unschedulable
				if err := indexed.Snapshot().AddOrUpdateNode(n); err != nil {
					t.Fatal(err)
				}
				if err := plain.Snapshot().AddOrUpdateNode(n.DeepCopy()); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}

// TestPropRankIndexSamePlacements runs one sequence of steps on two copies of a fleet, one placing with
// the indexes of full nodes and of BestFit's and Spread's ranks (rankindex.go), one filtering every node
// for every pod, for each Choice: every placement must choose the same node, or fail alike. Fleets mix
// whole GPUs, MIG-like partitionable GPUs (counter sets: BestFit scores the fill), DGX H100 in dynamic
// MIG, and a pool of network-attached NICs every node sees (a pod taking one changes every node's
// answer); pods of a few shapes ask for CPU as well, so that nodes fill by NodeResourcesFit too. Steps
// place and assume, remove pods, record bound pods on nodes (AddOrUpdatePod) and cordon nodes.
func TestPropRankIndexSamePlacements(t *testing.T) {
	dgx, err := inventory.Profile("dgxh100")
	must(t, err)
	dgx.Mode = inventory.ModeDynamicMIG
	dgxSlices, err := dgx.Slices("node-src", 1)
	must(t, err)
	ctx := context.Background()
	rapid.Check(t, func(rt *rapid.T) {
		choice := pods.Choice(rapid.IntRange(0, 2).Draw(rt, "choice"))
		type fleetNode struct {
			name   string
			slices []*resourceapi.ResourceSlice
		}
		var fleet []fleetNode
		for i := range rapid.IntRange(2, 7).Draw(rt, "nodes") {
			name := fmt.Sprintf("n%d", i)
			fn := fleetNode{name: name}
			switch rapid.IntRange(0, 3).Draw(rt, name+"-kind") {
			case 0:
				fn.slices = []*resourceapi.ResourceSlice{gpus(name, rapid.IntRange(1, 4).Draw(rt, name+"-gpus"))}
			case 1, 2:
				fn.slices = migSlices(name, rapid.IntRange(1, 2).Draw(rt, name+"-gpus"))
			case 3:
				for _, s := range dgxSlices {
					s = s.DeepCopy()
					s.Name = strings.Replace(s.Name, "node-src", name, 1)
					s.Spec.Pool.Name = strings.Replace(s.Spec.Pool.Name, "node-src", name, 1)
					s.Spec.NodeName = &name
					fn.slices = append(fn.slices, s)
				}
			}
			fleet = append(fleet, fn)
		}
		nics := rapid.IntRange(0, 3).Draw(rt, "nics")
		build := func() *pods.Cluster {
			snap := allocator.NewSnapshot(allocator.Options{StepBudget: 20000})
			for _, fn := range fleet {
				must(t, snap.AddOrUpdateNode(node(fn.name, nil)))
				for _, s := range fn.slices {
					must(t, snap.AddOrUpdateSlice(s.DeepCopy()))
				}
			}
			if nics > 0 {
				fabric := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "fabric"}, Spec: resourceapi.ResourceSliceSpec{
					Driver: "nic.example.com", AllNodes: ptr(true), Pool: resourceapi.ResourcePool{Name: "fabric", Generation: 1, ResourceSliceCount: 1}}}
				for i := range nics {
					fabric.Spec.Devices = append(fabric.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("nic-%d", i)})
				}
				must(t, snap.AddOrUpdateSlice(fabric))
			}
			must(t, snap.AddOrUpdateClass(gpuClass("gpu", "")))
			must(t, snap.AddOrUpdateClass(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "part"}, Spec: resourceapi.DeviceClassSpec{
				Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "` + migDriver + `"`}}}}}))
			must(t, snap.AddOrUpdateClass(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "mig.nvidia.com"}, Spec: resourceapi.DeviceClassSpec{
				Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
					Expression: `device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "mig"`}}}}}))
			must(t, snap.AddOrUpdateClass(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "nic"}, Spec: resourceapi.DeviceClassSpec{
				Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "nic.example.com"`}}}}}))
			c := pods.New(snap, pods.Options{Choice: choice, Workers: 2, NameSuffix: fixedSuffixes()})
			must(t, c.AddOrUpdateTemplate(template("gpus-1", 1)))
			must(t, c.AddOrUpdateTemplate(partTemplate(1, 1)))
			must(t, c.AddOrUpdateTemplate(partTemplate(3, 1)))
			must(t, c.AddOrUpdateTemplate(partTemplate(7, 1)))
			must(t, c.AddOrUpdateTemplate(&resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "mig-3g"},
				Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
					Name: "mig",
					Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "mig.nvidia.com", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1,
						Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.attributes["gpu.nvidia.com"].profile == "3g.40gb"`}}}},
				}}}}}}))
			nic := template("gpu-and-nic", 1)
			nic.Spec.Spec.Devices.Requests = append(nic.Spec.Spec.Devices.Requests, resourceapi.DeviceRequest{Name: "nic",
				Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "nic", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}})
			must(t, c.AddOrUpdateTemplate(nic))
			return c
		}
		indexed, plain := build(), pods.WithoutNodeIndex(build())
		templates := []string{"gpus-1", "part-1x1", "part-3x1", "part-7x1", "mig-3g", "gpu-and-nic"}
		shapes := rapid.SampledFrom([][]int{{0}, {1}, {4}, {0, 1}, {1, 2, 3}, {0, 4}, {0, 5}, {1, 5}, {0, 1, 2, 3, 4, 5}}).Draw(rt, "shapes")
		var placed []*v1.Pod
		for step := range rapid.IntRange(1, 60).Draw(rt, "steps") {
			switch op := rapid.IntRange(0, 9).Draw(rt, "op"); {
			case op < 7: // place and assume
				tmpl := templates[rapid.SampledFrom(shapes).Draw(rt, "shape")]
				p := pod(fmt.Sprintf("p-%d", step), "c=template:"+tmpl)
				if cpu := rapid.SampledFrom([]int64{0, 0, 8, 20}).Draw(rt, "cpu"); cpu > 0 {
					p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: *resource.NewQuantity(cpu, resource.DecimalSI)}
				}
				got, gotErr := indexed.Place(ctx, p)
				want, wantErr := plain.Place(ctx, p)
				if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
					rt.Fatalf("step %d: %s (%s): indexed error %v, without the indexes %v", step, p.Name, tmpl, gotErr, wantErr)
				}
				if gotErr != nil {
					if !errors.Is(gotErr, pods.ErrNoNode) {
						rt.Fatalf("step %d: place: %v", step, gotErr)
					}
					continue
				}
				if got.Node != want.Node {
					rt.Fatalf("step %d: %s (%s): indexed on %s, without the indexes on %s", step, p.Name, tmpl, got.Node, want.Node)
				}
				must(t, indexed.Assume(got))
				must(t, plain.Assume(want))
				placed = append(placed, p)
			case op == 7: // remove a pod: its node may fit again
				if len(placed) == 0 {
					continue
				}
				i := rapid.IntRange(0, len(placed)-1).Draw(rt, "remove")
				p := placed[i]
				placed = append(placed[:i:i], placed[i+1:]...)
				must(t, indexed.Remove(p))
				must(t, plain.Remove(p))
			case op == 8: // a pod bound by someone else takes CPU on a node
				b := pod(fmt.Sprintf("bound-%d", step))
				b.Spec.NodeName = fleet[rapid.IntRange(0, len(fleet)-1).Draw(rt, "bound-node")].name
				b.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("16")}
				must(t, indexed.AddOrUpdatePod(b))
				must(t, plain.AddOrUpdatePod(b))
			case op == 9: // a node cordoned, or back
				name := fleet[rapid.IntRange(0, len(fleet)-1).Draw(rt, "cordon")].name
				for _, c := range []*pods.Cluster{indexed, plain} {
					n, _ := c.Snapshot().Node(name)
					n = n.DeepCopy()
					n.Spec.Unschedulable = !n.Spec.Unschedulable
					must(t, c.Snapshot().AddOrUpdateNode(n))
				}
			}
		}
	})
}
