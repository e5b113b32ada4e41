package celenv_test

import (
	"fmt"
	"math/rand/v2"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

const driver = "gpu.nvidia.com"

// genDevice builds a GPU-like device with a random subset of the attributes
// the corpus reads. A few devices carry a value Kubernetes cannot convert
// (a bad version, an attribute without a value), on which every evaluation
// must fail on both sides.
func genDevice(r *rand.Rand, i int) *resourceapi.Device {
	products := []string{"NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-40GB", "NVIDIA B200", "NVIDIA L4"}
	archs := []string{"Hopper", "Ampere", "Blackwell", "Ada Lovelace"}
	ccs := []string{"9.0.0", "8.0.0", "10.0.0", "8.9.0", "9.0.0-rc.1", "12.1.0+build.5"}
	attrs := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{}
	maybe := func(p float64) bool { return r.Float64() < p }
	if maybe(0.9) {
		attrs["productName"] = resourceapi.DeviceAttribute{StringValue: ptr.To(products[r.IntN(len(products))])}
	}
	if maybe(0.9) {
		attrs["architecture"] = resourceapi.DeviceAttribute{StringValue: ptr.To(archs[r.IntN(len(archs))])}
	}
	if maybe(0.9) {
		attrs["gpu.nvidia.com/cudaComputeCapability"] = resourceapi.DeviceAttribute{VersionValue: ptr.To(ccs[r.IntN(len(ccs))])}
	}
	if maybe(0.7) {
		attrs["driverVersion"] = resourceapi.DeviceAttribute{VersionValue: ptr.To(fmt.Sprintf("%d.%d.%d", 535+r.IntN(30), r.IntN(100), r.IntN(200)))}
	}
	if maybe(0.9) {
		attrs["uuid"] = resourceapi.DeviceAttribute{StringValue: ptr.To(fmt.Sprintf("GPU-%08x-%04x-%04x-%04x-%012x", r.Uint32(), r.IntN(1<<16), r.IntN(1<<16), r.IntN(1<<16), r.Uint64()&(1<<48-1)))}
	}
	if maybe(0.9) {
		attrs["index"] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(r.IntN(8)))}
	}
	if maybe(0.5) {
		attrs["mig"] = resourceapi.DeviceAttribute{BoolValue: ptr.To(maybe(0.5))}
	}
	if maybe(0.6) {
		attrs["dra.example.com/zone"] = resourceapi.DeviceAttribute{StringValue: ptr.To(string(rune('a' + r.IntN(3))))}
		attrs["dra.example.com/rack"] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(r.IntN(5)))}
		attrs["dra.example.com/healthy"] = resourceapi.DeviceAttribute{BoolValue: ptr.To(maybe(0.8))}
		attrs["dra.example.com/ip"] = resourceapi.DeviceAttribute{StringValue: ptr.To([]string{"10.1.2.3", "192.168.0.7", "fe80::1", "not-an-ip"}[r.IntN(4)])}
	}
	if maybe(0.6) {
		n := 1 + r.IntN(4)
		zones, ids, versions, flags := make([]string, n), make([]int64, n), make([]string, n), make([]bool, n)
		for j := range n {
			zones[j] = string(rune('a' + r.IntN(4)))
			ids[j] = int64(r.IntN(10))
			versions[j] = fmt.Sprintf("%d.%d.0", r.IntN(3), r.IntN(3))
			flags[j] = maybe(0.7)
		}
		attrs["dra.example.com/zones"] = resourceapi.DeviceAttribute{StringValues: zones}
		attrs["dra.example.com/ids"] = resourceapi.DeviceAttribute{IntValues: ids}
		attrs["dra.example.com/versions"] = resourceapi.DeviceAttribute{VersionValues: versions}
		attrs["dra.example.com/flags"] = resourceapi.DeviceAttribute{BoolValues: flags}
	}
	switch {
	case maybe(0.02):
		attrs["gpu.nvidia.com/cudaComputeCapability"] = resourceapi.DeviceAttribute{VersionValue: ptr.To("9.0")}
	case maybe(0.02):
		attrs["broken"] = resourceapi.DeviceAttribute{}
	}
	capacity := map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{}
	if maybe(0.9) {
		capacity["memory"] = resourceapi.DeviceCapacity{Value: *resource.NewQuantity(int64(8+r.IntN(140))<<30, resource.BinarySI)}
	}
	if maybe(0.5) {
		capacity["cores"] = resourceapi.DeviceCapacity{Value: resource.MustParse(fmt.Sprint(50 + r.IntN(200)))}
	}
	if maybe(0.3) {
		capacity["dra.example.com/bandwidth"] = resourceapi.DeviceCapacity{Value: resource.MustParse(fmt.Sprintf("%dG", 1+r.IntN(100)))}
	}
	if maybe(0.1) {
		capacity["dra.example.com/fraction"] = resourceapi.DeviceCapacity{Value: resource.MustParse("1500m")}
	}
	dev := &resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i), Attributes: attrs, Capacity: capacity}
	switch r.IntN(3) {
	case 0:
		dev.AllowMultipleAllocations = ptr.To(true)
	case 1:
		dev.AllowMultipleAllocations = ptr.To(false)
	}
	return dev
}

// genExpression builds a random boolean selector from atoms that touch every
// kind of value a device has, including names that may be missing.
func genExpression(r *rand.Rand, depth int) string {
	if depth <= 0 || r.IntN(3) == 0 {
		return genAtom(r)
	}
	switch r.IntN(4) {
	case 0:
		return "!(" + genExpression(r, depth-1) + ")"
	case 1:
		return "(" + genExpression(r, depth-1) + " || " + genExpression(r, depth-1) + ")"
	default:
		return "(" + genExpression(r, depth-1) + " && " + genExpression(r, depth-1) + ")"
	}
}

func genAtom(r *rand.Rand) string {
	ops := []string{"==", "!=", "<", "<=", ">", ">="}
	op := ops[r.IntN(len(ops))]
	g := `device.attributes["gpu.nvidia.com"]`
	x := `device.attributes["dra.example.com"]`
	switch r.IntN(18) {
	case 0:
		return fmt.Sprintf("%s.index %s %d", g, op, r.IntN(8))
	case 1:
		return fmt.Sprintf("%s.architecture %s %q", g, op, []string{"Hopper", "Ampere", "Blackwell"}[r.IntN(3)])
	case 2:
		return fmt.Sprintf("device.capacity[%q].memory.compareTo(quantity(\"%dGi\")) %s 0", driver, 8+r.IntN(140), op)
	case 3:
		return fmt.Sprintf("%s.cudaComputeCapability.isGreaterThan(semver(\"%d.%d.0\"))", g, 7+r.IntN(4), r.IntN(10))
	case 4:
		return fmt.Sprintf("has(%s.mig)", g)
	case 5:
		return fmt.Sprintf("%s.?mig.orValue(false)", g)
	case 6:
		return fmt.Sprintf("%s.ids.includes(%d)", x, r.IntN(10))
	case 7:
		return "device.allowMultipleAllocations"
	case 8:
		return `"dra.example.com" in device.attributes`
	case 9:
		return fmt.Sprintf("%s.?rack.orValue(-1) %s %d", x, op, r.IntN(5))
	case 10:
		return fmt.Sprintf("%s.productName.contains(%q)", g, []string{"H100", "A100", "B200"}[r.IntN(3)])
	case 11:
		return fmt.Sprintf("%s.zones.exists(z, z == %q)", x, string(rune('a'+r.IntN(4))))
	case 12:
		return fmt.Sprintf("%s.driverVersion.major() %s %d", g, op, 535+r.IntN(30))
	case 13:
		return fmt.Sprintf("device.capacity[%q].?cores.orValue(quantity(\"0\")).isGreaterThan(quantity(\"%d\"))", driver, 50+r.IntN(200))
	case 14:
		return fmt.Sprintf("cel.bind(a, %s, a.?index.orValue(0) %s %d)", g, op, r.IntN(8))
	case 15:
		return fmt.Sprintf("cidr(%q).containsIP(%s.?ip.orValue(\"0.0.0.0\"))", []string{"10.0.0.0/8", "192.168.0.0/16", "fe80::/10"}[r.IntN(3)], x)
	case 16:
		return fmt.Sprintf("format.%s().validate(%s.?architecture.orValue(\"\")).hasValue()", []string{"dns1123Label", "labelValue", "qualifiedName"}[r.IntN(3)], g)
	default:
		return fmt.Sprintf("%s.healthy", x)
	}
}
