package taints

import (
	"fmt"
	"hash/fnv"
	"sort"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// DeviceCondition is one None taint on one device: a condition that a driver or an operator reports without
// any effect on scheduling, for example "gpu.example.com/ecc-errors=12:None".
type DeviceCondition struct {
	Device DeviceID
	Taint  resourceapi.DeviceTaint
	// Rule is the DeviceTaintRule that contributes the taint, "" for a taint in the ResourceSlice.
	Rule string
}

// Condition is every device that carries None taints with one key.
type Condition struct {
	Key     string
	Devices []DeviceCondition
}

// Conditions lists the devices in slices that carry None taints (their own or from the evaluator's rules),
// grouped by taint key. Keys are in ascending order, devices within a key by driver, pool, device and then
// order of appearance. The None effect never blocks allocation nor evicts, which makes it a channel for
// device conditions: watch them here, decide, and [Escalate].
func (e *Evaluator) Conditions(slices []*resourceapi.ResourceSlice) []Condition {
	byKey := map[string][]DeviceCondition{}
	for _, s := range slices {
		if s == nil {
			continue
		}
		for j := range s.Spec.Devices {
			d := &s.Spec.Devices[j]
			id := DeviceID{s.Spec.Driver, s.Spec.Pool.Name, d.Name}
			for _, t := range d.Taints {
				if t.Effect == resourceapi.DeviceTaintEffectNone {
					byKey[t.Key] = append(byKey[t.Key], DeviceCondition{Device: id, Taint: *t.DeepCopy()})
				}
			}
			e.each(id.Driver, id.Pool, id.Device, func(r *rule) {
				if r.taint.Effect == resourceapi.DeviceTaintEffectNone {
					byKey[r.taint.Key] = append(byKey[r.taint.Key], DeviceCondition{Device: id, Taint: *r.taint.DeepCopy(), Rule: r.name})
				}
			})
		}
	}
	out := make([]Condition, 0, len(byKey))
	for k, devs := range byKey {
		sort.SliceStable(devs, func(i, j int) bool { return lessID(devs[i].Device, devs[j].Device) })
		out = append(out, Condition{Key: k, Devices: devs})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

func lessID(a, b DeviceID) bool {
	if a.Driver != b.Driver {
		return a.Driver < b.Driver
	}
	if a.Pool != b.Pool {
		return a.Pool < b.Pool
	}
	return a.Device < b.Device
}

// Escalate turns a policy decision about device conditions into DeviceTaintRules: for every condition that
// decide accepts (nil accepts all), one rule that selects exactly that device (driver, pool and device set)
// and carries the condition's key and value with the given effect — NoSchedule to stop new allocations,
// NoExecute to drain the device as well. Devices are deduplicated per key, so two None taints with the same
// key on one device give one rule.
//
// Rule names are namePrefix, the device name and a hash of the device ID and the effect, so that they are
// stable, unique per device and effect, and valid object names. timeAdded is left unset for the API server
// to fill in. An invalid prefix or effect is an error.
func Escalate(conditions []DeviceCondition, decide func(DeviceCondition) bool, effect resourceapi.DeviceTaintEffect, namePrefix string) ([]*resourceapi.DeviceTaintRule, error) {
	if effect != resourceapi.DeviceTaintEffectNoSchedule && effect != resourceapi.DeviceTaintEffectNoExecute {
		return nil, fmt.Errorf("effect %q: must be NoSchedule or NoExecute", effect)
	}
	if msgs := validation.IsDNS1123Subdomain(namePrefix); len(msgs) > 0 || len(namePrefix) > 200 {
		return nil, fmt.Errorf("name prefix %q: must be a DNS subdomain of at most 200 characters: %s", namePrefix, strings.Join(msgs, "; "))
	}
	type key struct {
		id  DeviceID
		key string
	}
	seen := map[key]bool{}
	var rules []*resourceapi.DeviceTaintRule
	for _, c := range conditions {
		if decide != nil && !decide(c) {
			continue
		}
		k := key{c.Device, c.Taint.Key}
		if seen[k] {
			continue
		}
		seen[k] = true
		rule := &resourceapi.DeviceTaintRule{
			ObjectMeta: metav1.ObjectMeta{Name: ruleName(namePrefix, c.Device, c.Taint.Key, effect)},
			Spec: resourceapi.DeviceTaintRuleSpec{
				DeviceSelector: &resourceapi.DeviceTaintSelector{
					Driver: ptr(c.Device.Driver),
					Pool:   ptr(c.Device.Pool),
					Device: ptr(c.Device.Device),
				},
				Taint: resourceapi.DeviceTaint{Key: c.Taint.Key, Value: c.Taint.Value, Effect: effect},
			},
		}
		if errs := ValidateRule(rule); len(errs) > 0 {
			return nil, fmt.Errorf("DeviceTaintRule %s for device %s: %w", rule.Name, c.Device, errs.ToAggregate())
		}
		rules = append(rules, rule)
	}
	return rules, nil
}

func ruleName(prefix string, id DeviceID, key string, effect resourceapi.DeviceTaintEffect) string {
	h := fnv.New32a()
	for _, s := range []string{id.Driver, id.Pool, id.Device, key, string(effect)} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	dev := strings.ToLower(id.Device)
	if len(dev) > 40 {
		dev = dev[:40]
	}
	dev = strings.Trim(dev, "-.")
	if dev == "" {
		return fmt.Sprintf("%s-%08x", prefix, h.Sum32())
	}
	return fmt.Sprintf("%s-%s-%08x", prefix, dev, h.Sum32())
}

func ptr[T any](v T) *T { return &v }
