package validation_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator/validation"
	"github.com/dralloc/dralloc/celenv"
	"github.com/dralloc/dralloc/fuzz"
)

// The generators of package fuzz produce objects the API server accepts; validation accepts every one of
// them: slices, classes, taint rules, allocated claims (with their allocation) and pending claims.
func TestPropGeneratedObjectsPassValidation(t *testing.T) {
	env, err := celenv.NewEnv(celenv.Options{NewExpressions: true, Features: &celenv.Features{DRAConsumableCapacity: true, DRAListTypeAttributes: true}})
	if err != nil {
		t.Fatal(err)
	}
	opts := validation.Options{CEL: env}
	rapid.Check(t, func(rt *rapid.T) {
		c := fuzz.ClusterGen(fuzz.AllOptions()).Draw(rt, "cluster")
		check := func(kind, name string, errs field.ErrorList) {
			for _, e := range errs {
				rt.Errorf("%s %s: %v", kind, name, e)
			}
		}
		for _, s := range c.Slices {
			check("ResourceSlice", s.Name, validation.ResourceSlice(s, opts))
		}
		for _, cl := range c.Classes {
			check("DeviceClass", cl.Name, validation.DeviceClass(cl, opts))
		}
		for _, r := range c.TaintRules {
			check("DeviceTaintRule", r.Name, validation.DeviceTaintRule(r, opts))
		}
		for _, cl := range append(c.Allocated, c.Claims...) {
			check("ResourceClaim", cl.Namespace+"/"+cl.Name, validation.ResourceClaim(cl, opts))
		}
	})
}
