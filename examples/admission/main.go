// Command admission shows two checks an admission webhook or a policy auditor can make with dralloc, on a
// DGX H100 node (inventory's dgxh100 profile) with NVIDIA's DeviceClasses:
//
//   - Verify an allocation before it is written: allocator/verify checks a claim's proposed
//     status.allocation against the slices, classes and the claims already allocated, with its own code
//     (it shares none with the allocator's search), and names every rule it breaks. Three proposals for
//     one claim: the one dralloc computes, one that takes a GPU another claim holds, one with a MIG
//     device where the class wants whole GPUs.
//   - Find the pods a policy on container resources misses: a ResourceQuota or a webhook that reads
//     requests.nvidia.com/gpu sees the pods that ask for the extended resource (DRA serves them through
//     the class's extendedResourceName, and their containers still say so), but not the pods that get
//     GPUs through ResourceClaims (allocator/scaling.Audit).
//
// Imports: of dralloc only its public packages (allocator, allocator/pods, allocator/scaling, allocator/verify and inventory); nothing imports an example.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/allocator/scaling"
	"github.com/dralloc/dralloc/allocator/verify"
	"github.com/dralloc/dralloc/inventory"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "admission:", err)
		os.Exit(1)
	}
}

// findings are what run decided, for the test.
type findings struct {
	verdicts map[string][]verify.Violation // per proposal
	audit    []scaling.AuditEntry
}

func run(args []string, out io.Writer) error {
	_, err := admission(args, out)
	return err
}

const node = "dgx-0"

func admission(args []string, out io.Writer) (*findings, error) {
	fs := flag.NewFlagSet("admission", flag.ContinueOnError)
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	ctx := context.Background()
	c, slices, err := cluster()
	if err != nil {
		return nil, err
	}
	f := &findings{verdicts: map[string][]verify.Violation{}}

	// Running: train holds four GPUs through a claim, serve one through nvidia.com/gpu.
	running := []*v1.Pod{withClaim(pod("train"), "four-gpus"), withGPUs(pod("serve"), 1)}
	for _, p := range running {
		pl, err := c.Place(ctx, p)
		if err != nil {
			return nil, err
		}
		if err := c.Assume(pl); err != nil {
			return nil, err
		}
		// The pod as the API server holds it once bound: the statuses the scheduler and the resourceclaim
		// controller write say which claims are the pod's.
		p.Spec.NodeName = pl.Node
		p.Status.ResourceClaimStatuses = pl.ResourceClaimStatuses
		p.Status.ExtendedResourceClaimStatus = pl.ExtendedResourceClaimStatus
	}

	fmt.Fprintln(out, "== verify: proposed allocations of claim ml/eval (2 whole GPUs of class gpu.nvidia.com)")
	snap := c.Snapshot()
	eval := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "eval"}}
	eval.Spec.Devices.Requests = []resourceapi.DeviceRequest{gpus(2)}
	computed, err := snap.AllocateOnNode(ctx, node, []*resourceapi.ResourceClaim{eval})
	if err != nil {
		return nil, err
	}
	in := verify.Input{Slices: slices, Classes: snap.Classes(), Claims: snap.Claims(""), Node: nodeObject(snap)}
	held := snap.Claims("ml")[0].Status.Allocation.Devices.Results[0] // a GPU another claim holds
	proposals := []struct {
		name   string
		result resourceapi.AllocationResult
	}{
		{"computed by dralloc", computed[0]},
		{"takes " + held.Device + ", which another claim holds", withDevices(computed[0], held.Device, computed[0].Devices.Results[1].Device)},
		// On gpu-7, which nobody uses: the counters hold, the class and the count do not.
		{"a MIG device, one device only", withDevices(computed[0], firstMIG(slices, 7))},
	}
	for _, p := range proposals {
		v, err := verify.Check(ctx, in, []*resourceapi.ResourceClaim{eval}, []resourceapi.AllocationResult{p.result})
		if err != nil {
			return nil, err
		}
		f.verdicts[p.name] = v
		if len(v) == 0 {
			fmt.Fprintf(out, "%s: allow\n", p.name)
			continue
		}
		fmt.Fprintf(out, "%s: deny\n", p.name)
		for _, x := range v {
			fmt.Fprintf(out, "  %s: %s\n", x.Rule, x.Message)
		}
	}

	fmt.Fprintln(out, "\n== audit: what a policy on container resources (requests.nvidia.com/gpu) sees")
	inv, err := scaling.NewInventory(slices, snap.Classes())
	if err != nil {
		return nil, err
	}
	pending := []*v1.Pod{withClaim(pod("sweep"), "four-gpus"), withGPUs(pod("batch"), 2)}
	if f.audit, err = scaling.Audit(c, inv, append(running, pending...)); err != nil {
		return nil, err
	}
	seen, all := int64(0), int64(0)
	for _, e := range f.audit {
		declared := int64(0)
		for _, d := range e.Declared {
			if d.Resource == "nvidia.com/gpu" {
				declared = d.Count
			}
		}
		seen += declared
		all += e.ClaimDevices + e.ExtendedDevices
		verdict := "seen"
		if e.Missed {
			verdict = "MISSED"
		}
		fmt.Fprintf(out, "%-10s nvidia.com/gpu in containers %d, devices through claims %d, through extended resources %d: %s\n",
			e.Pod, declared, e.ClaimDevices, e.ExtendedDevices, verdict)
	}
	fmt.Fprintf(out, "the policy sees %d of the %d devices these pods hold or would get\n", seen, all)
	return f, nil
}

// firstMIG is the name of the first MIG device the node publishes on the GPU of that minor number.
func firstMIG(slices []*resourceapi.ResourceSlice, minor int) string {
	prefix := inventory.GPUDeviceName(minor) + "-mig-"
	for _, s := range slices {
		for _, d := range s.Spec.Devices {
			if *d.Attributes[inventory.AttrType].StringValue == "mig" && strings.HasPrefix(d.Name, prefix) {
				return d.Name
			}
		}
	}
	return ""
}

// withDevices is the result with its device list replaced.
func withDevices(r resourceapi.AllocationResult, names ...string) resourceapi.AllocationResult {
	r = *r.DeepCopy()
	template := r.Devices.Results[0]
	r.Devices.Results = nil
	for _, n := range names {
		res := template
		res.Device = n
		r.Devices.Results = append(r.Devices.Results, res)
	}
	return r
}

func nodeObject(snap *allocator.Snapshot) *v1.Node {
	for _, n := range snap.Nodes() {
		if n.Name == node {
			return n
		}
	}
	return nil
}

func gpus(n int64) resourceapi.DeviceRequest {
	return resourceapi.DeviceRequest{Name: "gpus", Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: "gpu.nvidia.com", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: n}}
}

// cluster is one DGX H100 node and NVIDIA's classes; gpu.nvidia.com also serves nvidia.com/gpu.
func cluster() (*pods.Cluster, []*resourceapi.ResourceSlice, error) {
	snap := allocator.NewSnapshot(allocator.Options{})
	for _, c := range []struct{ name, typ string }{{"gpu.nvidia.com", "gpu"}, {"mig.nvidia.com", "mig"}} {
		class := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: c.name}, Spec: resourceapi.DeviceClassSpec{
			Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
				Expression: fmt.Sprintf(`device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == '%s'`, c.typ)}}}}}
		if c.typ == "gpu" {
			class.Spec.ExtendedResourceName = ptr.To("nvidia.com/gpu")
		}
		if err := snap.AddOrUpdateClass(class); err != nil {
			return nil, nil, err
		}
	}
	t, err := inventory.Profile("dgxh100")
	if err != nil {
		return nil, nil, err
	}
	inst, err := t.Instantiate(node)
	if err != nil {
		return nil, nil, err
	}
	if err := snap.AddOrUpdateNode(inst.Node); err != nil {
		return nil, nil, err
	}
	for _, s := range inst.Slices {
		if err := snap.AddOrUpdateSlice(s); err != nil {
			return nil, nil, err
		}
	}
	n := 0
	c := pods.New(snap, pods.Options{NameSuffix: func() string { n++; return fmt.Sprintf("x%04d", n) }})
	four := &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "four-gpus"}}
	four.Spec.Spec.Devices.Requests = []resourceapi.DeviceRequest{gpus(4)}
	if err := c.AddOrUpdateTemplate(four); err != nil {
		return nil, nil, err
	}
	return c, inst.Slices, nil
}

func pod(name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name, UID: types.UID("uid-" + name)},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "main"}}},
	}
}

func withClaim(p *v1.Pod, template string) *v1.Pod {
	p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpus", ResourceClaimTemplateName: &template}}
	p.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "gpus"}}
	return p
}

func withGPUs(p *v1.Pod, n int64) *v1.Pod {
	q := *resource.NewQuantity(n, resource.DecimalSI)
	p.Spec.Containers[0].Resources.Limits = v1.ResourceList{"nvidia.com/gpu": q}
	p.Spec.Containers[0].Resources.Requests = v1.ResourceList{"nvidia.com/gpu": q}
	return p
}
