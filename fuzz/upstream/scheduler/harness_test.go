package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/allocator/verify"
)

// scenario is what one comparison creates: the cluster, then its pods one by one, in order.
type scenario struct {
	name      string
	nodes     []*v1.Node // status.allocatable is written through the status subresource
	slices    []*resourceapi.ResourceSlice
	classes   []*resourceapi.DeviceClass
	rules     []*resourceapi.DeviceTaintRule
	templates []*resourceapi.ResourceClaimTemplate
	groups    []*schedulingapi.PodGroup
	claims    []*resourceapi.ResourceClaim // status.allocation, when set, is written after create
	// runtimeClasses are created with the cluster; the loader admits the pods with them.
	runtimeClasses []*nodev1.RuntimeClass
	pods           []*v1.Pod
	// known names the entry of knownDifferences that explains why dralloc and kube-scheduler disagree on
	// whether, or where, this scenario's pods fit; "" when they must agree.
	known string
}

// Bounds of the waits. A pod is placed by the scheduler within milliseconds on an idle machine; the bounds
// are for a busy one.
const (
	podTimeout = 60 * time.Second
	// unschedulableFor is how long a pod must stay unschedulable before it counts as pending: the scheduler
	// may have seen the pod before the scenario's slices or claims, and tries it again once they arrive
	// (after a backoff of a second).
	unschedulableFor = 3 * time.Second
	// unschedulableLong is how long a pod that dralloc places must stay unschedulable before the two
	// count as disagreeing: on a busy machine the scheduler's informers may see a scenario's objects, and
	// its backoff retry the pod, later than unschedulableFor.
	unschedulableLong = 30 * time.Second
	// settle is the pause between creating a scenario's cluster and its first pod, for the scheduler's
	// informers to see the cluster.
	settle = 500 * time.Millisecond
)

// outcome is what kube-scheduler did with a pod.
type outcome struct {
	pod     *v1.Pod // as read back at the end
	node    string  // "" while pending
	message string  // the PodScheduled condition's message of a pending pod
	// failed reports a pod kube-scheduler keeps failing with an error (reason SchedulerError) rather than
	// finding no node for it: the upstream allocator treats some inputs as errors of the whole attempt.
	failed bool
}

// tally counts agreements and differences per category over a test.
type tally struct {
	agree, differ, expected map[string]int
	other                   map[string]int // notes that are neither: devices chosen differently but valid
	knownSeen               map[string]bool
	// knownExpected are the knownDifferences entries this test met a chance of: a scenario naming one, a
	// claim generated from a template.
	knownExpected map[string]bool
	lines         []string
}

func newTally() *tally {
	return &tally{agree: map[string]int{}, differ: map[string]int{}, expected: map[string]int{}, other: map[string]int{}, knownSeen: map[string]bool{}, knownExpected: map[string]bool{}}
}

func (tl *tally) summary() string {
	cats := map[string]bool{}
	for _, m := range []map[string]int{tl.agree, tl.differ, tl.expected, tl.other} {
		for k := range m {
			cats[k] = true
		}
	}
	keys := make([]string, 0, len(cats))
	for k := range cats {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	// Every category counts pods but "claim", which counts the claims of the pods both placed.
	b.WriteString("category (per pod; claim: per claim)\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%-24s agree %3d, differ %3d, known difference %3d", k, tl.agree[k], tl.differ[k], tl.expected[k])
		if tl.other[k] > 0 {
			fmt.Fprintf(&b, ", other valid choice %3d", tl.other[k])
		}
		b.WriteString("\n")
	}
	for _, key := range slices.Sorted(maps.Keys(tl.knownExpected)) {
		if !tl.knownSeen[key] {
			fmt.Fprintf(&b, "known difference %q could occur and did not: once that holds on every run, remove its entry\n", key)
		}
	}
	for _, l := range tl.lines {
		b.WriteString(l + "\n")
	}
	return b.String()
}

// difference is one way dralloc's decision for a pod differs from the control plane's.
type difference struct {
	category string
	detail   string
	// known is the knownDifferences entry that explains it, or "".
	known string
}

// record counts a comparison of one category: agreement when diffs is empty. Differences not explained by
// knownDifferences fail the test.
func (tl *tally) record(t *testing.T, sc *scenario, pod, category string, diffs []difference) {
	t.Helper()
	if len(diffs) == 0 {
		tl.agree[category]++
		return
	}
	unexplained := false
	for _, d := range diffs {
		known := d.known
		if known == "" && (category == "outcome" || category == "node") {
			known = sc.known
		}
		if _, ok := knownDifferences[known]; ok {
			tl.knownSeen[known] = true
			t.Logf("%s: %s: known difference %q: %s", pod, d.category, known, d.detail)
			continue
		}
		unexplained = true
		t.Errorf("%s: %s: %s", pod, d.category, d.detail)
		tl.lines = append(tl.lines, fmt.Sprintf("%s/%s: %s: %s", sc.name, pod, d.category, d.detail))
	}
	if unexplained {
		tl.differ[category]++
	} else {
		tl.expected[category]++
	}
}

// runScenario creates the scenario in a fresh namespace, creates its pods one by one, compares each with
// a pods.Cluster holding the same objects, and deletes what it created.
func runScenario(t *testing.T, c kubernetes.Interface, sc *scenario, tl *tally) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(len(sc.pods)+2)*podTimeout)
	defer cancel()
	if sc.known != "" {
		if _, ok := knownDifferences[sc.known]; !ok {
			t.Fatalf("scenario %q names %q, which knownDifferences does not list", sc.name, sc.known)
		}
		tl.knownExpected[sc.known] = true
	}
	ns := namespace(ctx, t, c)
	t.Cleanup(func() { cleanup(t, c, ns, sc) })

	snap := allocator.NewSnapshot(allocator.Options{Features: ptrTo(verify.AllFeatures())})
	var only atomic.Pointer[string] // the node the next Place is restricted to; nil: every node
	cl := pods.New(snap, pods.Options{Predicate: func(_ *v1.Pod, node *v1.Node) error {
		if n := only.Load(); n != nil && node.Name != *n {
			return errors.New("not the node kube-scheduler chose")
		}
		return nil
	}})
	st := &state{}
	if err := createCluster(ctx, c, ns, sc, cl, st); err != nil {
		t.Fatal(err)
	}
	time.Sleep(settle)

	for _, p := range sc.pods {
		p = p.DeepCopy()
		p.Namespace = ns
		if err := sync(ctx, c, ns, cl); err != nil {
			t.Fatal(err)
		}
		created, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create Pod %s: %v", p.Name, err)
		}
		out, err := await(ctx, c, created)
		if err != nil {
			t.Fatalf("Pod %s: %v", p.Name, err)
		}
		// dralloc places the pod as allocator/manifest reads the pod written, which promises the pod
		// the API server stored: the comparison covers its defaults and admission.
		admitted, diffs := admit(p, sc.runtimeClasses, created)
		tl.record(t, sc, p.Name, "admission", diffs)
		if admitted == nil {
			continue
		}
		only.Store(nil)
		placed, placeErr := cl.Place(ctx, admitted)
		comparePod(ctx, t, c, sc, cl, st, &only, admitted, out, placed, placeErr, tl)
	}
}

// state is what the comparison of devices needs of a scenario: the objects as the API server stored them.
type state struct {
	slices  []*resourceapi.ResourceSlice
	classes []*resourceapi.DeviceClass
	rules   []*resourceapi.DeviceTaintRule
	nodes   map[string]*v1.Node
}

// comparePod compares what kube-scheduler did with the pod (out) with dralloc's placement of it.
func comparePod(ctx context.Context, t *testing.T, c kubernetes.Interface, sc *scenario, cl *pods.Cluster, st *state,
	only *atomic.Pointer[string], pod *v1.Pod, out outcome, placed *pods.Placement, placeErr error, tl *tally) {
	t.Helper()
	name := pod.Name
	drFailed := placeErr != nil && !errors.Is(placeErr, pods.ErrNoNode)
	switch {
	case out.failed && drFailed:
		tl.record(t, sc, name, "outcome", nil)
		t.Logf("%s: an error in both (kube-scheduler: %s; dralloc: %v)", name, out.message, placeErr)
		return
	case out.failed:
		tl.record(t, sc, name, "outcome", []difference{{category: "outcome",
			detail: fmt.Sprintf("kube-scheduler fails with an error (%s), dralloc: %s", out.message, placedOrNot(placed, placeErr))}})
		return
	case drFailed:
		tl.record(t, sc, name, "outcome", []difference{{category: "outcome",
			detail: fmt.Sprintf("dralloc fails with an error (%v), kube-scheduler: %s", placeErr, boundOrNot(out))}})
		return
	}
	if out.node == "" && strings.Contains(out.message, "timed out") {
		// The scheduler's DRA filter gave up on a busy machine: no verdict to compare.
		tl.other["outcome"]++
		t.Logf("%s: kube-scheduler timed out: %s", name, out.message)
		return
	}
	if out.node == "" && placed != nil {
		// Pending for unschedulableFor, where dralloc places it: wait for a verdict that a late informer
		// or a backoff on a busy machine cannot explain.
		later, err := awaitFor(ctx, c, out.pod, unschedulableLong)
		if err != nil {
			t.Fatalf("Pod %s: %v", name, err)
		}
		out = later
	}
	switch {
	case out.node == "" && placed == nil:
		tl.record(t, sc, name, "outcome", nil)
		t.Logf("%s: pending in both (kube-scheduler: %s)", name, out.message)
		return
	case out.node == "":
		tl.record(t, sc, name, "outcome", []difference{{category: "outcome",
			detail: fmt.Sprintf("kube-scheduler left it pending (%s), dralloc places it on %s", out.message, placed.Node)}})
		return
	case placed == nil:
		tl.record(t, sc, name, "outcome", []difference{{category: "outcome",
			detail: fmt.Sprintf("kube-scheduler bound it to %s, dralloc finds no node: %v", out.node, placeErr)}})
		return
	}
	tl.record(t, sc, name, "outcome", nil)

	// kube-scheduler chose among the feasible nodes by score, ties at random: dralloc must find its node
	// feasible, and is compared there.
	n := out.node
	only.Store(&n)
	onNode, err := cl.Place(ctx, pod)
	only.Store(nil)
	if err != nil {
		tl.record(t, sc, name, "node", []difference{{category: "node",
			detail: fmt.Sprintf("kube-scheduler bound it to %s, where dralloc finds it does not fit: %v", out.node, err)}})
		return
	}
	tl.record(t, sc, name, "node", nil)

	apiClaims, err := c.ResourceV1().ResourceClaims(pod.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list claims: %v", err)
	}
	byName := map[string]*resourceapi.ResourceClaim{}
	for i := range apiClaims.Items {
		byName[apiClaims.Items[i].Name] = &apiClaims.Items[i]
	}
	names := map[string]string{} // dralloc's generated claim name → the control plane's
	var drAllocated, apiAllocated []*resourceapi.ResourceClaim
	for _, pc := range onNode.Claims {
		apiName := apiClaimName(out.pod, onNode, pc)
		names[pc.Claim.Name] = apiName
		api := byName[apiName]
		if api == nil {
			tl.record(t, sc, name, "claim", []difference{{category: "claim",
				detail: fmt.Sprintf("claim %s (pod claim %q): the control plane has no such claim", pc.Claim.Name, pc.Name)}})
			continue
		}
		tl.record(t, sc, name, "claim", compareClaim(pc, api))
		if pc.Allocated {
			drAllocated = append(drAllocated, pc.Claim)
			apiAllocated = append(apiAllocated, api)
		}
	}
	if len(drAllocated) > 0 {
		same, diffs := compareDevices(ctx, st, out.node, apiClaims.Items, drAllocated, apiAllocated)
		if !same && len(diffs) == 0 {
			tl.other["devices"]++
			t.Logf("%s: other devices than kube-scheduler's, valid", name)
		} else {
			tl.record(t, sc, name, "devices", diffs)
		}
	}
	for _, api := range apiClaims.Items {
		if owned(&api, pod.UID) && !slices.Contains(mapsValues(names), api.Name) {
			tl.record(t, sc, name, "claim", []difference{{category: "claim",
				detail: fmt.Sprintf("the control plane created claim %s, dralloc none like it", api.Name)}})
		}
	}
	tl.record(t, sc, name, "pod status", comparePodStatus(onNode, out.pod, names))
	if err := cl.Assume(onNode); err != nil {
		tl.record(t, sc, name, "assume", []difference{{category: "assume", detail: err.Error()}})
	} else {
		tl.record(t, sc, name, "assume", nil)
	}
}

func placedOrNot(p *pods.Placement, err error) string {
	if p != nil {
		return "places it on " + p.Node
	}
	return err.Error()
}

func boundOrNot(out outcome) string {
	if out.node != "" {
		return "binds it to " + out.node
	}
	return "leaves it pending: " + out.message
}

// apiClaimName is the name of the control plane's claim for dralloc's placed claim pc.
func apiClaimName(apiPod *v1.Pod, p *pods.Placement, pc pods.PlacedClaim) string {
	if !pc.Generated {
		return pc.Claim.Name
	}
	if p.ExtendedResourceClaimStatus != nil && pc.Claim.Name == p.ExtendedResourceClaimStatus.ResourceClaimName {
		if s := apiPod.Status.ExtendedResourceClaimStatus; s != nil {
			return s.ResourceClaimName
		}
		return ""
	}
	for _, s := range apiPod.Status.ResourceClaimStatuses {
		if s.Name == pc.Name && s.ResourceClaimName != nil {
			return *s.ResourceClaimName
		}
	}
	// A claim of the pod's PodGroup: the pod's status names none.
	return pc.Claim.Name
}

func mapsValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func owned(claim *resourceapi.ResourceClaim, uid types.UID) bool {
	for _, o := range claim.OwnerReferences {
		if o.UID == uid {
			return true
		}
	}
	return false
}

// await waits until kube-scheduler binds the pod, or has kept it unschedulable (or failing with an error) for
// unschedulableFor.
func await(ctx context.Context, c kubernetes.Interface, pod *v1.Pod) (outcome, error) {
	return awaitFor(ctx, c, pod, unschedulableFor)
}

// awaitFor is await with the time a pod must stay unschedulable to count as pending.
func awaitFor(ctx context.Context, c kubernetes.Interface, pod *v1.Pod, window time.Duration) (outcome, error) {
	deadline := time.Now().Add(podTimeout + window)
	var since time.Time
	var last *v1.Pod
	for time.Now().Before(deadline) {
		p, err := c.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return outcome{}, err
		}
		last = p
		if p.Spec.NodeName != "" {
			return outcome{pod: p, node: p.Spec.NodeName}, nil
		}
		cond := scheduledCondition(p)
		if cond != nil && cond.Status == v1.ConditionFalse && (cond.Reason == v1.PodReasonUnschedulable || cond.Reason == v1.PodReasonSchedulerError) {
			if since.IsZero() {
				since = time.Now()
			} else if time.Since(since) >= window {
				return outcome{pod: p, message: cond.Message, failed: cond.Reason == v1.PodReasonSchedulerError}, nil
			}
		} else {
			since = time.Time{}
		}
		select {
		case <-ctx.Done():
			return outcome{}, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return outcome{}, fmt.Errorf("neither bound nor unschedulable after %v; conditions %+v", podTimeout, last.Status.Conditions)
}

func scheduledCondition(p *v1.Pod) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == v1.PodScheduled {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// sync makes the Cluster's claims and PodGroups in ns the API server's: each pod is compared from the state
// the scheduler saw, whatever devices earlier pods got.
func sync(ctx context.Context, c kubernetes.Interface, ns string, cl *pods.Cluster) error {
	groups, err := c.SchedulingV1beta1().PodGroups(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list PodGroups: %w", err)
	}
	for i := range groups.Items {
		if err := cl.AddOrUpdatePodGroup(&groups.Items[i]); err != nil {
			return err
		}
	}
	// The pods bound so far count on their nodes (NodeResourcesFit, NodePorts), as in the scheduler's cache.
	podList, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	for i := range podList.Items {
		if err := cl.AddOrUpdatePod(&podList.Items[i]); err != nil {
			return err
		}
	}
	snap := cl.Snapshot()
	list, err := c.ResourceV1().ResourceClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list claims: %w", err)
	}
	api := map[string]bool{}
	for i := range list.Items {
		api[list.Items[i].Name] = true
	}
	for _, claim := range snap.Claims(ns) {
		if !api[claim.Name] {
			if err := snap.DeleteClaim(ns, claim.Name); err != nil {
				return err
			}
		}
	}
	for i := range list.Items {
		if err := snap.AddOrUpdateClaim(&list.Items[i]); err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
	}
	return nil
}

// namespace creates a fresh namespace labelled for admin access, with the ServiceAccount "default" the
// ServiceAccount admission plugin gives every pod (its controller does not run here).
func namespace(ctx context.Context, t *testing.T, c kubernetes.Interface) string {
	t.Helper()
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "sched-",
		Labels: map[string]string{"resource.kubernetes.io/admin-access": "true"}}}
	got, err := c.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	if _, err := c.CoreV1().ServiceAccounts(got.Name).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ServiceAccount %s/default: %v", got.Name, err)
	}
	return got.Name
}

// createCluster creates the scenario's objects (pods aside) and gives the pods.Cluster the API server's
// copies.
func createCluster(ctx context.Context, c kubernetes.Interface, ns string, sc *scenario, cl *pods.Cluster, st *state) error {
	snap := cl.Snapshot()
	st.nodes = map[string]*v1.Node{}
	for _, x := range sc.classes {
		got, err := c.ResourceV1().DeviceClasses().Create(ctx, x, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create DeviceClass %s: %w", x.Name, err)
		}
		st.classes = append(st.classes, got)
		if err := snap.AddOrUpdateClass(got); err != nil {
			return err
		}
	}
	for _, x := range sc.nodes {
		got, err := c.CoreV1().Nodes().Create(ctx, x, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create Node %s: %w", x.Name, err)
		}
		got.Status = *x.Status.DeepCopy()
		if got, err = c.CoreV1().Nodes().UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update status of Node %s: %w", x.Name, err)
		}
		st.nodes[got.Name] = got
		if err := snap.AddOrUpdateNode(got); err != nil {
			return err
		}
	}
	for _, x := range sc.slices {
		got, err := c.ResourceV1().ResourceSlices().Create(ctx, x, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create ResourceSlice %s: %w", x.Name, err)
		}
		st.slices = append(st.slices, got)
		if err := snap.AddOrUpdateSlice(got); err != nil {
			return err
		}
	}
	for _, x := range sc.rules {
		got, err := c.ResourceV1().DeviceTaintRules().Create(ctx, x, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create DeviceTaintRule %s: %w", x.Name, err)
		}
		st.rules = append(st.rules, got)
		if err := snap.AddOrUpdateTaintRule(got); err != nil {
			return err
		}
	}
	for _, x := range sc.runtimeClasses {
		if _, err := c.NodeV1().RuntimeClasses().Create(ctx, x, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create RuntimeClass %s: %w", x.Name, err)
		}
	}
	for _, x := range sc.templates {
		x = x.DeepCopy()
		x.Namespace = ns
		got, err := c.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, x, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create ResourceClaimTemplate %s: %w", x.Name, err)
		}
		if err := cl.AddOrUpdateTemplate(got); err != nil {
			return err
		}
	}
	for _, x := range sc.groups {
		x = x.DeepCopy()
		x.Namespace = ns
		got, err := c.SchedulingV1beta1().PodGroups(ns).Create(ctx, x, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create PodGroup %s: %w", x.Name, err)
		}
		if err := cl.AddOrUpdatePodGroup(got); err != nil {
			return err
		}
	}
	for _, x := range sc.claims {
		x = x.DeepCopy()
		x.Namespace = ns
		status := x.Status
		x.Status = resourceapi.ResourceClaimStatus{}
		got, err := c.ResourceV1().ResourceClaims(ns).Create(ctx, x, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create ResourceClaim %s: %w", x.Name, err)
		}
		if status.Allocation != nil {
			got.Status = status
			if _, err = c.ResourceV1().ResourceClaims(ns).UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("update status of ResourceClaim %s: %w", x.Name, err)
			}
		}
	}
	return nil
}

// cleanup deletes what the scenario created, so that the next one sees none of it: the pods at once (no
// kubelet would confirm a graceful deletion), the claims with their finalizers dropped, the cluster-scoped
// objects. The namespace stays: without its controller it would never finish terminating.
func cleanup(t *testing.T, c kubernetes.Interface, ns string, sc *scenario) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var errs []error
	zero := int64(0)
	del := metav1.DeleteOptions{GracePeriodSeconds: &zero}
	keep := func(err error) {
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	keep(c.CoreV1().Pods(ns).DeleteCollection(ctx, del, metav1.ListOptions{}))
	claims, err := c.ResourceV1().ResourceClaims(ns).List(ctx, metav1.ListOptions{})
	keep(err)
	if err == nil {
		for _, claim := range claims.Items {
			_, err := c.ResourceV1().ResourceClaims(ns).Patch(ctx, claim.Name, types.MergePatchType,
				[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			keep(err)
			keep(c.ResourceV1().ResourceClaims(ns).Delete(ctx, claim.Name, metav1.DeleteOptions{}))
		}
	}
	groups, err := c.SchedulingV1beta1().PodGroups(ns).List(ctx, metav1.ListOptions{})
	keep(err)
	if err == nil {
		for _, g := range groups.Items {
			_, err := c.SchedulingV1beta1().PodGroups(ns).Patch(ctx, g.Name, types.MergePatchType,
				[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			keep(err)
			keep(c.SchedulingV1beta1().PodGroups(ns).Delete(ctx, g.Name, metav1.DeleteOptions{}))
		}
	}
	for _, x := range sc.slices {
		keep(c.ResourceV1().ResourceSlices().Delete(ctx, x.Name, metav1.DeleteOptions{}))
	}
	for _, x := range sc.rules {
		keep(c.ResourceV1().DeviceTaintRules().Delete(ctx, x.Name, metav1.DeleteOptions{}))
	}
	for _, x := range sc.classes {
		keep(c.ResourceV1().DeviceClasses().Delete(ctx, x.Name, metav1.DeleteOptions{}))
	}
	for _, x := range sc.nodes {
		keep(c.CoreV1().Nodes().Delete(ctx, x.Name, metav1.DeleteOptions{}))
	}
	for _, x := range sc.runtimeClasses {
		keep(c.NodeV1().RuntimeClasses().Delete(ctx, x.Name, metav1.DeleteOptions{}))
	}
	if len(errs) > 0 {
		t.Errorf("clean up scenario %s: %v", sc.name, errors.Join(errs...))
	}
}

func ptrTo[T any](v T) *T { return &v }
