package scaling

import (
	"cmp"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/capacity"
)

// PodCharge is what one running pod holds.
type PodCharge struct {
	// Pod is "<namespace>/<name>"; Owner its controlling owner as "<Kind>/<name>", or "Pod/<name>".
	Pod, Owner string
	// Charge is the exact charge of the allocated claims reserved for the pod (its own, those from
	// templates, shared ones and the claim of its DRA extended resources); the MIG devices' memory and
	// multiprocessors are in Charge.Capacity, partitionable devices' counters in Charge.Counters. A
	// claim shared by several pods is charged in full to each of them.
	Charge capacity.Charge
	// Devices is the number of devices over all classes.
	Devices int64
}

// OwnerCharge is what the pods of one owner hold together.
type OwnerCharge struct {
	Namespace, Owner string
	Pods             int
	Charge           capacity.Charge
	Devices          int64
}

// Chargeback is the devices held per pod and per owner.
type Chargeback struct {
	// Pods are in the order given; Owners sorted by namespace and owner.
	Pods   []PodCharge
	Owners []OwnerCharge
}

// NewChargeback charges the allocated claims of the cluster to the running pods that reserve them
// (status.reservedFor names the pod's UID) and sums them per owner. inv ([NewInventory]) supplies the
// capacities and counters of devices allocated whole; it may be nil.
func NewChargeback(c *pods.Cluster, inv *capacity.Inventory, running []*v1.Pod) (*Chargeback, error) {
	reserved := reservations(c)
	out := &Chargeback{}
	owners := map[[2]string]*OwnerCharge{}
	for _, pod := range running {
		pc := PodCharge{Pod: pod.Namespace + "/" + pod.Name, Owner: owner(pod)}
		for _, claim := range reserved[pod.UID] {
			ch, err := capacity.ChargeAllocation(claim, inv)
			if err != nil {
				return nil, err
			}
			pc.Charge = sum(pc.Charge, ch)
		}
		pc.Charge = sum(pc.Charge, capacity.Charge{}) // non-nil maps for pods without claims
		pc.Devices = devices(pc.Charge)
		out.Pods = append(out.Pods, pc)
		k := [2]string{pod.Namespace, pc.Owner}
		oc := owners[k]
		if oc == nil {
			oc = &OwnerCharge{Namespace: k[0], Owner: k[1]}
			owners[k] = oc
		}
		oc.Pods++
		oc.Charge = sum(oc.Charge, pc.Charge)
		oc.Devices += pc.Devices
	}
	for _, oc := range owners {
		out.Owners = append(out.Owners, *oc)
	}
	slices.SortFunc(out.Owners, func(x, y OwnerCharge) int {
		return cmp.Or(strings.Compare(x.Namespace, y.Namespace), strings.Compare(x.Owner, y.Owner))
	})
	return out, nil
}

// reservations indexes the allocated claims by the UIDs of the pods they are reserved for.
func reservations(c *pods.Cluster) map[types.UID][]*resourceapi.ResourceClaim {
	out := map[types.UID][]*resourceapi.ResourceClaim{}
	for _, claim := range c.Snapshot().Claims("") {
		if claim.Status.Allocation == nil {
			continue
		}
		for _, r := range claim.Status.ReservedFor {
			if r.Resource == "pods" && r.APIGroup == "" {
				out[r.UID] = append(out[r.UID], claim)
			}
		}
	}
	return out
}

func owner(pod *v1.Pod) string {
	for _, ref := range pod.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			return ref.Kind + "/" + ref.Name
		}
	}
	return "Pod/" + pod.Name
}

func devices(c capacity.Charge) int64 {
	var n int64
	for _, v := range c.Devices {
		n += v
	}
	return n
}

// AuditEntry compares, for one pod, the devices it gets with what its container resources say.
type AuditEntry struct {
	// Pod is "<namespace>/<name>".
	Pod string
	// ClaimDevices are the devices the pod gets through ResourceClaims (its own, from templates, shared):
	// allocated ones for a pod whose claims are allocated and reserved, the worst case for a pending
	// pod. Container resources do not show them: a container names a claim, not a count.
	ClaimDevices int64
	// ExtendedDevices are the devices it gets through extended resources backed by DRA; container
	// resources show them as requests of the extended resource.
	ExtendedDevices int64
	// Declared are the pod's extended-resource requests in its container resources (names with a
	// domain other than kubernetes.io), as component-helpers' PodRequests sums them, sorted by name.
	Declared []Declared
	// Missed reports that a policy reading only container resources does not see all the pod's
	// devices: it gets devices through claims.
	Missed bool
}

// Declared is one extended resource a pod's containers request.
type Declared struct {
	Resource v1.ResourceName
	Count    int64
}

// Audit lists, for each pod, the devices it gets through claims and through extended resources against
// what its container resources declare, so that a policy that reads only container resources (an
// admission webhook counting nvidia.com/gpu, a quota on requests.nvidia.com/gpu) can be shown the pods
// it misses. Pods whose allocated claims are reserved for them are counted exactly; the others as
// pending, worst case ([Charges]).
func Audit(c *pods.Cluster, inv *capacity.Inventory, podList []*v1.Pod) ([]AuditEntry, error) {
	reserved := reservations(c)
	features := c.Snapshot().Features()
	opts := capacity.Options{Features: &features}
	out := make([]AuditEntry, 0, len(podList))
	for _, pod := range podList {
		e := AuditEntry{Pod: pod.Namespace + "/" + pod.Name}
		ext := ""
		if s := pod.Status.ExtendedResourceClaimStatus; s != nil {
			ext = s.ResourceClaimName
		}
		if claims := reserved[pod.UID]; len(claims) > 0 {
			for _, claim := range claims {
				ch, err := capacity.ChargeAllocation(claim, inv)
				if err != nil {
					return nil, err
				}
				if claim.Name == ext {
					e.ExtendedDevices += devices(ch)
				} else {
					e.ClaimDevices += devices(ch)
				}
			}
		} else {
			pcs, err := c.PodClaims(pod)
			if err != nil {
				return nil, err
			}
			for _, pc := range pcs {
				ch, err := capacity.ChargeClaim(pc.Claim.Spec, inv, opts)
				if err != nil {
					return nil, err
				}
				e.ClaimDevices += devices(ch)
			}
			if spec := extendedSpec(c.Snapshot().Classes(), pod); len(spec.Devices.Requests) > 0 {
				ch, err := capacity.ChargeClaim(spec, inv, opts)
				if err != nil {
					return nil, err
				}
				e.ExtendedDevices = devices(ch)
			}
		}
		for name, q := range resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}) {
			if extendedResource(name) {
				e.Declared = append(e.Declared, Declared{Resource: name, Count: q.Value()})
			}
		}
		slices.SortFunc(e.Declared, func(x, y Declared) int { return strings.Compare(string(x.Resource), string(y.Resource)) })
		e.Missed = e.ClaimDevices > 0
		out = append(out, e)
	}
	return out, nil
}

// extendedResource reports a resource name with a domain that is not kubernetes.io's, as Kubernetes
// defines extended resources, or the implicit name of a DeviceClass.
func extendedResource(name v1.ResourceName) bool {
	if strings.HasPrefix(string(name), resourceapi.ResourceDeviceClassPrefix) {
		return true
	}
	domain, _, ok := strings.Cut(string(name), "/")
	return ok && domain != "kubernetes.io" && !strings.HasSuffix(domain, ".kubernetes.io") && !strings.HasPrefix(string(name), "requests.")
}
