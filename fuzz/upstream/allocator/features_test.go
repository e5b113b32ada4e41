package allocator_test

import (
	"sort"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"

	"github.com/dralloc/dralloc/allocator/verify"
	"github.com/dralloc/dralloc/fuzz"
)

// tags names the features a generated case exercises, for counting cases per feature.
func tags(c *fuzz.Cluster) []string {
	set := map[string]bool{}
	newest := map[string]int64{}
	for _, s := range c.Slices {
		k := s.Spec.Driver + "/" + s.Spec.Pool.Name
		newest[k] = max(newest[k], s.Spec.Pool.Generation)
	}
	count := map[string]int{}
	want := map[string]int64{}
	for _, s := range c.Slices {
		k := s.Spec.Driver + "/" + s.Spec.Pool.Name
		if s.Spec.Pool.Generation < newest[k] {
			set["obsoleteSlice"] = true
			continue
		}
		count[k]++
		want[k] = s.Spec.Pool.ResourceSliceCount
		if len(s.Spec.SharedCounters) > 0 {
			set["partitionable"] = true
			for _, cs := range s.Spec.SharedCounters {
				if strings.HasPrefix(cs.Name, "mig-") {
					set["mig"] = true
				}
			}
		}
		if s.Spec.NodeSelector != nil || ptr.Deref(s.Spec.AllNodes, false) {
			set["networkAttached"] = true
		}
		if len(s.Spec.SkipNodeOperations) > 0 {
			set["skipNodeOperations"] = true
		}
		if ptr.Deref(s.Spec.PerDeviceNodeSelection, false) {
			set["perDeviceNodeSelection"] = true
		}
		for _, d := range s.Spec.Devices {
			for _, cc := range d.ConsumesCounters {
				if len(cc.CompatibilityGroups) > 0 {
					set["compatibilityGroups"] = true
				}
			}
			if len(d.Taints) > 0 {
				set["taints"] = true
			}
			if len(d.BindingConditions) > 0 {
				set["bindingConditions"] = true
			}
			if ptr.Deref(d.AllowMultipleAllocations, false) {
				set["consumableCapacity"] = true
			}
			for _, a := range d.Attributes {
				if len(a.IntValues) > 0 {
					set["listAttributes"] = true
				}
			}
		}
	}
	for k, n := range count {
		if int64(n) != want[k] {
			set["incompletePool"] = true
		}
		if n > 1 {
			set["multiSlicePool"] = true
		}
	}
	if len(c.TaintRules) > 0 {
		set["taintRules"] = true
	}
	if len(c.Allocated) > 0 {
		set["allocatedState"] = true
	}
	for _, cl := range c.Claims {
		d := cl.Spec.Devices
		if len(d.Constraints) > 0 {
			set["constraints"] = true
		}
		for _, con := range d.Constraints {
			if con.MatchAttribute != nil {
				set["matchAttribute"] = true
			}
			if con.DistinctAttribute != nil {
				set["distinctAttribute"] = true
			}
		}
		if len(d.Config) > 0 {
			set["claimConfig"] = true
		}
		for _, r := range d.Requests {
			if len(r.FirstAvailable) > 0 {
				set["firstAvailable"] = true
			}
			var exact []resourceapi.ExactDeviceRequest
			if r.Exactly != nil {
				exact = append(exact, *r.Exactly)
				if ptr.Deref(r.Exactly.AdminAccess, false) {
					set["adminAccess"] = true
				}
				if len(r.Exactly.DerivedAttributes) > 0 {
					set["derivedAttributes"] = true
				}
			}
			for _, s := range r.FirstAvailable {
				exact = append(exact, resourceapi.ExactDeviceRequest{AllocationMode: s.AllocationMode, Count: s.Count, Tolerations: s.Tolerations, Capacity: s.Capacity, Selectors: s.Selectors})
			}
			for _, e := range exact {
				if e.AllocationMode == resourceapi.DeviceAllocationModeAll {
					set["allocationModeAll"] = true
				}
				if e.Count > 1 {
					set["countAbove1"] = true
				}
				if e.Count > 15 {
					set["countNear32Limit"] = true
				}
				if len(e.Tolerations) > 0 {
					set["tolerations"] = true
				}
				if e.Capacity != nil {
					set["capacityRequests"] = true
					if q, ok := e.Capacity.Requests["cores"]; ok && q.MilliValue()%1000 != 0 {
						set["fractionalCapacity"] = true
					}
				}
				if len(e.Selectors) > 0 {
					set["requestSelectors"] = true
				}
			}
		}
	}
	for _, cl := range c.Classes {
		if len(cl.Spec.Config) > 0 {
			set["classConfig"] = true
		}
	}
	if len(c.Claims) > 1 {
		set["multipleClaims"] = true
	}
	if c.Gates() != verify.AllFeatures() {
		set["someGatesOff"] = true
	}
	if stableVariant(c.Gates()) {
		set["stableVariant (outcomes only)"] = true
	}
	for _, cl := range c.Claims {
		for _, r := range cl.Spec.Devices.Requests {
			if r.Exactly != nil && r.Exactly.DeviceClassName == fuzz.ClassAny {
				for _, s := range r.Exactly.Selectors {
					if strings.Contains(s.CEL.Expression, "attributes[") {
						set["celRuntimeErrors"] = true
					}
				}
			}
		}
	}
	out := []string{"all cases"}
	for k, v := range set {
		if v {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
