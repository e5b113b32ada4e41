package celenv

import (
	"context"
	"fmt"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"pgregory.net/rapid"
)

const propDriver = "gpu.nvidia.com"

// genPropDevice draws a device whose attribute names are either bare or
// qualified with the driver's domain (qualify decides which).
func genPropDevice(t *rapid.T, qualify func(string) bool) *resourceapi.Device {
	name := func(n string) resourceapi.QualifiedName {
		if qualify(n) {
			return resourceapi.QualifiedName(propDriver + "/" + n)
		}
		return resourceapi.QualifiedName(n)
	}
	dev := &resourceapi.Device{
		Name:       "d",
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{},
		Capacity:   map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{},
	}
	if rapid.Bool().Draw(t, "hasIndex") {
		dev.Attributes[name("index")] = resourceapi.DeviceAttribute{IntValue: ptr.To(rapid.Int64Range(-3, 10).Draw(t, "index"))}
	}
	if rapid.Bool().Draw(t, "hasArch") {
		dev.Attributes[name("arch")] = resourceapi.DeviceAttribute{StringValue: ptr.To(rapid.SampledFrom([]string{"Hopper", "Ampere", ""}).Draw(t, "arch"))}
	}
	if rapid.Bool().Draw(t, "hasCC") {
		dev.Attributes[name("cc")] = resourceapi.DeviceAttribute{VersionValue: ptr.To(fmt.Sprintf("%d.%d.0", rapid.IntRange(7, 10).Draw(t, "major"), rapid.IntRange(0, 9).Draw(t, "minor")))}
	}
	if rapid.Bool().Draw(t, "hasMig") {
		dev.Attributes[name("mig")] = resourceapi.DeviceAttribute{BoolValue: ptr.To(rapid.Bool().Draw(t, "mig"))}
	}
	if rapid.Bool().Draw(t, "hasZones") {
		dev.Attributes[name("zones")] = resourceapi.DeviceAttribute{StringValues: rapid.SliceOfN(rapid.SampledFrom([]string{"a", "b", "c"}), 1, 4).Draw(t, "zones")}
	}
	if rapid.Bool().Draw(t, "hasMemory") {
		dev.Capacity[name("memory")] = resourceapi.DeviceCapacity{Value: *resource.NewQuantity(rapid.Int64Range(0, 200).Draw(t, "gi")<<30, resource.BinarySI)}
	}
	return dev
}

var propSelectors = []string{
	`device.attributes["gpu.nvidia.com"].index > 2`,
	`device.attributes["gpu.nvidia.com"].?index.orValue(0) > 2`,
	`has(device.attributes["gpu.nvidia.com"].arch) && device.attributes["gpu.nvidia.com"].arch == "Hopper"`,
	`device.attributes["gpu.nvidia.com"].cc.compareTo(semver("9.0.0")) >= 0`,
	`device.attributes["gpu.nvidia.com"].?mig.orValue(false)`,
	`device.attributes["gpu.nvidia.com"].zones.includes("b")`,
	`device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0`,
	`device.attributes["gpu.nvidia.com"].size() >= 2`,
	`device.attributes.all(d, device.attributes[d].all(n, n != "nosuch"))`,
}

// TestPropBareNamesAreInTheDriversDomain: whether a driver publishes an
// attribute as "name" or as "<driver>/name" does not change any verdict.
func TestPropBareNamesAreInTheDriversDomain(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		seed := rapid.Uint64().Draw(t, "seed")
		qualified := func(n string) bool { return (seed>>len(n))&1 == 1 }
		// The same draws produce the same device; only the spelling differs.
		devA := genPropDevice(t, qualified)
		devB := devA.DeepCopy()
		devB.Attributes = map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{}
		for n, a := range devA.Attributes {
			devB.Attributes[flipQualification(n)] = a
		}
		devB.Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{}
		for n, c := range devA.Capacity {
			devB.Capacity[flipQualification(n)] = c
		}
		a, b := NewDevice(propDriver, devA), NewDevice(propDriver, devB)
		for _, expr := range propSelectors {
			sel, err := testEnv.Compile(expr)
			if err != nil {
				t.Fatal(err)
			}
			okA, errA := sel.Matches(context.Background(), a)
			okB, errB := sel.Matches(context.Background(), b)
			if okA != okB || (errA == nil) != (errB == nil) {
				t.Fatalf("%s: bare/qualified spellings disagree: (%v, %v) vs (%v, %v)", expr, okA, errA, okB, errB)
			}
		}
	})
}

// TestPropPreparedDeviceMatchesFreshConversion: evaluating many selectors
// on one prepared device gives the same verdicts as preparing the device
// anew for every selector, so preparation shares nothing that evaluation
// changes.
func TestPropPreparedDeviceMatchesFreshConversion(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		dev := genPropDevice(t, func(string) bool { return false })
		shared := NewDevice(propDriver, dev)
		order := rapid.Permutation(propSelectors).Draw(t, "order")
		for _, expr := range order {
			sel, err := testEnv.Compile(expr)
			if err != nil {
				t.Fatal(err)
			}
			ok1, err1 := sel.Matches(context.Background(), shared)
			ok2, err2 := sel.Matches(context.Background(), NewDevice(propDriver, dev))
			if ok1 != ok2 || (err1 == nil) != (err2 == nil) {
				t.Fatalf("%s: shared (%v, %v), fresh (%v, %v)", expr, ok1, err1, ok2, err2)
			}
		}
	})
}

func flipQualification(n resourceapi.QualifiedName) resourceapi.QualifiedName {
	prefix := resourceapi.QualifiedName(propDriver + "/")
	if len(n) > len(prefix) && n[:len(prefix)] == prefix {
		return n[len(prefix):]
	}
	return prefix + n
}

// TestPropNamedMatchesNewDevice: a device prepared with Named from another with the same values
// evaluates as one prepared with NewDevice (verdicts, and errors word for word, its name in them), and
// the device it was made from keeps its own name.
func TestPropNamedMatchesNewDevice(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		dev := genPropDevice(t, func(string) bool { return false })
		first := NewDevice(propDriver, dev)
		twin := dev.DeepCopy()
		twin.Name = rapid.SampledFrom([]string{"gpu-1", "d", "gpu-7"}).Draw(t, "name")
		named, fresh := first.Named(propDriver, twin.Name), NewDevice(propDriver, twin)
		if named.Name() != fresh.Name() || first.Name() != propDriver+"/d" {
			t.Fatalf("named %q, fresh %q, first now %q", named.Name(), fresh.Name(), first.Name())
		}
		for _, expr := range propSelectors {
			sel, err := testEnv.Compile(expr)
			if err != nil {
				t.Fatal(err)
			}
			ok1, err1 := sel.Matches(context.Background(), named)
			ok2, err2 := sel.Matches(context.Background(), fresh)
			if ok1 != ok2 || fmt.Sprint(err1) != fmt.Sprint(err2) {
				t.Fatalf("%s: named (%v, %v), fresh (%v, %v)", expr, ok1, err1, ok2, err2)
			}
		}
	})
}
