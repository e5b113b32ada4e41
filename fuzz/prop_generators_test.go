package fuzz_test

import (
	"fmt"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/celenv"
	"github.com/dralloc/dralloc/fuzz"
	"github.com/dralloc/dralloc/taints"
)

// Generated objects are valid as the API server checks them, as far as the library can check: names, taints,
// tolerations and rules within the API limits, CEL that compiles as a new object's expression, pools whose slices
// agree, and requests and constraints that refer to what exists.
func TestPropGeneratedObjectsValid(t *testing.T) {
	env, err := celenv.NewEnv(celenv.Options{NewExpressions: true, Features: &celenv.Features{DRAConsumableCapacity: true, DRAListTypeAttributes: true}})
	if err != nil {
		t.Fatal(err)
	}
	rapid.Check(t, func(rt *rapid.T) {
		c := fuzz.ClusterGen(fuzz.AllOptions()).Draw(rt, "cluster")
		check := func(what string, errs field.ErrorList) {
			for _, e := range errs {
				rt.Errorf("%s: %v", what, e)
			}
		}
		compile := func(what, expr string) {
			if _, err := env.Compile(expr); err != nil {
				rt.Errorf("%s: %v", what, err)
			}
		}
		names := map[string]bool{}
		type gen struct {
			driver, pool string
			generation   int64
		}
		devices := map[gen]map[string]bool{}
		sliceCount := map[gen]int64{}
		for _, s := range c.Slices {
			if names[s.Name] {
				rt.Errorf("duplicate ResourceSlice name %s", s.Name)
			}
			names[s.Name] = true
			for _, msg := range validation.IsDNS1123Subdomain(s.Name) {
				rt.Errorf("ResourceSlice %s: metadata.name: %s", s.Name, msg)
			}
			if (len(s.Spec.Devices) > 0) == (len(s.Spec.SharedCounters) > 0) && len(s.Spec.SharedCounters) > 0 {
				rt.Errorf("ResourceSlice %s has both devices and shared counters", s.Name)
			}
			g := gen{s.Spec.Driver, s.Spec.Pool.Name, s.Spec.Pool.Generation}
			if n, ok := sliceCount[g]; ok && n != s.Spec.Pool.ResourceSliceCount {
				rt.Errorf("ResourceSlice %s: resourceSliceCount %d, other slices of the generation say %d", s.Name, s.Spec.Pool.ResourceSliceCount, n)
			}
			sliceCount[g] = s.Spec.Pool.ResourceSliceCount
			if devices[g] == nil {
				devices[g] = map[string]bool{}
			}
			for i, d := range s.Spec.Devices {
				if devices[g][d.Name] {
					rt.Errorf("ResourceSlice %s: duplicate device name %s in pool %s", s.Name, d.Name, g.pool)
				}
				devices[g][d.Name] = true
				check(fmt.Sprintf("ResourceSlice %s", s.Name), taints.ValidateTaints(d.Taints, field.NewPath("spec", "devices").Index(i).Child("taints")))
			}
		}
		for _, r := range c.TaintRules {
			check("DeviceTaintRule "+r.Name, taints.ValidateRule(r))
		}
		for _, cl := range c.Classes {
			for _, s := range cl.Spec.Selectors {
				compile("DeviceClass "+cl.Name, s.CEL.Expression)
			}
		}
		for _, cl := range append(append([]*resourceapi.ResourceClaim(nil), c.Claims...), c.Allocated...) {
			refs := map[string]bool{}
			for _, r := range cl.Spec.Devices.Requests {
				refs[r.Name] = true
				var exact []resourceapi.ExactDeviceRequest
				if r.Exactly != nil {
					exact = append(exact, *r.Exactly)
					for _, da := range r.Exactly.DerivedAttributes {
						if _, err := env.CompileDerived(da.Expression); err != nil {
							rt.Errorf("ResourceClaim %s: derived attribute %s: %v", cl.Name, da.Name, err)
						}
					}
				}
				for _, s := range r.FirstAvailable {
					refs[r.Name+"/"+s.Name] = true
					exact = append(exact, resourceapi.ExactDeviceRequest{Selectors: s.Selectors, Tolerations: s.Tolerations,
						AllocationMode: s.AllocationMode, Count: s.Count})
				}
				if (r.Exactly == nil) == (len(r.FirstAvailable) == 0) {
					rt.Errorf("ResourceClaim %s request %s: exactly one of exactly and firstAvailable", cl.Name, r.Name)
				}
				for _, e := range exact {
					for _, s := range e.Selectors {
						compile("ResourceClaim "+cl.Name, s.CEL.Expression)
					}
					for i, tol := range e.Tolerations {
						check("ResourceClaim "+cl.Name, taints.ValidateToleration(tol, field.NewPath("tolerations").Index(i)))
					}
					if (e.AllocationMode == resourceapi.DeviceAllocationModeAll) != (e.Count == 0) {
						rt.Errorf("ResourceClaim %s request %s: allocationMode %s with count %d", cl.Name, r.Name, e.AllocationMode, e.Count)
					}
				}
			}
			for _, con := range cl.Spec.Devices.Constraints {
				for _, ref := range con.Requests {
					if !refs[ref] {
						rt.Errorf("ResourceClaim %s: constraint names unknown request %s", cl.Name, ref)
					}
				}
			}
			for _, cfg := range cl.Spec.Devices.Config {
				for _, ref := range cfg.Requests {
					if !refs[ref] {
						rt.Errorf("ResourceClaim %s: config names unknown request %s", cl.Name, ref)
					}
				}
			}
		}
	})
}
