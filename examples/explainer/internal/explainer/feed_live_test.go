package explainer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
)

// fixedSuffix names generated claims alike in both Clusters compared.
func fixedSuffix() string { return "zzzzz" }

// TestLiveFeedEqualsList drives the controller's informers (and so its Feed) with objects created,
// updated and deleted through a real kube-apiserver in a shuffled order, in three phases: while
// watching, while the watches lose every event and then end with "410 Gone" (the reflectors list
// again and deliver the objects deleted meanwhile as tombstones), and while watching again. After each
// phase the Cluster the informers fed must answer every pending pod as a Cluster loaded from a list of
// the same objects does: Explain, the nodes where the pod fits, Place, and the objects held.
func TestLiveFeedEqualsList(t *testing.T) {
	c := liveClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	ns := podNamespace(t, c)
	p := uniqueName("a")
	cleanupClusterObjects(t, c, p)

	b := newBreaker()
	ctrl, err := NewController(ktesting.NewLogger(t, ktesting.NewConfig()), Config{Client: breakingClient{c, b}, Pods: pods.Options{NameSuffix: fixedSuffix}})
	if err != nil {
		t.Fatal(err)
	}
	var tombstones atomic.Int64
	countTombstones := cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if _, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			tombstones.Add(1)
		}
	}}
	for _, inf := range []cache.SharedIndexInformer{ctrl.factory.Resource().V1().ResourceSlices().Informer(), ctrl.factory.Core().V1().Nodes().Informer(),
		ctrl.factory.Resource().V1().ResourceClaims().Informer()} {
		if _, err := inf.AddEventHandler(countTombstones); err != nil {
			t.Fatal(err)
		}
	}
	runCtx, stop := context.WithCancel(ctx)
	defer func() { stop(); ctrl.Shutdown() }()
	if err := ctrl.Start(runCtx); err != nil {
		t.Fatal(err)
	}

	res := c.ResourceV1()
	n := func(s string) string { return p + "-" + s }
	create := func(o any) func() error {
		return func() error {
			var err error
			switch o := o.(type) {
			case *v1.Node:
				_, err = c.CoreV1().Nodes().Create(ctx, o, metav1.CreateOptions{})
			case *resourceapi.ResourceSlice:
				_, err = res.ResourceSlices().Create(ctx, o, metav1.CreateOptions{})
			case *resourceapi.DeviceClass:
				_, err = res.DeviceClasses().Create(ctx, o, metav1.CreateOptions{})
			case *resourceapi.DeviceTaintRule:
				_, err = res.DeviceTaintRules().Create(ctx, o, metav1.CreateOptions{})
			case *resourceapi.ResourceClaim:
				_, err = res.ResourceClaims(ns).Create(ctx, o, metav1.CreateOptions{})
			case *resourceapi.ResourceClaimTemplate:
				_, err = res.ResourceClaimTemplates(ns).Create(ctx, o, metav1.CreateOptions{})
			case *v1.Pod:
				_, err = c.CoreV1().Pods(ns).Create(ctx, o, metav1.CreateOptions{})
			default:
				err = fmt.Errorf("create %T: not a kind of the test", o)
			}
			return err
		}
	}
	allocated := func(name, className string, count int64, a *resourceapi.AllocationResult) func() error {
		return func() error {
			cl, err := res.ResourceClaims(ns).Create(ctx, claim(ns, name, className, count, false), metav1.CreateOptions{})
			if err != nil {
				return err
			}
			cl.Status.Allocation = a
			_, err = res.ResourceClaims(ns).UpdateStatus(ctx, cl, metav1.UpdateOptions{})
			return err
		}
	}
	del := func(kind, name string) func() error {
		return func() error {
			o := metav1.DeleteOptions{}
			switch kind {
			case "node":
				return c.CoreV1().Nodes().Delete(ctx, name, o)
			case "slice":
				return res.ResourceSlices().Delete(ctx, name, o)
			case "class":
				return res.DeviceClasses().Delete(ctx, name, o)
			case "rule":
				return res.DeviceTaintRules().Delete(ctx, name, o)
			case "claim":
				return res.ResourceClaims(ns).Delete(ctx, name, o)
			case "template":
				return res.ResourceClaimTemplates(ns).Delete(ctx, name, o)
			}
			return fmt.Errorf("delete %s: not a kind of the test", kind)
		}
	}
	updateSlice := func(s *resourceapi.ResourceSlice) func() error {
		return func() error {
			cur, err := res.ResourceSlices().Get(ctx, s.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Spec = s.Spec
			_, err = res.ResourceSlices().Update(ctx, cur, metav1.UpdateOptions{})
			return err
		}
	}
	taintNode := func(name string) func() error {
		return func() error {
			cur, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Spec.Taints = append(cur.Spec.Taints, v1.Taint{Key: "live.example/maintenance", Effect: v1.TaintEffectNoSchedule})
			_, err = c.CoreV1().Nodes().Update(ctx, cur, metav1.UpdateOptions{})
			return err
		}
	}
	then := func(fs ...func() error) func() error {
		return func() error {
			for _, f := range fs {
				if err := f(); err != nil {
					return err
				}
			}
			return nil
		}
	}
	run := func(phase string, ops []func() error) {
		t.Helper()
		rng.Shuffle(len(ops), func(i, j int) { ops[i], ops[j] = ops[j], ops[i] })
		for i, op := range ops {
			if err := op(); err != nil {
				t.Fatalf("%s: operation %d: %v", phase, i, err)
			}
		}
	}
	check := func(phase string) {
		t.Helper()
		var last string
		eventually(t, 45*time.Second, phase+": the fed Cluster answers as the listed one", func() error {
			want, err := loadedCluster(ctx, c)
			if err != nil {
				return err
			}
			podList, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			got, exp := answers(ctx, ctrl.Cluster(), podList.Items, p), answers(ctx, want, podList.Items, p)
			if got != exp {
				last = got
				return fmt.Errorf("fed:\n%s\nlisted:\n%s", got, exp)
			}
			last = got
			return nil
		})
		t.Logf("%s: equal answers:\n%s", phase, last)
	}

	run("create", []func() error{
		create(node(n("n1"))), create(node(n("n2"))), create(node(n("n3"))),
		create(slice(n("s1"), n("n1"), 1, dev{"d0", "a100", 0}, dev{"d1", "a100", 1}, dev{"d2", "t4", 0})),
		create(slice(n("s2"), n("n2"), 1, dev{"d0", "a100", 0}, dev{"d1", "a100", 0}, dev{"d2", "t4", 1})),
		create(slice(n("s3"), n("n3"), 1, dev{"d0", "t4", 0})),
		create(class(n("a100"), "a100")), create(class(n("t4"), "t4")), create(class(n("any"), "")),
		create(taintRule(n("r1"), n("n2"), "d2")),
		allocated("held1", n("a100"), 2, allocation(n("n1"), "d0", "d1")),
		create(claim(ns, "c1", n("a100"), 1, false)), create(claim(ns, "c2", n("a100"), 2, true)), create(claim(ns, "c3", n("t4"), 1, false)),
		create(template(ns, "tpl", n("t4"), 2)),
		create(pod(ns, "pa", "c1", "", "")), create(pod(ns, "pb", "c2", "", "")), create(pod(ns, "pc", "", "tpl", "")),
		create(pod(ns, "pd", "", "", "deviceclass.resource.kubernetes.io/"+n("t4"))), create(pod(ns, "pe", "c3", "", "")),
	})
	check("create")

	b.Freeze()
	run("lost events", []func() error{
		del("slice", n("s3")), del("node", n("n3")),
		updateSlice(slice(n("s1"), n("n1"), 2, dev{"d0", "a100", 0}, dev{"d1", "a100", 1}, dev{"d2", "a100", 1})),
		del("rule", n("r1")),
		then(del("class", n("t4")), create(class(n("t4"), ""))),
		del("claim", "held1"),
		create(node(n("n4"))), create(slice(n("s4"), n("n4"), 1, dev{"d0", "a100", 3}, dev{"d1", "a100", 3})),
		then(create(claim(ns, "c4", n("any"), 3, false)), create(pod(ns, "pf", "c4", "", ""))),
	})
	before := tombstones.Load()
	b.Break()
	check("re-list")
	// Equal answers do not mean that every informer has listed again: with node n3 gone, slice s3 no
	// longer changes any answer, and each handler of a shared informer is delivered on its own. The
	// tombstones must come, but may come after the answers agree.
	eventually(t, 45*time.Second, "re-list delivers the objects deleted meanwhile as tombstones", func() error {
		if got := tombstones.Load() - before; got < 3 {
			return fmt.Errorf("%d tombstones, want at least 3 (slice %s, node %s, claim held1)", got, n("s3"), n("n3"))
		}
		return nil
	})

	run("watch again", []func() error{
		create(taintRule(n("r1"), n("n4"), "d0")),
		allocated("held2", n("a100"), 1, allocation(n("n4"), "d1")),
		del("claim", "c1"), del("template", "tpl"), taintNode(n("n1")),
	})
	check("watch again")
}

// cleanupClusterObjects deletes, when the test ends, the cluster-scoped objects whose names start
// with prefix (a namespace's objects stay with the namespace; no controller removes them here).
func cleanupClusterObjects(t *testing.T, c kubernetes.Interface, prefix string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		o := metav1.DeleteOptions{}
		res := c.ResourceV1()
		if l, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil {
			for _, x := range l.Items {
				if strings.HasPrefix(x.Name, prefix) {
					_ = c.CoreV1().Nodes().Delete(ctx, x.Name, o)
				}
			}
		}
		if l, err := res.ResourceSlices().List(ctx, metav1.ListOptions{}); err == nil {
			for _, x := range l.Items {
				if strings.HasPrefix(x.Name, prefix) {
					_ = res.ResourceSlices().Delete(ctx, x.Name, o)
				}
			}
		}
		if l, err := res.DeviceClasses().List(ctx, metav1.ListOptions{}); err == nil {
			for _, x := range l.Items {
				if strings.HasPrefix(x.Name, prefix) {
					_ = res.DeviceClasses().Delete(ctx, x.Name, o)
				}
			}
		}
		if l, err := res.DeviceTaintRules().List(ctx, metav1.ListOptions{}); err == nil {
			for _, x := range l.Items {
				if strings.HasPrefix(x.Name, prefix) {
					_ = res.DeviceTaintRules().Delete(ctx, x.Name, o)
				}
			}
		}
	})
}

// loadedCluster is a Cluster loaded from a list of every object the Feed reads.
func loadedCluster(ctx context.Context, c kubernetes.Interface) (*pods.Cluster, error) {
	snap := allocator.NewSnapshot(allocator.Options{TrustAPIServer: true})
	cl := pods.New(snap, pods.Options{NameSuffix: fixedSuffix})
	res := c.ResourceV1()
	o := metav1.ListOptions{}
	slices, err := res.ResourceSlices().List(ctx, o)
	if err != nil {
		return nil, err
	}
	for i := range slices.Items {
		if err := snap.AddOrUpdateSlice(&slices.Items[i]); err != nil {
			return nil, err
		}
	}
	classes, err := res.DeviceClasses().List(ctx, o)
	if err != nil {
		return nil, err
	}
	for i := range classes.Items {
		if err := snap.AddOrUpdateClass(&classes.Items[i]); err != nil {
			return nil, err
		}
	}
	claims, err := res.ResourceClaims("").List(ctx, o)
	if err != nil {
		return nil, err
	}
	for i := range claims.Items {
		if err := snap.AddOrUpdateClaim(&claims.Items[i]); err != nil {
			return nil, err
		}
	}
	rules, err := res.DeviceTaintRules().List(ctx, o)
	if err != nil {
		return nil, err
	}
	for i := range rules.Items {
		if err := snap.AddOrUpdateTaintRule(&rules.Items[i]); err != nil {
			return nil, err
		}
	}
	nodes, err := c.CoreV1().Nodes().List(ctx, o)
	if err != nil {
		return nil, err
	}
	for i := range nodes.Items {
		if err := snap.AddOrUpdateNode(&nodes.Items[i]); err != nil {
			return nil, err
		}
	}
	templates, err := res.ResourceClaimTemplates("").List(ctx, o)
	if err != nil {
		return nil, err
	}
	for i := range templates.Items {
		if err := cl.AddOrUpdateTemplate(&templates.Items[i]); err != nil {
			return nil, err
		}
	}
	return cl, nil
}

// answers is what the Cluster holds of the test's objects (prefix) and says of every pod: its
// explanation, the nodes where it fits, and where Place puts it.
func answers(ctx context.Context, c *pods.Cluster, podList []v1.Pod, prefix string) string {
	var b strings.Builder
	snap := c.Snapshot()
	for _, nd := range snap.Nodes() {
		if strings.HasPrefix(nd.Name, prefix) {
			fmt.Fprintf(&b, "node %s@%s\n", nd.Name, nd.ResourceVersion)
		}
	}
	for _, cl := range snap.Classes() {
		if strings.HasPrefix(cl.Name, prefix) {
			fmt.Fprintf(&b, "class %s@%s\n", cl.Name, cl.ResourceVersion)
		}
	}
	for i := range podList {
		pd := &podList[i]
		for _, cl := range snap.Claims(pd.Namespace) {
			if i == 0 {
				fmt.Fprintf(&b, "claim %s@%s\n", cl.Name, cl.ResourceVersion)
			}
		}
		e, err := c.Explain(ctx, pd)
		if err != nil {
			fmt.Fprintf(&b, "pod %s: explain: %v\n", pd.Name, err)
		} else {
			var fits []string
			for _, ne := range e.Nodes {
				if strings.HasPrefix(ne.Node, prefix) && ne.Fits {
					fits = append(fits, ne.Node)
				}
			}
			fmt.Fprintf(&b, "pod %s: fits on %v: %s\n", pd.Name, fits, e)
		}
		pl, err := c.Place(ctx, pd)
		if err != nil {
			fmt.Fprintf(&b, "pod %s: place: %v\n", pd.Name, err)
		} else {
			fmt.Fprintf(&b, "pod %s: place on %s\n", pd.Name, pl.Node)
		}
	}
	return b.String()
}
