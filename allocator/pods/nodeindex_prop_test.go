package pods_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
// Removals (Remove, DeletePod) update the index rather than empty it where they free known nodes: some
// must leave it standing, so that the update is what the steps after them check.
func TestPropNodeIndexSamePlacements(t *testing.T) {
	removed := removalsKept(t)
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
			switch rapid.IntRange(0, 6).Draw(t, "op") {
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
				removed(indexed, func() {
					if err := indexed.Remove(p); err != nil {
						t.Fatal(err)
					}
				})
				if err := plain.Remove(p); err != nil {
					t.Fatal(err)
				}
			case 6: // a pod forgotten on its node (its claims stay allocated, a later Remove frees them)
				if len(placed) == 0 {
					continue
				}
				p := placed[rapid.IntRange(0, len(placed)-1).Draw(t, "forget")]
				removed(indexed, func() { indexed.DeletePod(p.Namespace, p.Name) })
				plain.DeletePod(p.Namespace, p.Name)
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
// place and assume, remove pods, record bound pods on nodes (AddOrUpdatePod) and forget them
// (DeletePod), place and remove PodGroups whose claim their member shares (RemovePodGroup frees it),
// and cordon nodes. Removals update the indexes rather than empty them where they free known nodes:
// some must leave them standing.
func TestPropRankIndexSamePlacements(t *testing.T) {
	removed := removalsKept(t)
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
		var placed, bound []*v1.Pod
		type group struct {
			g      *schedulingapi.PodGroup
			member *v1.Pod
		}
		var groups []group
		for step := range rapid.IntRange(1, 60).Draw(rt, "steps") {
			switch op := rapid.IntRange(0, 12).Draw(rt, "op"); {
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
				removed(indexed, func() { must(t, indexed.Remove(p)) })
				must(t, plain.Remove(p))
			case op == 8: // a pod bound by someone else takes CPU on a node
				b := pod(fmt.Sprintf("bound-%d", step))
				b.Spec.NodeName = fleet[rapid.IntRange(0, len(fleet)-1).Draw(rt, "bound-node")].name
				b.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("16")}
				must(t, indexed.AddOrUpdatePod(b))
				must(t, plain.AddOrUpdatePod(b))
				bound = append(bound, b)
			case op == 10: // a bound pod goes away (DeletePod), or moves to another node (recorded anew)
				if len(bound) == 0 {
					continue
				}
				i := rapid.IntRange(0, len(bound)-1).Draw(rt, "unbind")
				b := bound[i]
				if rapid.Bool().Draw(rt, "move") {
					b = b.DeepCopy()
					b.Spec.NodeName = fleet[rapid.IntRange(0, len(fleet)-1).Draw(rt, "moved-to")].name
					bound[i] = b
					removed(indexed, func() { must(t, indexed.AddOrUpdatePod(b)) })
					must(t, plain.AddOrUpdatePod(b))
					continue
				}
				bound = append(bound[:i:i], bound[i+1:]...)
				removed(indexed, func() { indexed.DeletePod(b.Namespace, b.Name) })
				plain.DeletePod(b.Namespace, b.Name)
			case op == 11: // a PodGroup whose claim its one member shares
				tmpl := templates[rapid.SampledFrom(shapes).Draw(rt, "group-shape")]
				g := gang(1, "")
				g.Name, g.UID = fmt.Sprintf("g-%d", step), types.UID(fmt.Sprintf("uid-g-%d", step))
				g.Spec.ResourceClaims = []schedulingapi.PodGroupResourceClaim{{Name: "c", ResourceClaimTemplateName: ptr(tmpl)}}
				m := pod(fmt.Sprintf("m-%d", step), "c=template:"+tmpl)
				m.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr(g.Name)}
				var gps [2]*pods.GroupPlacement
				var errs [2]error
				for k, c := range []*pods.Cluster{indexed, plain} {
					must(t, c.AddOrUpdatePodGroup(g))
					gps[k], errs[k] = c.PlaceGroup(ctx, g, []*v1.Pod{m})
				}
				if fmt.Sprint(errs[0]) != fmt.Sprint(errs[1]) {
					rt.Fatalf("step %d: group %s (%s): indexed error %v, without the indexes %v", step, g.Name, tmpl, errs[0], errs[1])
				}
				if errs[0] != nil {
					if !errors.Is(errs[0], pods.ErrGroupUnschedulable) {
						rt.Fatalf("step %d: place group: %v", step, errs[0])
					}
					continue
				}
				if a, b := gps[0].Pods[0].Node, gps[1].Pods[0].Node; a != b {
					rt.Fatalf("step %d: group %s (%s): indexed on %s, without the indexes on %s", step, g.Name, tmpl, a, b)
				}
				must(t, indexed.AssumeGroup(gps[0]))
				must(t, plain.AssumeGroup(gps[1]))
				groups = append(groups, group{g: g, member: m})
			case op == 12: // a PodGroup removed: its member, then the group and its claim
				if len(groups) == 0 {
					continue
				}
				i := rapid.IntRange(0, len(groups)-1).Draw(rt, "remove-group")
				gr := groups[i]
				groups = append(groups[:i:i], groups[i+1:]...)
				removed(indexed, func() { must(t, indexed.Remove(gr.member)) })
				must(t, plain.Remove(gr.member))
				removed(indexed, func() { must(t, indexed.RemovePodGroup(gr.g)) })
				must(t, plain.RemovePodGroup(gr.g))
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

// removalsKept returns a wrapper for the property's removals: it counts each removal, and those the
// indexes outlived (they held a lineage before and after), and fails the test at its end when the
// indexes outlived none, for then the update on removal went unchecked.
func removalsKept(t *testing.T) func(c *pods.Cluster, remove func()) {
	var removals, kept int
	t.Cleanup(func() {
		t.Logf("removals %d, kept %d", removals, kept)
		if !t.Failed() && kept == 0 {
			t.Errorf("the indexes outlived none of %d removals", removals)
		}
	})
	return func(c *pods.Cluster, remove func()) {
		live := pods.NodeIndexLive(c)
		remove()
		removals++
		if live && pods.NodeIndexLive(c) {
			kept++
		}
	}
}
