package explainer

// apiCall is one kind of request the explainer makes to the API server: the verb on a resource of a
// group (a subresource as "pods/status"). The deploy folder's roles must grant exactly these, no more
// (deploy_test.go compares them), and the fake clientset's record of a whole controller run must hold
// no other.
type apiCall struct {
	group, resource, verb string
	// scope says who makes the call and so which role grants it.
	scope callScope
}

type callScope int

const (
	// always: every replica (the base ClusterRole).
	always callScope = iota
	// withCondition: only with RecorderOptions.Condition (--pod-condition), granted by the
	// overlay that enables it.
	withCondition
	// inLeaseNamespace: leader election, on the Lease in its own namespace (a Role).
	inLeaseNamespace
	// withQuota: only with Config.EnforceQuota (--enforce-quota), granted by the overlay that
	// enables it.
	withQuota
)

// apiCalls lists every request the explainer's code makes, by the code that makes it.
var apiCalls = []apiCall{
	// NewController's informers: list, then watch.
	{"resource.k8s.io", "resourceslices", "list", always}, {"resource.k8s.io", "resourceslices", "watch", always},
	{"resource.k8s.io", "deviceclasses", "list", always}, {"resource.k8s.io", "deviceclasses", "watch", always},
	{"resource.k8s.io", "resourceclaims", "list", always}, {"resource.k8s.io", "resourceclaims", "watch", always},
	{"resource.k8s.io", "resourceclaimtemplates", "list", always}, {"resource.k8s.io", "resourceclaimtemplates", "watch", always},
	{"resource.k8s.io", "devicetaintrules", "list", always}, {"resource.k8s.io", "devicetaintrules", "watch", always},
	{"scheduling.k8s.io", "podgroups", "list", always}, {"scheduling.k8s.io", "podgroups", "watch", always},
	{"", "nodes", "list", always}, {"", "nodes", "watch", always},
	{"", "pods", "list", always}, {"", "pods", "watch", always},
	{"", "resourcequotas", "list", withQuota}, {"", "resourcequotas", "watch", withQuota},
	// Recorder.writeEvent creates; Recorder.lastEvent lists a pod's events (a new leader).
	{"", "events", "create", always}, {"", "events", "list", always},
	// Recorder.writeCondition patches; Recorder.Resolve reads the pod, then patches.
	{"", "pods", "get", withCondition}, {"", "pods/status", "patch", withCondition},
	// client-go's Lease lock (resourcelock.LeaseLock): get, create when absent, update to renew.
	{"coordination.k8s.io", "leases", "get", inLeaseNamespace}, {"coordination.k8s.io", "leases", "create", inLeaseNamespace},
	{"coordination.k8s.io", "leases", "update", inLeaseNamespace},
}
