package scheduler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/allocator/verify"
)

// knownDifferences are the ways allocator/pods is known to differ from kube-scheduler and
// kube-controller-manager v1.37.2, each with its reason. A difference explained by an entry is logged, not
// failed; the summary says which entries did not occur, so that an entry is removed once dralloc agrees.
var knownDifferences = map[string]string{
	// allocator/pods writes generated claims' owner references as the resourceclaim controller of v1.37.2
	// does (controller: true, no blockOwnerDeletion), and filters nodes by cpu, memory and a device plugin's
	// amount of an extended resource as NodeResourcesFit does: those differences are gone. One is not
	// understood yet: in 2 of about 10 runs of the whole package on a loaded 2-core machine (never in
	// isolation), kube-scheduler left a pod whose claim tolerates a DeviceTaintRule's NoSchedule taint
	// pending ("cannot allocate all claims") while the tainted device was free, where dralloc places it
	// on that device. The scenario marks it, so that the run reports it when it happens.
	"deviceTaintRuleToleration": "kube-scheduler intermittently leaves a pod pending whose claim tolerates a DeviceTaintRule's NoSchedule taint (cause not found)",
}

// rendered is v as JSON, for messages.
func rendered(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(b)
}

// randomSuffix is the length of the random suffix the API server appends to a generateName.
const randomSuffix = 5

// sameGeneratedName reports whether two names were generated from the same generateName.
func sameGeneratedName(a, b string) bool {
	return len(a) == len(b) && len(a) > randomSuffix && a[:len(a)-randomSuffix] == b[:len(b)-randomSuffix]
}

func emptyIfNil[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return map[K]V{}
	}
	return m
}

// compareClaim compares the shape of dralloc's placed claim with the control plane's.
func compareClaim(pc pods.PlacedClaim, api *resourceapi.ResourceClaim) []difference {
	dr := pc.Claim
	var diffs []difference
	add := func(field string, d, a any, known string) {
		diffs = append(diffs, difference{category: "claim", known: known,
			detail: fmt.Sprintf("claim %s: %s: dralloc %s, control plane %s", api.Name, field, rendered(d), rendered(a))})
	}
	if pc.Generated && !sameGeneratedName(dr.Name, api.Name) {
		add("metadata.name", dr.Name, api.Name, "")
	}
	if !apiequality.Semantic.DeepEqual(emptyIfNil(dr.Labels), emptyIfNil(api.Labels)) {
		add("metadata.labels", dr.Labels, api.Labels, "")
	}
	if !apiequality.Semantic.DeepEqual(emptyIfNil(dr.Annotations), emptyIfNil(api.Annotations)) {
		add("metadata.annotations", dr.Annotations, api.Annotations, "")
	}
	if !apiequality.Semantic.DeepEqual(dr.OwnerReferences, api.OwnerReferences) {
		add("metadata.ownerReferences", dr.OwnerReferences, api.OwnerReferences, "")
	}
	if df, af := slices.Sorted(slices.Values(dr.Finalizers)), slices.Sorted(slices.Values(api.Finalizers)); !slices.Equal(df, af) {
		add("metadata.finalizers", df, af, "")
	}
	if !apiequality.Semantic.DeepEqual(dr.Spec, api.Spec) {
		add("spec", dr.Spec, api.Spec, "")
	}
	if !apiequality.Semantic.DeepEqual(dr.Status.ReservedFor, api.Status.ReservedFor) {
		add("status.reservedFor", dr.Status.ReservedFor, api.Status.ReservedFor, "")
	}
	da, aa := dr.Status.Allocation, api.Status.Allocation
	switch {
	case (da == nil) != (aa == nil):
		add("status.allocation", da, aa, "")
	case da != nil:
		if !apiequality.Semantic.DeepEqual(da.NodeSelector, aa.NodeSelector) {
			add("status.allocation.nodeSelector", da.NodeSelector, aa.NodeSelector, "")
		}
		if !apiequality.Semantic.DeepEqual(da.Devices.Config, aa.Devices.Config) {
			add("status.allocation.devices.config", da.Devices.Config, aa.Devices.Config, "")
		}
	}
	return diffs
}

// compareDevices compares the devices dralloc allocated for a pod's claims (dr) with the devices the
// scheduler allocated for the same claims (api, in the same order). same reports identical devices (share
// IDs aside: both are random); either way both allocations must pass allocator/verify against the state
// before the pod, all the API server's claims but api.
func compareDevices(ctx context.Context, st *state, node string, all []resourceapi.ResourceClaim, dr, api []*resourceapi.ResourceClaim) (bool, []difference) {
	same := true
	for i := range dr {
		if !sameResults(dr[i].Status.Allocation, api[i].Status.Allocation) {
			same = false
		}
	}
	var before []*resourceapi.ResourceClaim
	for i := range all {
		if !slices.ContainsFunc(api, func(c *resourceapi.ResourceClaim) bool { return c.Name == all[i].Name }) {
			before = append(before, &all[i])
		}
	}
	features := verify.AllFeatures()
	in := verify.Input{Slices: st.slices, Classes: st.classes, Claims: before, TaintRules: st.rules, Node: st.nodes[node], Features: &features}
	var diffs []difference
	for _, who := range []struct {
		name   string
		claims []*resourceapi.ResourceClaim
	}{{"dralloc", dr}, {"kube-scheduler", api}} {
		claims := make([]*resourceapi.ResourceClaim, len(who.claims))
		results := make([]resourceapi.AllocationResult, len(who.claims))
		for i, c := range who.claims {
			claims[i] = c.DeepCopy()
			claims[i].Status = resourceapi.ResourceClaimStatus{}
			results[i] = *c.Status.Allocation
		}
		violations, err := verify.Check(ctx, in, claims, results)
		switch {
		case err != nil:
			diffs = append(diffs, difference{category: "devices", detail: fmt.Sprintf("verify %s's devices: %v", who.name, err)})
		case len(violations) > 0:
			var vs []string
			for _, v := range violations {
				vs = append(vs, v.String())
			}
			diffs = append(diffs, difference{category: "devices", detail: fmt.Sprintf("%s's devices fail allocator/verify: %s", who.name, strings.Join(vs, "; "))})
		}
	}
	if !same && len(diffs) > 0 {
		for i := range dr {
			diffs = append(diffs, difference{category: "devices", detail: fmt.Sprintf("claim %s: dralloc %s, kube-scheduler %s",
				api[i].Name, rendered(dr[i].Status.Allocation.Devices.Results), rendered(api[i].Status.Allocation.Devices.Results))})
		}
	}
	return same, diffs
}

// sameResults compares the devices of two allocations, share IDs aside.
func sameResults(a, b *resourceapi.AllocationResult) bool {
	if a == nil || b == nil {
		return a == b
	}
	strip := func(rs []resourceapi.DeviceRequestAllocationResult) []resourceapi.DeviceRequestAllocationResult {
		out := make([]resourceapi.DeviceRequestAllocationResult, len(rs))
		for i := range rs {
			out[i] = *rs[i].DeepCopy()
			out[i].ShareID = nil
		}
		return out
	}
	return apiequality.Semantic.DeepEqual(strip(a.Devices.Results), strip(b.Devices.Results))
}

// comparePodStatus compares the pod status dralloc would write with the control plane's, dralloc's
// generated claim names translated by names.
func comparePodStatus(p *pods.Placement, apiPod *v1.Pod, names map[string]string) []difference {
	var diffs []difference
	statuses := make([]v1.PodResourceClaimStatus, 0, len(p.ResourceClaimStatuses))
	for _, s := range p.ResourceClaimStatuses {
		s = *s.DeepCopy()
		if s.ResourceClaimName != nil {
			n := names[*s.ResourceClaimName]
			s.ResourceClaimName = &n
		}
		statuses = append(statuses, s)
	}
	byName := func(a, b v1.PodResourceClaimStatus) int { return strings.Compare(a.Name, b.Name) }
	api := slices.Clone(apiPod.Status.ResourceClaimStatuses)
	slices.SortFunc(statuses, byName)
	slices.SortFunc(api, byName)
	if !apiequality.Semantic.DeepEqual(statuses, api) && (len(statuses) > 0 || len(api) > 0) {
		diffs = append(diffs, difference{category: "pod status",
			detail: fmt.Sprintf("status.resourceClaimStatuses: dralloc %s, control plane %s", rendered(statuses), rendered(api))})
	}
	ext := p.ExtendedResourceClaimStatus.DeepCopy()
	if ext != nil {
		ext.ResourceClaimName = names[ext.ResourceClaimName]
	}
	if !apiequality.Semantic.DeepEqual(ext, apiPod.Status.ExtendedResourceClaimStatus) {
		diffs = append(diffs, difference{category: "pod status",
			detail: fmt.Sprintf("status.extendedResourceClaimStatus: dralloc %s, control plane %s", rendered(ext), rendered(apiPod.Status.ExtendedResourceClaimStatus))})
	}
	return diffs
}
