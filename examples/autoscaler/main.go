// Command autoscaler shows a cluster autoscaler's scale-from-zero decision with Dynamic Resource
// Allocation: a cluster with no nodes, NVIDIA's DeviceClasses, and node groups of the shipped DGX
// profiles (inventory.Profile). Three kinds of pending work ask for GPUs differently:
//
//   - a pod asking for eight GPUs as the extended resource nvidia.com/gpu, which the DeviceClass
//     gpu.nvidia.com serves;
//   - NVIDIA's MIG demo: a pod whose claim asks for four MIG devices (1g.5gb twice, 2g.10gb, 3g.20gb)
//     constrained by matchAttribute gpu.nvidia.com/parentUUID to one physical GPU;
//   - a gang: a PodGroup of four pods with four GPUs each, placed all or nothing.
//
// For each it prints which node types would let it fit (and why the others would not), then the
// nodes a scale-up adds, cheapest type first, and where every pod goes. The template nodes carry the
// UUIDs, PCI bus IDs and labels a real node would, so the parentUUID constraint holds on them as on a
// real DGX A100.
//
// Usage: autoscaler [--cost dgxa100=1,dgxh100=3,...]
//
// Imports: of dralloc only its public packages (allocator, allocator/pods, allocator/scaling and inventory); nothing imports an example.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/allocator/scaling"
	"github.com/dralloc/dralloc/inventory"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "autoscaler:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("autoscaler", flag.ContinueOnError)
	costs := fs.String("cost", "dgxa100=1,dgxh100=3,dgxh200=4,dgxb200=6", "node types and the cost of one node, cheapest preferred")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return nil // the usage is printed; asking for it is no failure
	} else if err != nil {
		return err
	}
	var nodeTypes []scaling.NodeType
	for _, entry := range strings.Split(*costs, ",") {
		name, cost, ok := strings.Cut(entry, "=")
		c, err := strconv.ParseFloat(cost, 64)
		if !ok || err != nil {
			return fmt.Errorf("--cost: %q: want <profile>=<cost>", entry)
		}
		t, err := inventory.Profile(name)
		if err != nil {
			return fmt.Errorf("--cost: %w", err)
		}
		nodeTypes = append(nodeTypes, scaling.NodeType{Template: t, Cost: c})
	}

	cluster, pending, err := scenario()
	if err != nil {
		return err
	}
	planner, err := scaling.New(cluster, nodeTypes, scaling.Options{StepBudget: 10000})
	if err != nil {
		return err
	}
	ctx := context.Background()
	fits, err := planner.Fits(ctx, pending)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "Node types each pending unit fits on (new nodes of that type alone):")
	for _, f := range fits {
		fmt.Fprintf(out, "  %s\n", f.Pending)
		for _, tf := range f.Types {
			if tf.Fits {
				fmt.Fprintf(out, "    %-8s fits on %d node(s)\n", tf.Type, tf.Nodes)
			} else {
				fmt.Fprintf(out, "    %-8s no: %s\n", tf.Type, tf.Reason)
			}
		}
	}
	plan, err := planner.ScaleUp(ctx, pending)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Scale-up: cost %g,", plan.Cost)
	for _, c := range plan.Counts {
		fmt.Fprintf(out, " %d x %s", c.Count, c.Type)
	}
	fmt.Fprintln(out)
	for _, p := range plan.Placed {
		fmt.Fprintf(out, "  %-20s -> %s%s\n", p.Pod, p.Node, devices(p.Placement))
	}
	for _, u := range plan.Unplaced {
		fmt.Fprintf(out, "  %s fits nowhere\n", u.Pending)
	}
	return nil
}

// devices lists the devices a placement allocates, the MIG ones with their parent GPU.
func devices(p *pods.Placement) string {
	var names []string
	for _, pc := range p.Claims {
		if pc.Claim.Status.Allocation == nil {
			continue
		}
		for _, r := range pc.Claim.Status.Allocation.Devices.Results {
			names = append(names, r.Device)
		}
	}
	if len(names) > 4 {
		return fmt.Sprintf(" (%d devices: %s, ...)", len(names), strings.Join(names[:2], ", "))
	}
	return " (" + strings.Join(names, ", ") + ")"
}

// scenario is an empty cluster with NVIDIA's classes and templates, and the pending work.
func scenario() (*pods.Cluster, []scaling.Pending, error) {
	snap := allocator.NewSnapshot(allocator.Options{})
	gpuResource := "nvidia.com/gpu"
	for _, c := range []struct{ name, typ string }{{"gpu.nvidia.com", "gpu"}, {"mig.nvidia.com", "mig"}} {
		class := &resourceapi.DeviceClass{
			ObjectMeta: metav1.ObjectMeta{Name: c.name},
			Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
				Expression: fmt.Sprintf(`device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == '%s'`, c.typ),
			}}}},
		}
		if c.typ == "gpu" {
			class.Spec.ExtendedResourceName = &gpuResource
		}
		if err := snap.AddOrUpdateClass(class); err != nil {
			return nil, nil, err
		}
	}
	n := 0
	cluster := pods.New(snap, pods.Options{NameSuffix: func() string { n++; return fmt.Sprintf("x%04d", n) }})

	mig := &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "mig-devices"}}
	for i, prof := range []string{"1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"} {
		mig.Spec.Spec.Devices.Requests = append(mig.Spec.Spec.Devices.Requests, resourceapi.DeviceRequest{
			Name: fmt.Sprintf("mig-%s-%d", strings.ReplaceAll(prof, ".", "-"), i),
			Exactly: &resourceapi.ExactDeviceRequest{
				DeviceClassName: "mig.nvidia.com", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1,
				Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.attributes['gpu.nvidia.com'].profile == '` + prof + `'`}}},
			},
		})
	}
	parent := resourceapi.FullyQualifiedName("gpu.nvidia.com/parentUUID")
	mig.Spec.Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{MatchAttribute: &parent}}
	four := &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "four-gpus"}}
	four.Spec.Spec.Devices.Requests = []resourceapi.DeviceRequest{{Name: "gpus", Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: "gpu.nvidia.com", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 4}}}
	for _, t := range []*resourceapi.ResourceClaimTemplate{mig, four} {
		if err := cluster.AddOrUpdateTemplate(t); err != nil {
			return nil, nil, err
		}
	}
	group := &schedulingapi.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "trainer", UID: "uid-trainer"}}
	group.Spec.SchedulingPolicy.Gang = &schedulingapi.GangSchedulingPolicy{MinCount: 4}
	if err := cluster.AddOrUpdatePodGroup(group); err != nil {
		return nil, nil, err
	}

	eight := *resource.NewQuantity(8, resource.DecimalSI)
	inference := newPod("inference")
	inference.Spec.Containers[0].Resources.Limits = v1.ResourceList{"nvidia.com/gpu": eight}
	inference.Spec.Containers[0].Resources.Requests = v1.ResourceList{"nvidia.com/gpu": eight}
	demo := newPod("mig-demo")
	claimFrom(demo, "mig-devices")
	pending := []scaling.Pending{{Pod: inference}, {Pod: demo}}
	gang := scaling.Pending{Group: group}
	for i := range 4 {
		p := newPod(fmt.Sprintf("trainer-%d", i))
		claimFrom(p, "four-gpus")
		p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &group.Name}
		gang.Pods = append(gang.Pods, p)
	}
	return cluster, append(pending, gang), nil
}

func newPod(name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "main", Image: "nvcr.io/nvidia/cuda:12.4.0-base-ubuntu22.04"}}},
	}
}

func claimFrom(p *v1.Pod, template string) {
	p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "devices", ResourceClaimTemplateName: &template}}
	p.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "devices"}}
}
