package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/manifest"
	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/allocator/verify"
)

// Gangs: the pods of a PodGroup with the gang policy are created together, and what kube-scheduler binds
// is compared with pods.Cluster.PlaceGroup, kube-scheduler's one pass; for a gang left pending, the
// reason too. kube-scheduler v1.37.2 runs with AllAlpha and AllBeta, so
// GenericWorkload (beta in 1.37) and TopologyAwareWorkloadScheduling (alpha since 1.36, pkg/features of
// k8s.io/kubernetes v1.37.2) are on, and the API server takes spec.schedulingConstraints.

const rackLabel = "example.com/rack"

// rackNode is a node labelled with its rack.
func rackNode(name, rack string) *v1.Node {
	n := node(name, nil)
	n.Labels[rackLabel] = rack
	return n
}

// gangGroup is a PodGroup with the gang policy of minCount, constrained to one rack when rack is set.
func gangGroup(name string, minCount int32, rack bool) *schedulingapi.PodGroup {
	g := &schedulingapi.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: name}}
	g.Spec.SchedulingPolicy.Gang = &schedulingapi.GangSchedulingPolicy{MinCount: minCount}
	if rack {
		g.Spec.SchedulingConstraints = &schedulingapi.PodGroupSchedulingConstraints{
			Topology: []schedulingapi.TopologyConstraint{{Key: rackLabel}}}
	}
	return g
}

// gangScenarios have gangs that fit in one rack only, or in none: the rack kube-scheduler chooses is then
// the only one, and must be dralloc's.
func gangScenarios() []*scenario {
	one := template("one-gpu", claimSpec("gpu", 1))
	racks := func() []*v1.Node {
		return []*v1.Node{rackNode("node-a1", "rack-a"), rackNode("node-a2", "rack-a"), rackNode("node-b1", "rack-b"), rackNode("node-b2", "rack-b")}
	}
	// rack-a has 2 GPUs, rack-b 4.
	rackSlices := func() []*resourceapi.ResourceSlice {
		return []*resourceapi.ResourceSlice{gpus("node-a1", 1, "a100"), gpus("node-a2", 1, "a100"), gpus("node-b1", 2, "a100"), gpus("node-b2", 2, "a100")}
	}
	members := func(prefix, group string, n int) []*v1.Pod {
		out := podsNamed(prefix, n, "gpu=template:one-gpu")
		for _, p := range out {
			inGroup(p, group)
		}
		return out
	}
	return []*scenario{{
		name:      "a gang of 3 with a rack constraint fits in the rack with 4 GPUs only",
		nodes:     racks(),
		slices:    rackSlices(),
		classes:   []*resourceapi.DeviceClass{gpuClass("gpu", "")},
		templates: []*resourceapi.ResourceClaimTemplate{one},
		groups:    []*schedulingapi.PodGroup{gangGroup("trainers", 3, true)},
		pods:      members("trainer", "trainers", 3),
	}, {
		name:      "a gang of 5 with a rack constraint fits in no rack, though the cluster has 6 GPUs",
		nodes:     racks(),
		slices:    rackSlices(),
		classes:   []*resourceapi.DeviceClass{gpuClass("gpu", "")},
		templates: []*resourceapi.ResourceClaimTemplate{one},
		groups:    []*schedulingapi.PodGroup{gangGroup("big", 5, true)},
		pods:      members("big", "big", 5),
	}, {
		name:      "a gang of 5 without a constraint spans the racks",
		nodes:     racks(),
		slices:    rackSlices(),
		classes:   []*resourceapi.DeviceClass{gpuClass("gpu", "")},
		templates: []*resourceapi.ResourceClaimTemplate{one},
		groups:    []*schedulingapi.PodGroup{gangGroup("wide", 5, false)},
		pods:      members("wide", "wide", 5),
	}}
}

// partitionableGPU is one GPU on the node with 8Gi of memory, offered whole (listed first) or as two
// halves drawing on the same counters: the shared counters in a slice of their own, as a driver
// publishing partitionable devices writes them.
func partitionableGPU(nodeName string) []*resourceapi.ResourceSlice {
	mem := func(q string) map[string]resourceapi.Counter {
		return map[string]resourceapi.Counter{"memory": {Value: resource.MustParse(q)}}
	}
	pool := resourceapi.ResourcePool{Name: nodeName, ResourceSliceCount: 2}
	counters := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: nodeName + "-counters"}}
	counters.Spec = resourceapi.ResourceSliceSpec{Driver: gpuDriver, Pool: pool, NodeName: ptr.To(nodeName),
		SharedCounters: []resourceapi.CounterSet{{Name: "gpu-0", Counters: mem("8Gi")}}}
	dev := func(name, q string) resourceapi.Device {
		return resourceapi.Device{Name: name, ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: "gpu-0", Counters: mem(q)}}}
	}
	devices := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: nodeName + "-devices"}}
	devices.Spec = resourceapi.ResourceSliceSpec{Driver: gpuDriver, Pool: pool, NodeName: ptr.To(nodeName),
		Devices: []resourceapi.Device{dev("whole", "8Gi"), dev("half-a", "4Gi"), dev("half-b", "4Gi")}}
	return []*resourceapi.ResourceSlice{counters, devices}
}

// onePassScenario has a gang that a placement holds but kube-scheduler's one pass does not find: the
// pods are alike, and whichever comes first takes the GPU whole (the first device in the upstream
// allocator's order), leaving nothing for the second; the two halves would hold both.
func onePassScenario() *scenario {
	members := podsNamed("half", 2, "gpu=template:one-gpu")
	for _, p := range members {
		inGroup(p, "halves")
	}
	return &scenario{
		name:      "a gang of two one-GPU pods on a GPU offered whole or as two halves: the first pod takes it whole",
		nodes:     []*v1.Node{node("node-p", nil)},
		slices:    partitionableGPU("node-p"),
		classes:   []*resourceapi.DeviceClass{gpuClass("gpu", "")},
		templates: []*resourceapi.ResourceClaimTemplate{template("one-gpu", claimSpec("gpu", 1))},
		groups:    []*schedulingapi.PodGroup{gangGroup("halves", 2, false)},
		pods:      members,
	}
}

// TestGangOnePass: kube-scheduler places a PodGroup in one pass without going back, and leaves pending
// a gang that pass cannot place though a placement exists. pods.Cluster.PlaceGroup must leave it
// pending too, with the reason kube-scheduler gives the pods (compared in runGangScenario), and
// SearchGroupPlacement must still find the placement.
func TestGangOnePass(t *testing.T) {
	c := client(t)
	tl := newTally()
	sc := onePassScenario()
	searched := runGangScenario(t, c, sc, tl)
	if !searched["halves"] {
		t.Error("PodGroup halves: SearchGroupPlacement finds no placement, want both pods on the two halves")
	}
	t.Logf("one pass against kube-scheduler:\n%s", tl.summary())
}

// TestGangScenarios compares kube-scheduler's gang scheduling with pods.Cluster.PlaceGroup.
func TestGangScenarios(t *testing.T) {
	c := client(t)
	tl := newTally()
	for _, sc := range gangScenarios() {
		t.Run(sc.name, func(t *testing.T) { _ = runGangScenario(t, c, sc, tl) })
	}
	t.Logf("gangs against kube-scheduler:\n%s", tl.summary())
}

// TestGangPodGroupDemo runs dra-example-driver's podgroup-resourceclaimtemplate demo: two gangs of two
// pods, each gang sharing one GPU through its PodGroup's claim.
func TestGangPodGroupDemo(t *testing.T) {
	c := client(t)
	sc := demoScenario(t, exampleDemo{name: "podgroup-resourceclaimtemplate", slices: "slices-gpu.yaml",
		files: []string{"podgroup-resourceclaimtemplate"}})
	sc.groups = demoPodGroups(t, filepath.Join(demoRoot, "podgroup-resourceclaimtemplate", "podgroup-resourceclaimtemplate.yaml"))
	for i, p := range sc.pods {
		// The Deployments are not created: no owner, which the garbage collector would find missing.
		p = p.DeepCopy()
		p.OwnerReferences = nil
		p.UID = ""
		sc.pods[i] = p
	}
	tl := newTally()
	_ = runGangScenario(t, c, sc, tl)
	t.Logf("podgroup-resourceclaimtemplate against kube-scheduler:\n%s", tl.summary())
}

// demoPodGroups reads the PodGroups of a demo file. The demo writes them as scheduling.k8s.io/v1alpha2,
// which Kubernetes 1.37 no longer serves; its fields are those of v1beta1 (as allocator/pods/demo_test.go
// reads them).
func demoPodGroups(t *testing.T, path string) []*schedulingapi.PodGroup {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []*schedulingapi.PodGroup
	for _, doc := range strings.Split(string(b), "\n---") {
		if !strings.Contains(doc, "\nkind: PodGroup") {
			continue
		}
		doc = strings.Replace(doc, "apiVersion: scheduling.k8s.io/v1alpha2", "apiVersion: scheduling.k8s.io/v1beta1", 1)
		objs, err := manifest.Decode(strings.NewReader(doc), path, manifest.Options{})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, objs.PodGroups...)
	}
	if len(out) == 0 {
		t.Fatalf("%s: no PodGroup", path)
	}
	return out
}

// runGangScenario creates the scenario's cluster and then, group by group, all pods of a group at once;
// it waits for kube-scheduler's verdict on each and compares which pods are bound, and on which rack, with
// PlaceGroup on the state before the group, and for a group both leave pending the reason. It returns,
// per group, whether SearchGroupPlacement finds a placement on that state: it must wherever PlaceGroup
// does.
func runGangScenario(t *testing.T, c kubernetes.Interface, sc *scenario, tl *tally) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(len(sc.pods)+2)*podTimeout)
	defer cancel()
	ns := namespace(ctx, t, c)
	t.Cleanup(func() { cleanup(t, c, ns, sc) })
	snap := allocator.NewSnapshot(allocator.Options{Features: ptrTo(verify.AllFeatures())})
	cl := pods.New(snap, pods.Options{})
	st := &state{}
	if err := createCluster(ctx, c, ns, sc, cl, st); err != nil {
		t.Fatal(err)
	}
	time.Sleep(settle)
	searched := map[string]bool{}
	for _, g := range sc.groups {
		if err := sync(ctx, c, ns, cl); err != nil {
			t.Fatal(err)
		}
		group, err := c.SchedulingV1beta1().PodGroups(ns).Get(ctx, g.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		before, err := allocatedDevices(ctx, c, ns)
		if err != nil {
			t.Fatal(err)
		}
		var created []*v1.Pod
		for _, p := range sc.pods {
			if p.Spec.SchedulingGroup == nil || ptr.Deref(p.Spec.SchedulingGroup.PodGroupName, "") != g.Name {
				continue
			}
			p = p.DeepCopy()
			p.Namespace = ns
			got, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create Pod %s: %v", p.Name, err)
			}
			created = append(created, got)
		}
		apiNodes := map[string]string{}    // pod → node; pending pods are absent
		apiMessages := map[string]string{} // pod → the PodScheduled condition's message of a pending pod
		for _, p := range created {
			out, err := await(ctx, c, p)
			if err != nil {
				t.Fatalf("Pod %s: %v", p.Name, err)
			}
			if out.node != "" {
				apiNodes[p.Name] = out.node
			} else {
				apiMessages[p.Name] = out.message
				t.Logf("%s: pending in kube-scheduler: %s", p.Name, out.message)
			}
		}
		after, err := allocatedDevices(ctx, c, ns)
		if err != nil {
			t.Fatal(err)
		}
		var apiDevices []string
		for _, d := range after {
			if !slices.Contains(before, d) {
				apiDevices = append(apiDevices, d)
			}
		}
		drNodes := map[string]string{}
		var drDevices []string
		// The question beside kube-scheduler's: does any placement exist? Asked on the state before
		// the group, as the pass is.
		_, searchErr := cl.SearchGroupPlacement(ctx, group, created, nil)
		if searchErr != nil && !errors.Is(searchErr, pods.ErrGroupUnschedulable) {
			t.Fatalf("PodGroup %s: dralloc's search: %v", g.Name, searchErr)
		}
		searched[g.Name] = searchErr == nil
		gp, err := cl.PlaceGroup(ctx, group, created)
		var pending *pods.GroupUnschedulableError
		switch {
		case err == nil:
			for i, pl := range gp.Pods {
				if pl == nil {
					continue
				}
				drNodes[created[i].Name] = pl.Node
				for _, pc := range pl.Claims {
					if pc.Allocated {
						drDevices = append(drDevices, devicesOf(pc.Claim)...)
					}
				}
			}
			if searchErr != nil {
				t.Errorf("PodGroup %s: kube-scheduler's pass places it, the search for any placement does not: %v", g.Name, searchErr)
			}
		case errors.As(err, &pending):
			t.Logf("PodGroup %s: dralloc: %v (a placement exists: %v)", g.Name, err, searchErr == nil)
		default:
			t.Fatalf("PodGroup %s: dralloc: %v", g.Name, err)
		}
		compareGang(t, sc, g, st, apiNodes, drNodes, tl)
		compareGangReason(t, sc, g, created, apiNodes, apiMessages, pending, tl)
		// How many devices the group's pods got: a claim of the PodGroup gives all its pods one device.
		// kube-scheduler's choice among equal devices may differ from dralloc's, the number may not.
		apiDevices, drDevices = sortedSet(apiDevices), sortedSet(drDevices)
		if len(apiDevices) == len(drDevices) {
			tl.record(t, sc, "PodGroup "+g.Name, "gang devices", nil)
		} else {
			tl.record(t, sc, "PodGroup "+g.Name, "gang devices", []difference{{category: "gang devices",
				detail: fmt.Sprintf("kube-scheduler allocates %v, dralloc %v", apiDevices, drDevices)}})
		}
	}
	return searched
}

// compareGangReason compares, for a group that both leave pending, the reason. kube-scheduler writes
// GangScheduling's verdict into the PodScheduled condition of every pod that did not fail on its own
// (those its pass placed before the group fell short, after "pod group is unschedulable", and those it
// did not reach), and a pod's own FitError into the others'; dralloc's GroupUnschedulableError gives the
// verdict and, per pod, whether it fit nowhere. Which pod comes first among pods of one priority is the
// order they reached the queue, so the pods are counted, not matched: as many carry the verdict as
// dralloc's pass did not find without a node. With a topology constraint kube-scheduler reports the
// status of one placement, the first of a map's iteration order (TopologyPlacementGenerator), which
// may be another domain than dralloc's first by value: then some pod must carry a minCount verdict.
func compareGangReason(t *testing.T, sc *scenario, g *schedulingapi.PodGroup, created []*v1.Pod, api, messages map[string]string, pending *pods.GroupUnschedulableError, tl *tally) {
	t.Helper()
	if pending == nil || len(api) > 0 {
		return
	}
	want, got := 0, 0
	for i, p := range created {
		if pending.NoNode[i] == nil {
			want++
		}
		if strings.Contains(messages[p.Name], pending.Reason) {
			got++
		}
	}
	var diffs []difference
	if g.Spec.SchedulingConstraints != nil && len(g.Spec.SchedulingConstraints.Topology) > 0 {
		minCount := int32(1)
		if gang := g.Spec.SchedulingPolicy.Gang; gang != nil {
			minCount = gang.MinCount
		}
		verdict := fmt.Sprintf("minCount (%d) cannot be satisfied", minCount)
		if !slices.ContainsFunc(slices.Collect(maps.Values(messages)), func(m string) bool { return strings.Contains(m, verdict) }) {
			diffs = append(diffs, difference{category: "gang reason",
				detail: fmt.Sprintf("no pod says %q: kube-scheduler %v, dralloc %q", verdict, messages, pending.Reason)})
		}
	} else if got != want {
		diffs = append(diffs, difference{category: "gang reason",
			detail: fmt.Sprintf("%d pods say %q, want %d: kube-scheduler %v", got, pending.Reason, want, messages)})
	}
	tl.record(t, sc, "PodGroup "+g.Name, "gang reason", diffs)
}

// compareGang compares the pods each side bound and the racks of their nodes.
func compareGang(t *testing.T, sc *scenario, g *schedulingapi.PodGroup, st *state, api, dr map[string]string, tl *tally) {
	t.Helper()
	name := "PodGroup " + g.Name
	apiBound, drBound := sortedKeys(api), sortedKeys(dr)
	if slices.Equal(apiBound, drBound) {
		tl.record(t, sc, name, "gang pods", nil)
	} else {
		tl.record(t, sc, name, "gang pods", []difference{{category: "gang pods",
			detail: fmt.Sprintf("kube-scheduler binds %v (%v), dralloc places %v (%v)", apiBound, api, drBound, dr)}})
	}
	t.Logf("%s: kube-scheduler %v, dralloc %v", name, api, dr)
	if g.Spec.SchedulingConstraints == nil || len(g.Spec.SchedulingConstraints.Topology) == 0 {
		return
	}
	key := g.Spec.SchedulingConstraints.Topology[0].Key
	apiDomains, drDomains := domains(st, key, api), domains(st, key, dr)
	var diffs []difference
	if len(apiDomains) > 1 {
		diffs = append(diffs, difference{category: "gang topology", detail: fmt.Sprintf("kube-scheduler's nodes span %s values %v", key, apiDomains)})
	}
	if len(drDomains) > 1 {
		diffs = append(diffs, difference{category: "gang topology", detail: fmt.Sprintf("dralloc's nodes span %s values %v", key, drDomains)})
	}
	// The scenarios leave one rack that fits: both must choose it.
	if len(diffs) == 0 && !slices.Equal(apiDomains, drDomains) {
		diffs = append(diffs, difference{category: "gang topology", detail: fmt.Sprintf("%s: kube-scheduler %v, dralloc %v", key, apiDomains, drDomains)})
	}
	tl.record(t, sc, name, "gang topology", diffs)
}

// allocatedDevices are the devices of the allocated claims in ns, as "driver/pool/device", sorted.
func allocatedDevices(ctx context.Context, c kubernetes.Interface, ns string) ([]string, error) {
	list, err := c.ResourceV1().ResourceClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list claims: %w", err)
	}
	var out []string
	for i := range list.Items {
		out = append(out, devicesOf(&list.Items[i])...)
	}
	return sortedSet(out), nil
}

// devicesOf are the devices allocated to a claim, as "driver/pool/device".
func devicesOf(claim *resourceapi.ResourceClaim) []string {
	if claim.Status.Allocation == nil {
		return nil
	}
	var out []string
	for _, r := range claim.Status.Allocation.Devices.Results {
		out = append(out, r.Driver+"/"+r.Pool+"/"+r.Device)
	}
	return out
}

func sortedSet(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// domains are the distinct values of the label key on the nodes of m, sorted.
func domains(st *state, key string, m map[string]string) []string {
	var out []string
	for _, n := range m {
		v := "<none>"
		if node := st.nodes[n]; node != nil {
			if val, ok := node.Labels[key]; ok {
				v = val
			}
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}
