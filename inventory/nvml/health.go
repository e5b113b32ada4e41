package nvml

import (
	"errors"
	"fmt"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/dralloc/dralloc/inventory"
)

// ReadHealth reads the polled health signals of one GPU at now: the volatile
// uncorrectable ECC count, pending page retirement, row remapping (pending or
// failed), thermal slowdown from the clock event reasons, NVLinks that are
// down, and whether the GPU is lost (any call answering ERROR_GPU_IS_LOST).
// Signals the GPU does not support read as healthy; signals that cannot be
// read for another reason are listed in the returned unknowns. XIDs are
// events, read with WaitXIDs, and are left empty here.
func ReadHealth(dev gonvml.Device, now time.Time) (inventory.Observation, []string) {
	obs := inventory.Observation{Time: now}
	var u unknowns
	lost := func(err error) bool {
		var ret gonvml.Return
		if errors.As(err, &ret) && ret == gonvml.ERROR_GPU_IS_LOST {
			obs.Lost = true
			return true
		}
		return false
	}
	note := func(what string, err error) {
		if !lost(err) {
			u.add(what, err)
		}
	}
	if n, err := call(func() (uint64, gonvml.Return) {
		return dev.GetTotalEccErrors(gonvml.MEMORY_ERROR_TYPE_UNCORRECTED, gonvml.VOLATILE_ECC)
	}); err == nil {
		obs.UncorrectableECCErrors = n
	} else {
		note("uncorrectableECCErrors", err)
	}
	if s, err := call(dev.GetRetiredPagesPendingStatus); err == nil {
		obs.RetiredPagesPending = s == gonvml.FEATURE_ENABLED
	} else {
		note("retiredPagesPending", err)
	}
	type remap struct{ pending, failed bool }
	if r, err := call(func() (remap, gonvml.Return) {
		_, _, pending, failed, ret := dev.GetRemappedRows()
		return remap{pending, failed}, ret
	}); err == nil {
		obs.RowRemapPending, obs.RowRemapFailed = r.pending, r.failed
	} else {
		note("rowRemap", err)
	}
	if reasons, err := call(dev.GetCurrentClocksEventReasons); err == nil {
		const thermal = gonvml.ClocksEventReasonSwThermalSlowdown | gonvml.ClocksThrottleReasonHwThermalSlowdown
		obs.ThermalSlowdown = reasons&thermal != 0
	} else {
		note("thermalSlowdown", err)
	}
	for link := range gonvml.NVLINK_MAX_LINKS {
		state, err := call(func() (gonvml.EnableState, gonvml.Return) { return dev.GetNvLinkState(link) })
		if err != nil {
			// Links past the last one, or a GPU without NVLink, answer
			// NOT_SUPPORTED or INVALID_ARGUMENT: stop there.
			var ret gonvml.Return
			if !errors.Is(err, errNotSupported) && !(errors.As(err, &ret) && ret == gonvml.ERROR_INVALID_ARGUMENT) {
				note(fmt.Sprintf("nvlink[%d]", link), err)
			}
			break
		}
		if state != gonvml.FEATURE_ENABLED {
			obs.NVLinksDown++
		}
	}
	return obs, u
}

// XIDEvent is one XID error NVML reported.
type XIDEvent struct {
	// GPUUUID is the UUID of the GPU it happened on; empty if unknown.
	GPUUUID string
	// XID is the error number.
	XID int
	// GPUInstanceID and ComputeInstanceID locate it on a MIG GPU; NVML uses
	// WholeGPU for an error outside any MIG instance.
	GPUInstanceID, ComputeInstanceID uint32
}

// WholeGPU is the instance ID of an XID event that is not attributable to a
// MIG instance.
const WholeGPU = 0xFFFFFFFF

// ErrUnknownDevice is wrapped by errors for an event whose GPU or MIG device
// the node does not have.
var ErrUnknownDevice = errors.New("unknown device")

// DeviceUUID returns the UUID whose taints the event belongs to, the key for
// inventory.Options.Taints: the MIG device's when the event names a GPU
// instance of the GPU (NVIDIA's driver attributes an XID to a MIG device by
// parent UUID and GPU instance the same way), the GPU's otherwise. A GPU's
// taints go on all its devices, so an XID outside any instance taints every
// MIG device of the GPU, while one inside an instance taints that MIG device
// only. An event for a GPU or instance the node does not have is an error
// wrapping ErrUnknownDevice that names it.
func (e XIDEvent) DeviceUUID(node inventory.Node) (string, error) {
	if e.GPUUUID == "" {
		return "", fmt.Errorf("%w: XID %d from a GPU whose UUID is unknown", ErrUnknownDevice, e.XID)
	}
	for _, g := range node.GPUs {
		if g.UUID != e.GPUUUID {
			continue
		}
		if e.GPUInstanceID == WholeGPU {
			return g.UUID, nil
		}
		for _, m := range g.MIGDevices {
			if uint32(m.GPUInstanceID) == e.GPUInstanceID && m.UUID != "" {
				return m.UUID, nil
			}
		}
		return "", fmt.Errorf("%w: XID %d on GPU %s, GPU instance %d: no MIG device of the node has this instance",
			ErrUnknownDevice, e.XID, e.GPUUUID, e.GPUInstanceID)
	}
	return "", fmt.Errorf("%w: XID %d on GPU %s: no GPU of the node has this UUID", ErrUnknownDevice, e.XID, e.GPUUUID)
}

// Observations groups XID events by the UUID DeviceUUID gives, as
// observations at now for inventory.HealthPolicy.Observe, the XIDs of each in
// the order received. Events for unknown devices are left out and reported
// together in the error; the others are still returned.
func Observations(node inventory.Node, events []XIDEvent, now time.Time) (map[string]inventory.Observation, error) {
	out := map[string]inventory.Observation{}
	var errs []error
	for _, e := range events {
		uuid, err := e.DeviceUUID(node)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		o := out[uuid]
		o.Time = now
		o.XIDs = append(o.XIDs, e.XID)
		out[uuid] = o
	}
	return out, errors.Join(errs...)
}

// RegisterXIDs creates an event set that receives XID critical errors from
// every GPU of lib that supports them. GPUs that do not are skipped.
func RegisterXIDs(lib gonvml.Interface) (gonvml.EventSet, error) {
	set, err := call(lib.EventSetCreate)
	if err != nil {
		return nil, fmt.Errorf("%w: creating event set: %w", ErrNVML, err)
	}
	count, err := call(lib.DeviceGetCount)
	if err != nil {
		return nil, fmt.Errorf("%w: counting devices: %w", ErrNVML, err)
	}
	for i := range count {
		dev, err := call(func() (gonvml.Device, gonvml.Return) { return lib.DeviceGetHandleByIndex(i) })
		if err != nil || dev == nil {
			continue
		}
		_, err = call(func() (struct{}, gonvml.Return) {
			return struct{}{}, dev.RegisterEvents(gonvml.EventTypeXidCriticalError, set)
		})
		if err != nil && !errors.Is(err, errNotSupported) {
			return nil, fmt.Errorf("%w: registering XID events of device %d: %w", ErrNVML, i, err)
		}
	}
	return set, nil
}

// WaitXIDs waits up to timeout for XID events on set and returns those
// received; a timeout with none is not an error.
func WaitXIDs(set gonvml.EventSet, timeout time.Duration) ([]XIDEvent, error) {
	var out []XIDEvent
	ms := uint32(min(timeout.Milliseconds(), int64(^uint32(0))))
	for {
		e, err := call(func() (gonvml.EventData, gonvml.Return) { return set.Wait(ms) })
		var ret gonvml.Return
		if errors.As(err, &ret) && ret == gonvml.ERROR_TIMEOUT {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("%w: waiting for events: %w", ErrNVML, err)
		}
		if e.EventType&gonvml.EventTypeXidCriticalError == 0 {
			continue
		}
		ev := XIDEvent{XID: int(e.EventData), GPUInstanceID: e.GpuInstanceId, ComputeInstanceID: e.ComputeInstanceId}
		if e.Device != nil {
			ev.GPUUUID, _ = call(e.Device.GetUUID)
		}
		out = append(out, ev)
		ms = 0 // drain what is queued, then return
	}
}
