package pods_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/inventory"
)

// fleet is 1,000 nodes with 8 GPUs each and the template "one-gpu".
func fleet(b *testing.B, choice pods.Choice) *pods.Cluster {
	b.Helper()
	snap := allocator.NewSnapshot(allocator.Options{})
	for i := range 1000 {
		name := fmt.Sprintf("node-%04d", i)
		must(b, snap.AddOrUpdateNode(node(name, nil)))
		must(b, snap.AddOrUpdateSlice(gpus(name, 8)))
	}
	must(b, snap.AddOrUpdateClass(gpuClass("gpu", "")))
	c := pods.New(snap, pods.Options{Choice: choice, NameSuffix: fixedSuffixes()})
	must(b, c.AddOrUpdateTemplate(template("one-gpu", 1)))
	return c
}

// dgxFleet is nodes DGX H100 nodes in dynamic MIG as inventory publishes them (eight GPUs, one shared
// counter set each, the whole GPU and every MIG placement drawing on it), NVIDIA's class for MIG devices
// and the template "one-mig" (one 1g.10gb). One node's slices are built and copied to the others; every
// node is prepared (see below).
func dgxFleet(b *testing.B, choice pods.Choice, nodes int) *pods.Cluster {
	b.Helper()
	t, err := inventory.Profile("dgxh100")
	must(b, err)
	t.Mode = inventory.ModeDynamicMIG
	const src = "node-src"
	published, err := t.Slices(src, 1)
	must(b, err)
	snap := allocator.NewSnapshot(allocator.Options{})
	for i := range nodes {
		name := fmt.Sprintf("node-%04d", i)
		must(b, snap.AddOrUpdateNode(node(name, nil)))
		for _, s := range published {
			s = s.DeepCopy()
			s.Name = strings.Replace(s.Name, src, name, 1)
			s.Spec.Pool.Name = strings.Replace(s.Spec.Pool.Name, src, name, 1)
			s.Spec.NodeName = &name
			must(b, snap.AddOrUpdateSlice(s))
		}
	}
	must(b, snap.AddOrUpdateClass(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "mig.nvidia.com"}, Spec: resourceapi.DeviceClassSpec{
		Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
			Expression: `device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "mig"`}}}}}))
	tmpl := &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "one-mig"},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "mig",
			Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "mig.nvidia.com", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1,
				Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.attributes["gpu.nvidia.com"].profile == "1g.10gb"`}}}},
		}}}}},
	}
	// Preparing a node (CEL views of its devices, its class for the claim) is paid once per snapshot, by
	// the first placement that filters it: here, for every node.
	ctx := context.Background()
	probe := []*resourceapi.ResourceClaim{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "probe"}, Spec: tmpl.Spec.Spec}}
	classes, err := snap.NodeClasses(ctx, probe)
	must(b, err)
	_, err = classes.AppendClasses(nil, snap.Nodes())
	must(b, err)
	// Explain evaluates the selectors on every device of a node, which builds each device's CEL view
	// (the class pass evaluates them once per kind of device, and Fits stops at the first that fits).
	for _, n := range snap.Nodes() {
		_, err := snap.Fits(ctx, n, probe)
		must(b, err)
		_, err = snap.Explain(ctx, n, probe)
		must(b, err)
	}
	c := pods.New(snap, pods.Options{Choice: choice, NameSuffix: fixedSuffixes()})
	must(b, c.AddOrUpdateTemplate(tmpl))
	return c
}

// BenchmarkPlaceMIG is BenchmarkPlace on 100 DGX H100 nodes in dynamic MIG (dgxFleet), each pod asking
// for one 1g.10gb: BestFit scores the nodes where the pod fits by the fill of the GPUs' counter sets,
// filtering every node and allocating once per class of nodes, FirstFit stops at the first node where it
// fits. Every 1,000 pods the fleet starts empty again, prepared (outside the timer).
func BenchmarkPlaceMIG(b *testing.B) {
	for _, choice := range []pods.Choice{pods.FirstFit, pods.BestFit} {
		b.Run(choice.String(), func(b *testing.B) {
			placeLoop(b, func() *pods.Cluster { return dgxFleet(b, choice, 100) }, "mig=template:one-mig")
		})
	}
}

// placeLoop places and assumes pods with the claim one by one, one pod an op, on fleets from fresh.
func placeLoop(b *testing.B, fresh func() *pods.Cluster, claim string) {
	ctx := context.Background()
	c := fresh()
	placed := 0
	ps := make([]*v1.Pod, 1000)
	for i := range ps {
		ps[i] = pod(fmt.Sprintf("pod-%04d", i), claim)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if placed == len(ps) {
			b.StopTimer()
			c = fresh()
			placed = 0
			b.StartTimer()
		}
		p, err := c.Place(ctx, ps[placed])
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Assume(p); err != nil {
			b.Fatal(err)
		}
		placed++
	}
}

// BenchmarkPlace places pods one by one on a 1,000-node fleet, assuming each before the next: one op
// is one pod (resolve its claim from a template, filter every node, allocate, assume). Every 1,000
// pods the fleet starts empty again (outside the timer).
func BenchmarkPlace(b *testing.B) {
	for _, choice := range []pods.Choice{pods.FirstFit, pods.BestFit} {
		b.Run(choice.String(), func(b *testing.B) {
			placeLoop(b, func() *pods.Cluster { return fleet(b, choice) }, "gpu=template:one-gpu")
		})
	}
}
