package explainer

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"
)

// TestUpdateConcernsOnlyWhatItCan: an update of a DRA object has explained again only the pending
// pods it can concern. A resync and a kubelet's heartbeat concern none; a claim's reservations or
// device status concern only the pods that use the claim, queued at once; a ResourceQuota's status
// (what kube-controller-manager counts as used) concerns none, its limits only the pods of its
// namespace, queued at the next Requeue; a change of an allocation, of a slice or of a node's labels concerns every
// pending pod, explained again at the next Requeue.
func TestUpdateConcernsOnlyWhatItCan(t *testing.T) {
	const ns = "team"
	user := pod(ns, "user", "shared", "", "")
	generated := pod(ns, "generated", "", "tmpl", "")
	generated.UID = "uid-generated"
	generated.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: ptr.To("generated-gpu-abc")}}
	other := pod(ns, "other", "unrelated", "", "")
	elsewhere := pod("elsewhere", "user", "shared", "", "")
	var objs []runtime.Object
	for _, p := range []*v1.Pod{user, generated, other, elsewhere} {
		unschedulable(p)
		objs = append(objs, p)
	}
	ctrl, err := NewController(ktesting.NewLogger(t, ktesting.NewConfig()), Config{Client: fake.NewClientset(objs...)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer func() {
		cancel()
		ctrl.Shutdown()
	}()
	if err := ctrl.Start(ctx); err != nil {
		t.Fatal(err)
	}

	held := claim(ns, "shared", "gpu", 1, false)
	held.ResourceVersion = "10"
	held.Status.Allocation = allocation("node-a", "gpu-0")
	held.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: "bound", UID: "uid-bound"}}
	change := func(edit func(c *resourceapi.ResourceClaim)) *resourceapi.ResourceClaim {
		c := held.DeepCopy()
		c.ResourceVersion = "11"
		edit(c)
		return c
	}
	gen := held.DeepCopy()
	gen.Name = "generated-gpu-abc"
	gen.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "generated", UID: generated.UID, Controller: ptr.To(true)}}
	heartbeat := node("node-a")
	heartbeat.ResourceVersion = "5"
	heartbeat.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, LastHeartbeatTime: metav1.Unix(100, 0)}}
	s := slice("node-a-gpu", "node-a", 1, dev{"gpu-0", "a", 0})
	devices := v1.ResourceName("gpu.deviceclass.resource.k8s.io/devices")
	quota := &v1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gpus", ResourceVersion: "20"},
		Spec:   v1.ResourceQuotaSpec{Hard: v1.ResourceList{devices: resource.MustParse("2")}},
		Status: v1.ResourceQuotaStatus{Hard: v1.ResourceList{devices: resource.MustParse("2")}, Used: v1.ResourceList{devices: resource.MustParse("1")}}}
	changeQuota := func(edit func(q *v1.ResourceQuota)) *v1.ResourceQuota {
		q := quota.DeepCopy()
		q.ResourceVersion = "21"
		edit(q)
		return q
	}

	for _, tc := range []struct {
		name     string
		old, new any
		queued   []string // pods queued at once
		all      bool     // every pending pod at the next Requeue
		next     []string // else the pods queued at the next Requeue
	}{
		{name: "a resync delivers the claim held", old: held, new: held},
		{name: "a kubelet renews the node's Ready condition", old: heartbeat, new: func() *v1.Node {
			n := heartbeat.DeepCopy()
			n.ResourceVersion = "6"
			n.Status.Conditions[0].LastHeartbeatTime = metav1.Unix(400, 0)
			return n
		}()},
		{name: "a driver writes the device status of a claim", old: held, new: change(func(c *resourceapi.ResourceClaim) {
			c.Status.Devices = []resourceapi.AllocatedDeviceStatus{{Driver: testDriver, Pool: "node-a", Device: "gpu-0"}}
		}), queued: []string{"team/user"}},
		{name: "a claim reserved for one more pod", old: held, new: change(func(c *resourceapi.ResourceClaim) {
			c.Status.ReservedFor = append(c.Status.ReservedFor, resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: "next", UID: "uid-next"})
		}), queued: []string{"team/user"}},
		{name: "a pod's generated claim reserved", old: gen, new: func() *resourceapi.ResourceClaim {
			c := gen.DeepCopy()
			c.ResourceVersion = "12"
			c.Status.ReservedFor = nil
			return c
		}(), queued: []string{"team/generated"}},
		{name: "a claim reserved for a PodGroup", old: held, new: change(func(c *resourceapi.ResourceClaim) {
			c.Status.ReservedFor = append(c.Status.ReservedFor, resourceapi.ResourceClaimConsumerReference{APIGroup: "scheduling.k8s.io", Resource: "podgroups", Name: "g", UID: "uid-g"})
		}), all: true},
		{name: "a claim deallocated", old: held, new: change(func(c *resourceapi.ResourceClaim) { c.Status.Allocation = nil }), all: true},
		{name: "a claim's annotations (the pods package reads some)", old: held, new: change(func(c *resourceapi.ResourceClaim) {
			c.Annotations = map[string]string{resourceapi.ExtendedResourceClaimAnnotation: "true"}
		}), all: true},
		{name: "a node labelled", old: heartbeat, new: func() *v1.Node {
			n := heartbeat.DeepCopy()
			n.ResourceVersion = "6"
			n.Labels["zone"] = "b"
			return n
		}(), all: true},
		{name: "the quota controller counts one more device used", old: quota, new: changeQuota(func(q *v1.ResourceQuota) {
			q.Status.Used[devices] = resource.MustParse("2")
		})},
		{name: "a ResourceQuota's spec.hard written again in another form", old: quota, new: changeQuota(func(q *v1.ResourceQuota) {
			q.Spec.Hard[devices] = resource.MustParse("2000m")
		})},
		{name: "a ResourceQuota's limit raised", old: quota, new: changeQuota(func(q *v1.ResourceQuota) {
			q.Spec.Hard[devices] = resource.MustParse("3")
		}), next: []string{"team/generated", "team/other", "team/user"}},
		{name: "a ResourceQuota scoped", old: quota, new: changeQuota(func(q *v1.ResourceQuota) {
			q.Spec.Scopes = []v1.ResourceQuotaScope{v1.ResourceQuotaScopeBestEffort}
		}), next: []string{"team/generated", "team/other", "team/user"}},
		{name: "a slice resynced", old: s, new: s},
		{name: "a slice's devices change", old: s, new: slice("node-a-gpu", "node-a", 2, dev{"gpu-0", "b", 0}), all: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			drain := func() []string {
				var queued []string
				for ctrl.queue.Len() > 0 {
					key, _ := ctrl.queue.Get()
					queued = append(queued, key)
					ctrl.queue.Done(key)
					ctrl.queue.Forget(key)
				}
				slices.Sort(queued)
				return queued
			}
			// The pods listed at the start, and what the last case left for the next Requeue.
			ctrl.changed.Store(false)
			ctrl.requeueChanged()
			drain()
			ctrl.draEvents.OnUpdate(tc.old, tc.new)
			if queued := drain(); !slices.Equal(queued, tc.queued) {
				t.Errorf("queued %v at once, want %v", queued, tc.queued)
			}
			if got := ctrl.changed.Load(); got != tc.all {
				t.Errorf("every pending pod to explain again: %v, want %v", got, tc.all)
			}
			if tc.all {
				return
			}
			ctrl.requeueChanged()
			if next := drain(); !slices.Equal(next, tc.next) {
				t.Errorf("queued %v at the next Requeue, want %v", next, tc.next)
			}
		})
	}
}
