package allocator

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
)

// QuotaFromResourceQuotas returns the quota the cluster's ResourceQuota objects declare for devices, with
// each quota's namespace as the owner (Quota.Owner nil), as kube-apiserver v1.37.2's ResourceClaim quota
// evaluator reads them (k8s.io/kubernetes pkg/quota/v1/evaluator/core/resource_claims.go,
// MatchingResources): a spec.hard entry
//
//   - `<class>.deviceclass.resource.k8s.io/devices` (corev1.ResourceClaimsPerClass) limits the devices of
//     DeviceClass <class>;
//   - `requests.deviceclass.resource.kubernetes.io/<class>` (corev1.ResourceImplicitExtendedClaimsPerClass,
//     DRAExtendedResource) limits them too: the evaluator charges a claim's devices of the class under it;
//   - `requests.<name>` limits the devices of every DeviceClass of classes whose spec.extendedResourceName is
//     <name>, as the evaluator charges them under the class's extended resource.
//
// Other entries (cpu, memory, object counts) are not about devices and are skipped, as are quotas with
// spec.scopes or spec.scopeSelector: the claim evaluator matches no scope (generic.MatchesNoScopeFunc),
// so a scoped quota never counts claims. Several quotas of one namespace each apply.
//
// The answer differs from admission-time charging, and where it differs dralloc allows what admission
// might refuse, never the reverse for the same devices held:
//
//   - kube-apiserver charges a claim when it is created, whether or not it is ever allocated, and charges
//     a request for All devices 32 devices (AllocationResultsMaxSize) and a firstAvailable request its
//     largest alternative per class; dralloc charges what allocated claims hold and what the search takes,
//     so a firstAvailable claim with alternatives [1 gpu, 1 mig] is charged 1 gpu or 1 mig, not both;
//   - kube-apiserver charges requests with adminAccess; dralloc does not (they take nothing from others);
//   - `requests.<name>` also counts pods' requests of the extended resource served by a device plugin,
//     which dralloc does not see.
//
// For example, a namespace with `gpu.deviceclass.resource.k8s.io/devices: 2` holding one allocated
// whole-GPU claim may still create a claim with firstAvailable [2 gpu, 1 mig] under dralloc's answer (it
// gets a MIG device), while kube-apiserver refuses to create it: its admission charge is 2 GPUs, which
// with the one held exceeds 2. The caller that enforces admission too should create claims that it then
// places, so that both hold.
//
// A nil quota is an error naming it; classes may be nil when no quota uses `requests.<name>`.
func QuotaFromResourceQuotas(quotas []*v1.ResourceQuota, classes []*resourceapi.DeviceClass) (*Quota, error) {
	byExtended := map[string][]string{}
	for i, c := range classes {
		if c == nil {
			return nil, inputError(fmt.Sprintf("classes[%d]", i), "", errors.New("nil object"))
		}
		if n := c.Spec.ExtendedResourceName; n != nil && *n != "" {
			byExtended[*n] = append(byExtended[*n], c.Name)
		}
	}
	q := &Quota{}
	for i, rq := range quotas {
		if rq == nil {
			return nil, inputError(fmt.Sprintf("quotas[%d]", i), "", errors.New("nil object"))
		}
		if len(rq.Spec.Scopes) > 0 || rq.Spec.ScopeSelector != nil {
			continue
		}
		names := make([]string, 0, len(rq.Spec.Hard))
		for name := range rq.Spec.Hard {
			names = append(names, string(name))
		}
		slices.Sort(names) // a deterministic order of limits
		for _, name := range names {
			var classesOf []string
			switch {
			case strings.HasSuffix(name, v1.ResourceClaimsPerClass):
				classesOf = []string{strings.TrimSuffix(name, v1.ResourceClaimsPerClass)}
			case strings.HasPrefix(name, v1.ResourceImplicitExtendedClaimsPerClass):
				classesOf = []string{strings.TrimPrefix(name, v1.ResourceImplicitExtendedClaimsPerClass)}
			case strings.HasPrefix(name, v1.DefaultResourceRequestsPrefix):
				classesOf = byExtended[strings.TrimPrefix(name, v1.DefaultResourceRequestsPrefix)]
			}
			max := rq.Spec.Hard[v1.ResourceName(name)]
			for _, class := range classesOf {
				if class == "" {
					return nil, inputError("ResourceQuota "+rq.Namespace+"/"+rq.Name, "spec.hard["+name+"]", errors.New("names no DeviceClass"))
				}
				if max.Sign() < 0 {
					return nil, inputError("ResourceQuota "+rq.Namespace+"/"+rq.Name, "spec.hard["+name+"]", fmt.Errorf("must not be negative, got %s", max.String()))
				}
				q.Limits = append(q.Limits, QuotaLimit{Owner: rq.Namespace, Class: class, Kind: QuotaDevices, Max: max.DeepCopy()})
			}
		}
	}
	return q, nil
}
