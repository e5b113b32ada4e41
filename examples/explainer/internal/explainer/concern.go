package explainer

import (
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// concern is which pending pods a change of a DRA object can concern.
type concern int

const (
	// concernsNone: nothing dralloc reads changed (a resync, a kubelet's heartbeat).
	concernsNone concern = iota
	// concernsUsers: only the claim's reservations or its drivers' device status changed, which
	// concern only the pods that use the claim (a full reservedFor refuses further pods; the devices
	// it holds are held as before).
	concernsUsers
	// concernsNamespace: a ResourceQuota's limits changed, which concern only the pods of its
	// namespace (the namespace is the owner its limits apply to, allocator.QuotaFromResourceQuotas).
	// They are explained again at most once per Config.Requeue, not at once: the Feed applies the
	// new quota through its own handler, which may run after this one.
	concernsNamespace
	// concernsAll: devices, allocations, classes or nodes changed; any pending pod may fit or fail
	// otherwise.
	concernsAll
)

// updated handles an informer's update of a DRA object: the pods it can concern are explained again,
// all of them or the pods of a ResourceQuota's namespace at most once per Config.Requeue, the users of
// a claim at once. In a large cluster most updates are of the first kinds (kubelets renew Node
// status, drivers write claims' device status, kube-scheduler reserves claims, kube-controller-manager
// rewrites a ResourceQuota's status.used whenever a claim of its namespace comes or goes), and
// explaining every pending pod again on each of them would cost in proportion to the cluster instead
// of the change.
func (c *Controller) updated(oldObj, newObj any) {
	switch concerns(oldObj, newObj) {
	case concernsNone:
	case concernsUsers:
		c.enqueueUsers(oldObj.(*resourceapi.ResourceClaim), newObj.(*resourceapi.ResourceClaim))
	case concernsNamespace:
		c.mu.Lock()
		c.quotaChanged[newObj.(*v1.ResourceQuota).Namespace] = struct{}{}
		c.mu.Unlock()
	default:
		c.changed.Store(true)
	}
}

// concerns classifies the update of a DRA object from oldObj to newObj.
func concerns(oldObj, newObj any) concern {
	switch n := newObj.(type) {
	case *resourceapi.ResourceClaim:
		o, ok := oldObj.(*resourceapi.ResourceClaim)
		if !ok || o == nil || n == nil || !equality.Semantic.DeepEqual(claimDecides(o), claimDecides(n)) {
			return concernsAll
		}
		if equality.Semantic.DeepEqual(o.Status.ReservedFor, n.Status.ReservedFor) && equality.Semantic.DeepEqual(o.Status.Devices, n.Status.Devices) {
			return concernsNone
		}
		// A PodGroup's reservation concerns the group's pods, which the claim does not name.
		if !podsOnly(o.Status.ReservedFor) || !podsOnly(n.Status.ReservedFor) {
			return concernsAll
		}
		return concernsUsers
	case *v1.ResourceQuota:
		o, ok := oldObj.(*v1.ResourceQuota)
		if !ok || o == nil || n == nil || o.Namespace != n.Namespace {
			return concernsAll
		}
		// The quota the explanations apply is read from spec alone (allocator.QuotaFromResourceQuotas:
		// spec.hard, and spec.scopes and spec.scopeSelector, which exclude the object), with the
		// namespace as owner; what the namespace holds comes from the claims' allocations, not from
		// status.used, which the quota controller rewrites on every claim of the namespace.
		if equality.Semantic.DeepEqual(o.Spec, n.Spec) {
			return concernsNone
		}
		return concernsNamespace
	case *v1.Node:
		o, ok := oldObj.(*v1.Node)
		if !ok || o == nil || n == nil {
			return concernsAll
		}
		if equality.Semantic.DeepEqual(withoutHeartbeats(o), withoutHeartbeats(n)) {
			return concernsNone
		}
		return concernsAll
	}
	o, ok1 := oldObj.(runtime.Object)
	n, ok2 := newObj.(runtime.Object)
	if !ok1 || !ok2 || o == nil || n == nil {
		return concernsAll
	}
	if equality.Semantic.DeepEqual(withoutVersion(o), withoutVersion(n)) {
		return concernsNone
	}
	return concernsAll
}

// claimDecision is what of a claim dralloc's decisions read, but for status.reservedFor (which pods
// hold it) and status.devices (what its drivers report), which [concerns] looks at apart. The
// annotations are read: the pods package finds the claims of extended resources and of templates by
// them.
type claimDecision struct {
	// The fields are exported for equality.Semantic, which refuses unexported ones.
	UID         types.UID
	Labels      map[string]string
	Annotations map[string]string
	Owners      []metav1.OwnerReference
	Finalizers  []string
	Deleting    *metav1.Time
	Spec        resourceapi.ResourceClaimSpec
	Allocation  *resourceapi.AllocationResult
}

func claimDecides(c *resourceapi.ResourceClaim) claimDecision {
	return claimDecision{c.UID, c.Labels, c.Annotations, c.OwnerReferences, c.Finalizers, c.DeletionTimestamp, c.Spec, c.Status.Allocation}
}

func podsOnly(refs []resourceapi.ResourceClaimConsumerReference) bool {
	for _, r := range refs {
		if r.APIGroup != "" || r.Resource != "pods" {
			return false
		}
	}
	return true
}

// withoutHeartbeats is a copy of the node without what changes when only time passes: the times a
// kubelet last reported each condition (as it does every few minutes whether or not anything
// changed), and the object's version.
func withoutHeartbeats(n *v1.Node) *v1.Node {
	n = n.DeepCopy()
	n.ResourceVersion, n.ManagedFields = "", nil
	for i := range n.Status.Conditions {
		n.Status.Conditions[i].LastHeartbeatTime = metav1.Time{}
	}
	return n
}

// withoutVersion is a copy of obj without its resourceVersion and managed fields.
func withoutVersion(obj runtime.Object) runtime.Object {
	obj = obj.DeepCopyObject()
	if m, err := meta.Accessor(obj); err == nil {
		m.SetResourceVersion("")
		m.SetManagedFields(nil)
	}
	return obj
}

// enqueueUsers queues the pending pods that use the claim before or after the change: by name in
// spec.resourceClaims or status.resourceClaimStatuses, as its controlling owner (a pod's generated
// claim), or as a consumer in status.reservedFor.
func (c *Controller) enqueueUsers(oldClaim, newClaim *resourceapi.ResourceClaim) {
	uids := map[types.UID]bool{}
	for _, cl := range []*resourceapi.ResourceClaim{oldClaim, newClaim} {
		if uid := controllerOf(cl); uid != "" {
			uids[uid] = true
		}
		for _, r := range cl.Status.ReservedFor {
			uids[r.UID] = true
		}
	}
	list, err := c.podLister.Pods(newClaim.Namespace).List(labels.Everything())
	if err != nil {
		c.changed.Store(true)
		return
	}
	for _, p := range list {
		if Unschedulable(p) && (uids[p.UID] || names(p, newClaim.Name)) {
			c.queue.Add(podKey(p))
		}
	}
}

// enqueueNamespace queues the pending pods of a namespace.
func (c *Controller) enqueueNamespace(namespace string) {
	list, err := c.podLister.Pods(namespace).List(labels.Everything())
	if err != nil {
		c.changed.Store(true)
		return
	}
	for _, p := range list {
		if Unschedulable(p) {
			c.queue.Add(podKey(p))
		}
	}
}

func controllerOf(claim *resourceapi.ResourceClaim) types.UID {
	if ref := metav1.GetControllerOf(claim); ref != nil {
		return ref.UID
	}
	return ""
}

// names reports whether the pod names the claim in its spec or in the claims generated for it.
func names(p *v1.Pod, claim string) bool {
	for _, pc := range p.Spec.ResourceClaims {
		if pc.ResourceClaimName != nil && *pc.ResourceClaimName == claim {
			return true
		}
	}
	for _, s := range p.Status.ResourceClaimStatuses {
		if s.ResourceClaimName != nil && *s.ResourceClaimName == claim {
			return true
		}
	}
	return false
}
