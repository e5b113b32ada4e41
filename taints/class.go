package taints

import (
	"context"
	"errors"
	"fmt"

	"github.com/dralloc/dralloc/celenv"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ErrClassSelector is wrapped by the errors of [ExpandClass] when a selector of the DeviceClass does not
// compile or fails on a device.
var ErrClassSelector = errors.New("device class selector failed")

// ExpandClass is an SDK extension that taints every device of a DeviceClass.
//
// DeviceTaintSelector had a deviceClassName field (and CEL selectors) until Kubernetes 1.35; they were removed
// because the eviction controller cannot evaluate CEL against devices that are allocated but no longer
// published. resource.k8s.io/v1 in Kubernetes 1.37 selects only by driver, pool and device name. ExpandClass
// keeps the class-based intent expressible with the API that exists: it evaluates the class's CEL selectors
// (with env, as the scheduler would) against the devices published in slices, keeps the devices that also
// match sel (driver, pool and device, each only when set, as in a rule), and returns one DeviceTaintRule per
// device, selecting exactly that device by driver, pool and name and carrying taint. Write the rules to the
// cluster; re-run ExpandClass when slices change, because devices published later are not covered.
//
// Rule names are namePrefix, the device name and a hash of the device ID, taint key and effect. A selector
// that does not compile or fails at runtime on a device is an error naming the class, the selector and the
// device, wrapping [ErrClassSelector]. Devices are visited in the order of slices and their devices.
func ExpandClass(ctx context.Context, env *celenv.Env, class *resourceapi.DeviceClass, sel resourceapi.DeviceTaintSelector,
	taint resourceapi.DeviceTaint, namePrefix string, slices []*resourceapi.ResourceSlice) ([]*resourceapi.DeviceTaintRule, error) {
	if env == nil || class == nil {
		return nil, errors.New("env and class are required")
	}
	var selectors []*celenv.Selector
	for i, s := range class.Spec.Selectors {
		if s.CEL == nil {
			continue
		}
		compiled, err := env.Compile(s.CEL.Expression)
		if err != nil {
			return nil, fmt.Errorf("DeviceClass %s: spec.selectors[%d].cel.expression: %w: %w", class.Name, i, ErrClassSelector, err)
		}
		selectors = append(selectors, compiled)
	}
	if errs := ValidateTaint(taint, nil); len(errs) > 0 {
		return nil, fmt.Errorf("taint: %w", errs.ToAggregate())
	}
	seen := map[DeviceID]bool{}
	var rules []*resourceapi.DeviceTaintRule
	for si, s := range slices {
		if s == nil {
			return nil, fmt.Errorf("slices[%d] is nil", si)
		}
		if (sel.Driver != nil && *sel.Driver != s.Spec.Driver) || (sel.Pool != nil && *sel.Pool != s.Spec.Pool.Name) {
			continue
		}
		for di := range s.Spec.Devices {
			d := &s.Spec.Devices[di]
			if sel.Device != nil && *sel.Device != d.Name {
				continue
			}
			id := DeviceID{s.Spec.Driver, s.Spec.Pool.Name, d.Name}
			if seen[id] {
				continue
			}
			view := celenv.NewDevice(s.Spec.Driver, d)
			match := true
			for i, compiled := range selectors {
				ok, err := compiled.Matches(ctx, view)
				if err != nil {
					return nil, fmt.Errorf("DeviceClass %s: spec.selectors[%d].cel.expression on device %s: %w: %w", class.Name, i, id, ErrClassSelector, err)
				}
				if !ok {
					match = false
					break
				}
			}
			if !match {
				continue
			}
			seen[id] = true
			rule := &resourceapi.DeviceTaintRule{
				ObjectMeta: metav1.ObjectMeta{Name: ruleName(namePrefix, id, taint.Key, taint.Effect)},
				Spec: resourceapi.DeviceTaintRuleSpec{
					DeviceSelector: &resourceapi.DeviceTaintSelector{Driver: ptr(id.Driver), Pool: ptr(id.Pool), Device: ptr(id.Device)},
					Taint:          *taint.DeepCopy(),
				},
			}
			if errs := ValidateRule(rule); len(errs) > 0 {
				return nil, fmt.Errorf("DeviceTaintRule %s for device %s: %w", rule.Name, id, errs.ToAggregate())
			}
			rules = append(rules, rule)
		}
	}
	return rules, nil
}
