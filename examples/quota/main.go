// Command quota shows what a quota or chargeback system learns from dralloc about GPUs handed out through
// Dynamic Resource Allocation: two DGX H100 nodes (inventory's dgxh100 profile, dynamic MIG) with NVIDIA's
// DeviceClasses, pods of two teams running on them through claims, MIG claims and the extended resource
// nvidia.com/gpu, and pods still pending.
//
// It prints, per namespace, the exact charge of the allocated claims and the worst-case charge of the
// pending pods (allocator/scaling.Charges: devices per class, memory and multiprocessors of MIG devices,
// shared counters), checks each namespace against a GPU budget, and bills the running pods per owner
// (allocator/scaling.NewChargeback).
//
// Usage: quota [--budget research=8,prod=4]
//
// Imports: of dralloc only its public packages (allocator, allocator/pods, allocator/scaling, capacity and inventory); nothing imports an example.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
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
	"github.com/dralloc/dralloc/capacity"
	"github.com/dralloc/dralloc/inventory"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quota:", err)
		os.Exit(1)
	}
}

// report is what run found, for the test.
type report struct {
	quota  *scaling.Quota
	bill   *scaling.Chargeback
	over   []string // namespaces whose allocated and pending whole GPUs exceed their budget
	budget map[string]int64
}

func run(args []string, out io.Writer) error {
	_, err := quota(args, out)
	return err
}

func quota(args []string, out io.Writer) (*report, error) {
	fs := flag.NewFlagSet("quota", flag.ContinueOnError)
	budgetFlag := fs.String("budget", "research=8,prod=4", "whole GPUs (class gpu.nvidia.com) each namespace may hold, allocated and pending together")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	r := &report{budget: map[string]int64{}}
	for _, entry := range strings.Split(*budgetFlag, ",") {
		ns, n, ok := strings.Cut(entry, "=")
		v, err := strconv.ParseInt(n, 10, 64)
		if !ok || err != nil || v < 0 {
			return nil, fmt.Errorf("--budget: %q: want <namespace>=<GPUs>", entry)
		}
		r.budget[ns] = v
	}

	ctx := context.Background()
	c, slices, err := cluster()
	if err != nil {
		return nil, err
	}
	running, pending := workloads()
	for _, p := range running {
		pl, err := c.Place(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		if err := c.Assume(pl); err != nil {
			return nil, err
		}
	}
	// The inventory prices every request: which classes select which devices, their capacities and
	// counters (for All requests and partitionable devices).
	inv, err := scaling.NewInventory(slices, c.Snapshot().Classes())
	if err != nil {
		return nil, err
	}
	if r.quota, err = scaling.Charges(c, inv, pending); err != nil {
		return nil, err
	}
	for _, refused := range r.quota.Refused {
		fmt.Fprintf(out, "Not charged: %v\n", refused.Err)
	}
	fmt.Fprintln(out, "Charges per namespace (allocated: exact; pending: worst case)")
	for _, ns := range namespaces(r.quota) {
		alloc, pend := r.quota.Allocated[ns], r.quota.Pending[ns]
		fmt.Fprintf(out, "  %s\n    allocated: %s\n    pending:   %s\n", ns, summary(alloc), summary(pend))
		gpus := alloc.Devices["gpu.nvidia.com"] + pend.Devices["gpu.nvidia.com"]
		if b, ok := r.budget[ns]; ok {
			verdict := "within"
			if gpus > b {
				verdict = "over"
				r.over = append(r.over, ns)
			}
			fmt.Fprintf(out, "    budget:    %d whole GPUs allocated or pending of %d: %s budget\n", gpus, b, verdict)
		}
	}

	if r.bill, err = scaling.NewChargeback(c, inv, running); err != nil {
		return nil, err
	}
	fmt.Fprintln(out, "Chargeback of the running pods, per owner")
	for _, o := range r.bill.Owners {
		fmt.Fprintf(out, "  %s/%s: %d pods, %s\n", o.Namespace, o.Owner, o.Pods, summary(o.Charge))
	}
	return r, nil
}

// summary is a charge's devices per class with their memory and multiprocessors; Charge.String has
// every capacity and shared counter.
func summary(ch capacity.Charge) string {
	var classes []string
	for class := range ch.Devices {
		classes = append(classes, class)
	}
	slices.Sort(classes)
	var parts []string
	for _, class := range classes {
		part := fmt.Sprintf("%d x %s", ch.Devices[class], class)
		capacities := ch.Capacity[class]
		if m, ok := capacities[inventory.CapMemory]; ok {
			part += fmt.Sprintf(" (memory %s", m.String())
			if sm, ok := capacities[inventory.CapMultiprocessors]; ok {
				part += fmt.Sprintf(", %s multiprocessors", sm.String())
			}
			part += ")"
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

func namespaces(q *scaling.Quota) []string {
	seen := map[string]bool{}
	for ns := range q.Allocated {
		seen[ns] = true
	}
	for ns := range q.Pending {
		seen[ns] = true
	}
	var out []string
	for ns := range seen {
		out = append(out, ns)
	}
	slices.Sort(out)
	return out
}

// cluster is two DGX H100 nodes and NVIDIA's classes; gpu.nvidia.com also serves nvidia.com/gpu.
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
	var all []*resourceapi.ResourceSlice
	for _, name := range []string{"dgx-0", "dgx-1"} {
		inst, err := t.Instantiate(name)
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
		all = append(all, inst.Slices...)
	}
	n := 0
	c := pods.New(snap, pods.Options{NameSuffix: func() string { n++; return fmt.Sprintf("x%04d", n) }})
	for _, tmpl := range []*resourceapi.ResourceClaimTemplate{
		template("research", "four-gpus", request("gpu.nvidia.com", 4, "")),
		template("research", "mig-1g", request("mig.nvidia.com", 1, "1g.10gb")),
		template("prod", "two-gpus", request("gpu.nvidia.com", 2, "")),
	} {
		if err := c.AddOrUpdateTemplate(tmpl); err != nil {
			return nil, nil, err
		}
	}
	return c, all, nil
}

func request(class string, count int64, profile string) resourceapi.DeviceRequest {
	r := resourceapi.DeviceRequest{Name: "gpus", Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count}}
	if profile != "" {
		r.Exactly.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
			Expression: `device.attributes['gpu.nvidia.com'].profile == '` + profile + `'`}}}
	}
	return r
}

func template(ns, name string, r resourceapi.DeviceRequest) *resourceapi.ResourceClaimTemplate {
	t := &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	t.Spec.Spec.Devices.Requests = []resourceapi.DeviceRequest{r}
	return t
}

// workloads are the two teams' pods: research trains with a Job of two pods of four GPUs and runs a
// notebook on one MIG device; prod serves with a Deployment's pod asking for nvidia.com/gpu: 1. Pending:
// a research job's pod of four GPUs more and a prod pod of two.
func workloads() (running, pending []*v1.Pod) {
	running = []*v1.Pod{
		withTemplate(pod("research", "train-0", "Job", "train"), "four-gpus"),
		withTemplate(pod("research", "train-1", "Job", "train"), "four-gpus"),
		withTemplate(pod("research", "notebook", "", ""), "mig-1g"),
		withExtended(pod("prod", "serve-7d9f", "ReplicaSet", "serve-7d9f"), 1),
	}
	pending = []*v1.Pod{
		withTemplate(pod("research", "sweep-0", "Job", "sweep"), "four-gpus"),
		withTemplate(pod("prod", "batch-0", "Job", "batch"), "two-gpus"),
	}
	return running, pending
}

func pod(ns, name, ownerKind, owner string) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name)},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "main"}}},
	}
	if ownerKind != "" {
		apiVersion := "batch/v1"
		if ownerKind == "ReplicaSet" {
			apiVersion = "apps/v1"
		}
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: ownerKind, Name: owner,
			UID: types.UID("uid-" + owner), Controller: ptr.To(true)}}
	}
	return p
}

func withTemplate(p *v1.Pod, template string) *v1.Pod {
	p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpus", ResourceClaimTemplateName: &template}}
	p.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "gpus"}}
	return p
}

func withExtended(p *v1.Pod, n int64) *v1.Pod {
	q := *resource.NewQuantity(n, resource.DecimalSI)
	p.Spec.Containers[0].Resources.Limits = v1.ResourceList{"nvidia.com/gpu": q}
	p.Spec.Containers[0].Resources.Requests = v1.ResourceList{"nvidia.com/gpu": q}
	return p
}
