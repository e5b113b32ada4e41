package inventory

import (
	"fmt"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// Values of Options.ConsumableShares besides a positive integer. They are
// the values of the --consumable-shares flag of NVIDIA's gpu-kubelet-plugin
// (cmd/gpu-kubelet-plugin/main.go at the commit named in doc.go).
const (
	// SharesDisabled publishes every device for one claim at a time; the
	// empty string means the same.
	SharesDisabled = "disabled"
	// SharesMemory lets claims share a device by its memory: a claim that
	// names no memory takes all of it.
	SharesMemory = "memory"
	// SharesUnlimited lets any number of claims share a device; a claim
	// that names no memory takes none.
	SharesUnlimited = "unlimited"
)

// memoryStep is the request step of consumable memory: NVIDIA's driver uses
// 1Mi and rounds the published memory down to a multiple of it, so that the
// policy's maximum is a multiple of its step as the API requires.
var memoryStep = resource.MustParse("1Mi")

// validShares checks Options.ConsumableShares as NVIDIA's driver checks its
// flag (validateFlags: disabled, memory, unlimited or strconv.Atoi > 0).
func validShares(v string) *field.Error {
	switch strings.TrimSpace(v) {
	case "", SharesDisabled, SharesMemory, SharesUnlimited:
		return nil
	}
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 0 {
		return nil
	}
	return field.Invalid(field.NewPath("consumableShares"), v,
		fmt.Sprintf("must be %q, %q, %q or a positive integer", SharesDisabled, SharesMemory, SharesUnlimited))
}

// applyShares makes d shareable by consumable capacity as NVIDIA's driver
// does with ConsumableShares on (applyConsumableShares in
// cmd/gpu-kubelet-plugin/consumable_shares.go, called for whole GPUs and
// static MIG devices by GetDevice and for whole GPUs and dynamic MIG
// placements by PartGetDevice):
//
//   - allowMultipleAllocations is set;
//   - memory is rounded down to whole MiB and gets a request policy in steps
//     of 1Mi up to all of it: "memory" defaults to all of it with a minimum
//     of 1Mi, "unlimited" and an integer N default to 0 with a minimum of 0;
//   - with an integer N, a capacity shares of N (decimal) is added, requested
//     in steps of 1 from 1 to N, default 1.
//
// A device without memory capacity only gets allowMultipleAllocations, as
// there.
func applyShares(d *resourceapi.Device, opt string) {
	opt = strings.TrimSpace(opt)
	if opt == "" || opt == SharesDisabled {
		return
	}
	d.AllowMultipleAllocations = ptr.To(true)
	mem, ok := d.Capacity[CapMemory]
	if !ok {
		return
	}
	step := memoryStep.Value()
	maxMem := *resource.NewQuantity(mem.Value.Value()/step*step, resource.BinarySI)
	mem.Value = maxMem.DeepCopy()
	zero := resource.MustParse("0")
	policy := func(def, lo resource.Quantity) *resourceapi.CapacityRequestPolicy {
		return &resourceapi.CapacityRequestPolicy{
			Default: ptr.To(def.DeepCopy()),
			ValidRange: &resourceapi.CapacityRequestPolicyRange{
				Min:  ptr.To(lo.DeepCopy()),
				Max:  ptr.To(maxMem.DeepCopy()),
				Step: ptr.To(memoryStep.DeepCopy()),
			},
		}
	}
	switch opt {
	case SharesMemory:
		mem.RequestPolicy = policy(maxMem, memoryStep)
	case SharesUnlimited:
		mem.RequestPolicy = policy(zero, zero)
	default:
		n, _ := strconv.Atoi(opt) // validated by Slices
		mem.RequestPolicy = policy(zero, zero)
		shares := *resource.NewQuantity(int64(n), resource.DecimalSI)
		one := *resource.NewQuantity(1, resource.DecimalSI)
		d.Capacity[CapShares] = resourceapi.DeviceCapacity{
			Value: shares,
			RequestPolicy: &resourceapi.CapacityRequestPolicy{
				Default: ptr.To(one.DeepCopy()),
				ValidRange: &resourceapi.CapacityRequestPolicyRange{
					Min:  ptr.To(one.DeepCopy()),
					Max:  ptr.To(shares.DeepCopy()),
					Step: ptr.To(one.DeepCopy()),
				},
			},
		}
	}
	d.Capacity[CapMemory] = mem
}
