package inventory

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dralloc/dralloc/allocator/validation"
	"github.com/dralloc/dralloc/capacity"
)

// ValidateSlice checks one ResourceSlice as the API server does when it is created, with the rules of
// validation.ResourceSlice (the shared validation of the module, one per kind): names, the pool, exactly
// one node selection, devices or counters but not both, devices per slice (128, or 64 when any device has
// taints, consumes counters or has list attributes), counter sets per slice and counters per set,
// attributes plus capacities per device, attribute values, versions, capacity request policies, taints,
// counter consumptions, binding conditions; and quantities within capacity.ValidateQuantity, capacities
// and counters not negative. What needs the whole pool is [ValidatePool]'s. Every error names the field.
// It works for any driver's slice, not only those built by this package, and does not modify the slice.
func ValidateSlice(s *resourceapi.ResourceSlice) field.ErrorList {
	return validation.ResourceSlice(s, validation.Options{})
}

// ValidateTaint checks a device taint t at path p: the key must be a label name (required), the value a
// label value, and the effect None, NoSchedule or NoExecute. It is validation.Taint, and rejects what
// taints.ValidateTaint rejects, with the same error types and the same argument order (object, then path).
func ValidateTaint(t resourceapi.DeviceTaint, p *field.Path) field.ErrorList {
	return validation.Taint(t, p)
}

// ValidatePool checks what only the whole pool shows: all slices name the same
// driver, pool, generation and slice count, the count matches, device names
// and counter set names are unique in the pool, and every counter a device
// consumes exists in a counter set of the pool with at least that value.
// Errors name the slice by index in the argument and the field.
func ValidatePool(slices []*resourceapi.ResourceSlice) field.ErrorList {
	var errs field.ErrorList
	if len(slices) == 0 {
		return nil
	}
	first := slices[0]
	sets := map[string]map[string]resourceapi.Counter{}
	devices := map[string]string{}
	for i, s := range slices {
		p := field.NewPath("slices").Index(i).Child("spec")
		if s == nil {
			errs = append(errs, field.Required(field.NewPath("slices").Index(i), "must not be nil"))
			continue
		}
		if s.Spec.Driver != first.Spec.Driver {
			errs = append(errs, field.Invalid(p.Child("driver"), s.Spec.Driver, fmt.Sprintf("differs from slice 0 (%q)", first.Spec.Driver)))
		}
		if s.Spec.Pool.Name != first.Spec.Pool.Name {
			errs = append(errs, field.Invalid(p.Child("pool", "name"), s.Spec.Pool.Name, fmt.Sprintf("differs from slice 0 (%q)", first.Spec.Pool.Name)))
		}
		if s.Spec.Pool.Generation != first.Spec.Pool.Generation {
			errs = append(errs, field.Invalid(p.Child("pool", "generation"), s.Spec.Pool.Generation, fmt.Sprintf("differs from slice 0 (%d)", first.Spec.Pool.Generation)))
		}
		if s.Spec.Pool.ResourceSliceCount != int64(len(slices)) {
			errs = append(errs, field.Invalid(p.Child("pool", "resourceSliceCount"), s.Spec.Pool.ResourceSliceCount, fmt.Sprintf("the pool has %d slices", len(slices))))
		}
		for j, cs := range s.Spec.SharedCounters {
			if _, dup := sets[cs.Name]; dup {
				errs = append(errs, field.Duplicate(p.Child("sharedCounters").Index(j).Child("name"), cs.Name))
				continue
			}
			sets[cs.Name] = cs.Counters
		}
		for j := range s.Spec.Devices {
			name := s.Spec.Devices[j].Name
			if prev, dup := devices[name]; dup {
				errs = append(errs, field.Invalid(p.Child("devices").Index(j).Child("name"), name, "duplicate device name in the pool, also at "+prev))
				continue
			}
			devices[name] = p.Child("devices").Index(j).String()
		}
	}
	for i, s := range slices {
		if s == nil {
			continue
		}
		for j := range s.Spec.Devices {
			for k, c := range s.Spec.Devices[j].ConsumesCounters {
				p := field.NewPath("slices").Index(i).Child("spec", "devices").Index(j).Child("consumesCounters").Index(k)
				set, ok := sets[c.CounterSet]
				if !ok {
					errs = append(errs, field.NotFound(p.Child("counterSet"), c.CounterSet))
					continue
				}
				for _, name := range sortedKeys(c.Counters) {
					have, ok := set[name]
					if !ok {
						errs = append(errs, field.NotFound(p.Child("counters").Key(name), name))
						continue
					}
					want := c.Counters[name].Value
					// Unbounded quantities are refused before comparing them: the comparison alone could
					// run for minutes.
					if err := capacity.ValidateQuantity(want); err != nil {
						errs = append(errs, field.Invalid(p.Child("counters").Key(name).Child("value"), "<omitted>", err.Error()))
						continue
					}
					if err := capacity.ValidateQuantity(have.Value); err != nil {
						errs = append(errs, field.Invalid(p.Child("counters").Key(name), "<omitted>", "the counter set's value: "+err.Error()))
						continue
					}
					if want.Cmp(have.Value) > 0 {
						errs = append(errs, field.Invalid(p.Child("counters").Key(name), want.String(), fmt.Sprintf("exceeds the counter set's %s", have.Value.String())))
					}
				}
			}
		}
	}
	return errs
}
