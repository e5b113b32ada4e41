package pods_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/manifest"
	"github.com/dralloc/dralloc/allocator/pods"
)

// The demos of kubernetes-sigs/dra-example-driver (demo/examples, copies in
// ../manifest/testdata/demo/dra-example-driver) scheduled on the driver's demo cluster
// (testdata/dra-example-driver: its nodes, DeviceClass and ResourceSlices for the chart values each
// demo's README asks for), checked against what the READMEs say each pod gets.

const (
	exampleDemos = "../manifest/testdata/demo/dra-example-driver"
	exampleData  = "testdata/dra-example-driver"
	exampleNode  = "dra-example-driver-cluster-worker"
)

// demoStep is what a user applies at once: manifests, then the pods among them are scheduled in order
// (the pods of a PodGroup together, as the gang).
type demoStep struct {
	files []string // under the demo's root
	// extra is a manifest given inline (a demo file that needs a fix to load, see its use).
	extra string
}

// wantPod is what a demo's README says a pod gets.
type wantPod struct {
	pod     string // the pod's name, or "<Deployment>/<n>" for the n-th pod of a Deployment
	pending string // non-empty: the pod stays pending, for this reason (a substring of the error)
	fails   string // non-empty: placing the pod is an error other than fitting nowhere, with this text
	devices int    // distinct devices of the pod
	// shares lists the containers that get the same devices, as groups "a,b": every container of a
	// group sees the same devices, and containers of different groups see disjoint ones.
	shares []string
	// sameAs names an earlier pod of the demo with the very same devices; empty means the pod's devices
	// are used by no other pod of the demo.
	sameAs string
	// requests are the request names of the allocation results, sorted ("gpu/older-gpu").
	requests []string
	// adminAccess: every result has adminAccess set.
	adminAccess bool
}

type demo struct {
	name string
	// root is the directory of the steps' files; empty means exampleDemos.
	root string
	// cluster builds the snapshot; nil means the example driver's demo cluster with slices.
	cluster func(t *testing.T) *allocator.Snapshot
	// node is where the pods go; empty means exampleNode.
	node   string
	slices string // under exampleData
	// extendedResourceName is the chart's deviceClass.extendedResourceName.
	extendedResourceName string
	steps                []demoStep
	want                 []wantPod
}

func TestExampleDriverDemos(t *testing.T) {
	const defaultSlices = "slices-gpu.yaml"
	tests := []demo{{
		name:   "two pods, one container each, one GPU each",
		slices: defaultSlices,
		steps:  []demoStep{{files: []string{"basic-resourceclaimtemplate"}}},
		want: []wantPod{
			{pod: "pod0", devices: 1, shares: []string{"ctr0"}},
			{pod: "pod1", devices: 1, shares: []string{"ctr0"}},
		},
	}, {
		name:   "one container with two distinct GPUs",
		slices: defaultSlices,
		steps:  []demoStep{{files: []string{"basic-multiple-requests"}}},
		want:   []wantPod{{pod: "pod0", devices: 2, shares: []string{"ctr0"}, requests: []string{"gpu-1", "gpu-2"}}},
	}, {
		name:   "two containers share one GPU",
		slices: defaultSlices,
		steps:  []demoStep{{files: []string{"basic-shared-claim-across-containers"}}},
		want:   []wantPod{{pod: "pod0", devices: 1, shares: []string{"ctr0,ctr1"}}},
	}, {
		name:   "two pods share one GPU through one ResourceClaim",
		slices: defaultSlices,
		steps:  []demoStep{{files: []string{"basic-shared-claim-across-pods"}}},
		want: []wantPod{
			{pod: "pod0", devices: 1, shares: []string{"ctr0"}},
			{pod: "pod1", devices: 1, shares: []string{"ctr0"}, sameAs: "pod0"},
		},
	}, {
		name:   "an init container shares the GPU of the container",
		slices: defaultSlices,
		steps:  []demoStep{{files: []string{"initcontainer-shared-gpu"}}},
		want:   []wantPod{{pod: "pod0", devices: 1, shares: []string{"init0,ctr0"}}},
	}, {
		name:   "four containers, two GPUs, each shared by two containers (opaque config)",
		slices: defaultSlices,
		steps:  []demoStep{{files: []string{"basic-resourceclaim-opaque-config"}}},
		want: []wantPod{{pod: "pod0", devices: 2, shares: []string{"ts-ctr0,ts-ctr1", "sp-ctr0,sp-ctr1"},
			requests: []string{"sp-gpu", "ts-gpu"}}},
	}, {
		name:   "CEL selectors on model and memory",
		slices: defaultSlices,
		steps:  []demoStep{{files: []string{"cel-selector"}}},
		want:   []wantPod{{pod: "pod0", devices: 1, shares: []string{"ctr0"}}},
	}, {
		name:   "prioritized alternatives: pod0 falls back to older-gpu, pod1 gets latest-gpu",
		slices: defaultSlices,
		steps:  []demoStep{{files: []string{"prioritized-alternatives"}}},
		want: []wantPod{
			{pod: "pod0", devices: 1, shares: []string{"ctr0"}, requests: []string{"gpu/older-gpu"}},
			{pod: "pod1", devices: 1, shares: []string{"ctr0"}, requests: []string{"gpu/latest-gpu"}},
		},
	}, {
		name:   "admin access to all GPUs of the node",
		slices: defaultSlices,
		steps:  []demoStep{{files: []string{"admin-access"}}},
		want:   []wantPod{{pod: "pod0", devices: 8, shares: []string{"ctr0"}, adminAccess: true}},
	}, {
		// The README: pod1 asks for example.com/gpu, which the default chart maps to no class, "pod1
		// will remain in Pending state while pod0 runs normally"; NodeResourcesFit is what keeps it
		// there (a built-in filter: "Insufficient example.com/gpu").
		name:   "extended resources with the default chart: the implicit name only",
		slices: defaultSlices,
		steps:  []demoStep{{files: []string{"extended-resource-request"}}},
		want: []wantPod{
			{pod: "pod0", devices: 1, shares: []string{"ctr0"}},
			{pod: "pod1", pending: "Insufficient example.com/gpu"},
		},
	}, {
		name:                 "extended resources with deviceClass.extendedResourceName=example.com/gpu",
		slices:               defaultSlices,
		extendedResourceName: "example.com/gpu",
		steps:                []demoStep{{files: []string{"extended-resource-request"}}},
		want: []wantPod{
			{pod: "pod0", devices: 1, shares: []string{"ctr0"}},
			{pod: "pod1", devices: 1, shares: []string{"ctr0"}},
		},
	}, {
		name:   "two pods consume capacity of one GPU (gpuAllowMultipleAllocations)",
		slices: "slices-gpu-shared.yaml",
		steps:  []demoStep{{files: []string{"gpu-allow-multiple-allocations"}}},
		want: []wantPod{
			{pod: "pod0", devices: 1, shares: []string{"ctr0"}},
			{pod: "pod1", devices: 1, shares: []string{"ctr0"}, sameAs: "pod0"},
		},
	}, {
		name:   "one pod gets two partitions (gpuPartitions=4, numDevices=2)",
		slices: "slices-gpu-partitions.yaml",
		steps:  []demoStep{{files: []string{"partitionable-devices"}}},
		want:   []wantPod{{pod: "pod0", devices: 2, shares: []string{"ctr0"}}},
	}, {
		name:   "two pods consume capacity of one partition (gpuAllowMultipleAllocations, gpuPartitions=4)",
		slices: "slices-gpu-shared-partitions.yaml",
		steps:  []demoStep{{files: []string{"gpu-allow-multiple-allocations-partitionable"}}},
		want: []wantPod{
			{pod: "pod0", devices: 1, shares: []string{"ctr0"}},
			{pod: "pod1", devices: 1, shares: []string{"ctr0"}, sameAs: "pod0"},
		},
	}, {
		name:   "two PodGroups, the pods of each share the group's GPU",
		slices: defaultSlices,
		steps:  []demoStep{{files: []string{"podgroup-resourceclaimtemplate"}}},
		want: []wantPod{
			{pod: "group-1/0", devices: 1, shares: []string{"ctr0"}},
			{pod: "group-1/1", devices: 1, shares: []string{"ctr0"}, sameAs: "group-1/0"},
			{pod: "group-2/0", devices: 1, shares: []string{"ctr0"}},
			{pod: "group-2/1", devices: 1, shares: []string{"ctr0"}, sameAs: "group-2/0"},
		},
	}, {
		// No README; the files say it: the pod that runs before the NoSchedule taint keeps its GPU,
		// the pod created after it is not scheduled. 4-pod-not-scheduled.yaml has no apiVersion, so the
		// loader (as kubectl) refuses it: the test adds it.
		name:   "a NoSchedule device taint keeps the next pod pending",
		slices: defaultSlices,
		steps: []demoStep{
			{files: []string{"device-taints-tolerations/device-taint-pod-noschedule/1-basic-resourceclaimtemplate.yaml",
				"device-taints-tolerations/device-taint-pod-noschedule/2-pod-keeps-running.yaml"}},
			{files: []string{"device-taints-tolerations/device-taint-pod-noschedule/3-device-taint-rule.yaml"}},
			{extra: "apiVersion: v1\n" + readFile(t, "../manifest/testdata/bad/4-pod-not-scheduled.yaml")},
		},
		want: []wantPod{
			{pod: "pod-keeps-running", devices: 1, shares: []string{"ctr0"}},
			{pod: "pod-no-schedule", pending: "cannot allocate all claims"},
		},
	}, {
		// The README says both pods are scheduled and the one without toleration is evicted at once;
		// the scheduler does not allocate a device with an untolerated NoExecute taint (as
		// k8s.io/dynamic-resource-allocation/structured: taints with effect NoSchedule or NoExecute
		// make a device unallocatable), so that pod stays pending instead: the README describes a
		// race with the taint rule.
		name:   "a NoExecute device taint: only the pod whose claim tolerates it is scheduled",
		slices: defaultSlices,
		steps: []demoStep{
			{files: []string{"device-taints-tolerations/device-taint-pod-toleration/1-device-taint-rule.yaml"}},
			{files: []string{"device-taints-tolerations/device-taint-pod-toleration/2-basic-resourceclaimtemplate.yaml"}},
		},
		want: []wantPod{
			{pod: "pod-without-toleration", pending: "cannot allocate all claims"},
			{pod: "pod-with-toleration", devices: 1, shares: []string{"ctr0"}},
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { runDemo(t, tc) })
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// demoResult is what happened to one pod.
type demoResult struct {
	placement *pods.Placement
	err       error
}

// exampleDriverCluster is the example driver's demo cluster with its slices for the demo's chart values.
func exampleDriverCluster(tc demo) func(t *testing.T) *allocator.Snapshot {
	return func(t *testing.T) *allocator.Snapshot {
		base, err := manifest.Load([]string{filepath.Join(exampleData, "cluster.yaml"), filepath.Join(exampleData, tc.slices)}, manifest.Options{})
		must(t, err)
		snap := allocator.NewSnapshot(allocator.Options{})
		for _, n := range base.Nodes {
			must(t, snap.AddOrUpdateNode(n))
		}
		for _, s := range base.Slices {
			must(t, snap.AddOrUpdateSlice(s))
		}
		for _, class := range base.Classes {
			if tc.extendedResourceName != "" {
				class = class.DeepCopy()
				class.Spec.ExtendedResourceName = &tc.extendedResourceName
			}
			must(t, snap.AddOrUpdateClass(class))
		}
		return snap
	}
}

func runDemo(t *testing.T, tc demo) {
	if tc.root == "" {
		tc.root = exampleDemos
	}
	if tc.node == "" {
		tc.node = exampleNode
	}
	if tc.cluster == nil {
		tc.cluster = exampleDriverCluster(tc)
	}
	snap := tc.cluster(t)
	c := pods.New(snap, pods.Options{NameSuffix: fixedSuffixes()})
	ctx := context.Background()

	results := map[string]demoResult{}
	var order []string
	for _, step := range tc.steps {
		objs := loadStep(t, tc.root, step)
		for _, r := range objs.TaintRules {
			must(t, snap.AddOrUpdateTaintRule(r))
		}
		for _, claim := range objs.Claims {
			must(t, snap.AddOrUpdateClaim(claim))
		}
		for _, tmpl := range objs.Templates {
			must(t, c.AddOrUpdateTemplate(tmpl))
		}
		groups := podGroups(t, tc.root, step)
		for _, g := range groups {
			must(t, c.AddOrUpdatePodGroup(g))
		}
		// Pods from files get their UID from the API server when created.
		var members = map[string][]*v1.Pod{}
		var memberNames = map[string][]string{}
		expanded := map[string]int{} // pods of each workload so far
		for _, orig := range objs.Pods {
			p := orig.DeepCopy()
			p.UID = types.UID("uid-" + p.Namespace + "-" + p.Name)
			name := p.Name
			if src, _ := objs.Source(orig); src.Owner != "" {
				// A workload's pod: named "<workload>/<n>" in the table.
				_, owner, _ := strings.Cut(src.Owner, "/")
				name = fmt.Sprintf("%s/%d", owner, expanded[owner])
				expanded[owner]++
			}
			if p.Spec.SchedulingGroup != nil && p.Spec.SchedulingGroup.PodGroupName != nil {
				g := *p.Spec.SchedulingGroup.PodGroupName
				members[g] = append(members[g], p)
				memberNames[g] = append(memberNames[g], name)
				continue
			}
			order = append(order, name)
			pl, err := c.Place(ctx, p)
			if err == nil {
				must(t, c.Assume(pl))
			}
			results[name] = demoResult{pl, err}
		}
		for _, g := range groups {
			gp, err := c.PlaceGroup(ctx, g, members[g.Name])
			if err == nil {
				must(t, c.AssumeGroup(gp))
			}
			for i, name := range memberNames[g.Name] {
				order = append(order, name)
				r := demoResult{err: err}
				if err == nil {
					r.placement = gp.Pods[i]
				}
				results[name] = r
			}
		}
	}

	var wantNames []string
	for _, w := range tc.want {
		wantNames = append(wantNames, w.pod)
	}
	if !slices.Equal(order, wantNames) {
		t.Fatalf("pods scheduled: %v, the table has %v", order, wantNames)
	}
	devices := map[string][]string{}
	for _, w := range tc.want {
		r := results[w.pod]
		if w.fails != "" {
			if r.err == nil || errors.Is(r.err, pods.ErrNoNode) || !strings.Contains(r.err.Error(), w.fails) {
				t.Errorf("%s: got %v, want an error with %q", w.pod, r.err, w.fails)
			}
			continue
		}
		if w.pending != "" {
			if !errors.Is(r.err, pods.ErrNoNode) && !errors.Is(r.err, pods.ErrGroupUnschedulable) {
				t.Errorf("%s: got %v, want it pending", w.pod, r.err)
			} else if !strings.Contains(r.err.Error(), w.pending) {
				t.Errorf("%s: pending with %q, want the reason %q", w.pod, r.err, w.pending)
			}
			continue
		}
		if r.err != nil {
			t.Errorf("%s: %v", w.pod, r.err)
			continue
		}
		p := r.placement
		if p.Node != tc.node {
			t.Errorf("%s: on node %s, want %s", w.pod, p.Node, tc.node)
		}
		perContainer, all, requests, admin := demoDevices(p)
		devices[w.pod] = all
		if len(all) != w.devices {
			t.Errorf("%s: %d distinct devices %v, want %d", w.pod, len(all), all, w.devices)
		}
		if got := sharing(p.Pod, perContainer); !slices.Equal(got, w.shares) {
			t.Errorf("%s: containers sharing devices %v, want %v (devices %v)", w.pod, got, w.shares, perContainer)
		}
		if w.requests != nil && !slices.Equal(requests, w.requests) {
			t.Errorf("%s: requests %v, want %v", w.pod, requests, w.requests)
		}
		if admin != w.adminAccess {
			t.Errorf("%s: adminAccess %v, want %v", w.pod, admin, w.adminAccess)
		}
	}
	// Devices are shared exactly where the table says.
	for i, w := range tc.want {
		for _, other := range tc.want[:i] {
			if w.pending != "" || other.pending != "" || w.fails != "" || other.fails != "" {
				continue
			}
			same, overlap := slices.Equal(devices[w.pod], devices[other.pod]), intersects(devices[w.pod], devices[other.pod])
			if w.sameAs == other.pod && !same {
				t.Errorf("%s: devices %v, want those of %s %v", w.pod, devices[w.pod], other.pod, devices[other.pod])
			}
			if w.sameAs != other.pod && overlap {
				t.Errorf("%s: devices %v overlap those of %s %v", w.pod, devices[w.pod], other.pod, devices[other.pod])
			}
		}
	}
}

// loadStep reads a step's manifests as kubectl apply would take them.
func loadStep(t *testing.T, root string, step demoStep) *manifest.Objects {
	t.Helper()
	opts := manifest.Options{SkipUnknown: true}
	var paths []string
	for _, f := range step.files {
		paths = append(paths, filepath.Join(root, f))
	}
	objs := &manifest.Objects{}
	if len(paths) > 0 {
		var err error
		objs, err = manifest.Load(paths, opts)
		must(t, err)
	}
	if step.extra != "" {
		extra, err := manifest.Decode(strings.NewReader(step.extra), "extra.yaml", opts)
		must(t, err)
		objs.Append(extra)
	}
	return objs
}

// podGroups reads the PodGroups of a step's files. The demo writes them as scheduling.k8s.io/v1alpha2,
// which Kubernetes 1.37 no longer serves (the loader skips them); its fields are those of v1beta1, so
// the test gives them that version and reads them with the loader.
func podGroups(t *testing.T, root string, step demoStep) []*schedulingapi.PodGroup {
	t.Helper()
	var out []*schedulingapi.PodGroup
	for _, f := range step.files {
		paths := []string{filepath.Join(root, f)}
		if fi, err := os.Stat(paths[0]); err == nil && fi.IsDir() {
			paths, _ = filepath.Glob(filepath.Join(paths[0], "*.yaml"))
		}
		for _, path := range paths {
			for _, doc := range strings.Split(readFile(t, path), "\n---") {
				if !strings.Contains(doc, "\nkind: PodGroup") {
					continue
				}
				doc = strings.Replace(doc, "apiVersion: scheduling.k8s.io/v1alpha2", "apiVersion: scheduling.k8s.io/v1beta1", 1)
				objs, err := manifest.Decode(strings.NewReader(doc), path, manifest.Options{})
				must(t, err)
				if len(objs.PodGroups) != 1 {
					t.Fatalf("%s: read %d PodGroups from a PodGroup document", path, len(objs.PodGroups))
				}
				g := objs.PodGroups[0]
				g.UID = types.UID("uid-podgroup-" + g.Name)
				out = append(out, g)
			}
		}
	}
	return out
}

// demoDevices returns the devices of each container (init containers too), all devices of the pod
// and the requests of the allocation results, sorted; and whether every result has admin access.
func demoDevices(p *pods.Placement) (map[string][]string, []string, []string, bool) {
	byEntry := map[string]*resourceapi.ResourceClaim{}
	var ext *resourceapi.ResourceClaim
	for _, pc := range p.Claims {
		if pc.Name == "" {
			ext = pc.Claim
			continue
		}
		byEntry[pc.Name] = pc.Claim
	}
	var all, requests []string
	admin := true
	for _, pc := range p.Claims {
		for _, r := range pc.Claim.Status.Allocation.Devices.Results {
			all = append(all, r.Driver+"/"+r.Pool+"/"+r.Device)
			requests = append(requests, r.Request)
			admin = admin && r.AdminAccess != nil && *r.AdminAccess
		}
	}
	per := map[string][]string{}
	add := func(ctr string, claim *resourceapi.ResourceClaim, request string) {
		if claim == nil {
			return
		}
		for _, r := range claim.Status.Allocation.Devices.Results {
			if request == "" || r.Request == request || strings.HasPrefix(r.Request, request+"/") {
				per[ctr] = append(per[ctr], r.Driver+"/"+r.Pool+"/"+r.Device)
			}
		}
	}
	for _, ctr := range slices.Concat(p.Pod.Spec.InitContainers, p.Pod.Spec.Containers) {
		for _, rc := range ctr.Resources.Claims {
			add(ctr.Name, byEntry[rc.Name], rc.Request)
		}
	}
	if p.ExtendedResourceClaimStatus != nil {
		for _, m := range p.ExtendedResourceClaimStatus.RequestMappings {
			add(m.ContainerName, ext, m.RequestName)
		}
	}
	for ctr := range per {
		per[ctr] = sortedSet(per[ctr])
	}
	return per, sortedSet(all), sortedSet(requests), admin && len(all) > 0
}

// sharing groups the containers with devices by their devices, in the order of the pod's containers
// (init containers first); a container whose devices overlap another group's without being equal
// gets "!" in front.
func sharing(pod *v1.Pod, per map[string][]string) []string {
	var groups [][]string
	var devs [][]string
	for _, ctr := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		d, ok := per[ctr.Name]
		if !ok {
			continue
		}
		found := false
		for i := range groups {
			if slices.Equal(devs[i], d) {
				groups[i] = append(groups[i], ctr.Name)
				found = true
				break
			}
			if intersects(devs[i], d) {
				groups[i] = append(groups[i], "!"+ctr.Name)
				found = true
				break
			}
		}
		if !found {
			groups = append(groups, []string{ctr.Name})
			devs = append(devs, d)
		}
	}
	out := make([]string, len(groups))
	for i, g := range groups {
		out[i] = strings.Join(g, ",")
	}
	return out
}

func sortedSet(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

func intersects(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}
