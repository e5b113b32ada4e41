package claim

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"

	resourceapi "k8s.io/api/resource/v1"
	sigsjson "sigs.k8s.io/json"
)

// NVIDIA's opaque device configurations (resource.nvidia.com/v1beta1 in
// api/nvidia.com/resource/v1beta1 of sigs.k8s.io/dra-driver-nvidia-gpu, at
// the commit inventory/doc.go names) and the device types they configure.
const (
	NVIDIAConfigAPIVersion = "resource.nvidia.com/v1beta1"
	KindGPUConfig          = "GpuConfig"
	KindMIGDeviceConfig    = "MigDeviceConfig"
	KindVFIODeviceConfig   = "VfioDeviceConfig"
	// StrategyTimeSlicing and StrategyMPS are the sharing strategies.
	StrategyTimeSlicing = "TimeSlicing"
	StrategyMPS         = "MPS"
	// DefaultTimeSlice is the interval a TimeSlicing configuration without
	// one gets (Normalize with the TimeSlicingSettings gate).
	DefaultTimeSlice = "Default"
)

// ErrDeviceConfig is wrapped by errors for an opaque configuration NVIDIA's
// driver would refuse when it prepares the device.
var ErrDeviceConfig = errors.New("invalid device configuration")

// Sharing is the sharing section of a GpuConfig or MigDeviceConfig: how
// the claims or containers that share a device take turns. It travels in
// opaque configuration, which the scheduler never reads; only the driver
// applies it.
type Sharing struct {
	// Strategy is StrategyTimeSlicing or StrategyMPS.
	Strategy string `json:"strategy"`
	// TimeSlicingConfig is the time slice of a GPU (not of a MIG device).
	TimeSlicingConfig *TimeSlicing `json:"timeSlicingConfig,omitempty"`
	// MPSConfig is the MPS control daemon's configuration, kept as written.
	MPSConfig json.RawMessage `json:"mpsConfig,omitempty"`
}

// TimeSlicing is a GPU's time-slicing configuration.
type TimeSlicing struct {
	// Interval is Default, Short, Medium or Long.
	Interval string `json:"interval,omitempty"`
}

// DeviceConfig is the configuration NVIDIA's driver applies to one
// prepared device.
type DeviceConfig struct {
	// Kind is KindGPUConfig, KindMIGDeviceConfig or KindVFIODeviceConfig.
	Kind string
	// Source is the configuration it comes from; nil when none applies and
	// the driver uses its default for Kind (no sharing).
	Source *resourceapi.DeviceAllocationConfiguration
	// Sharing is the normalised sharing section; nil for none.
	Sharing *Sharing
}

// SelectOptions are the driver settings that change the choice.
type SelectOptions struct {
	// ConsumableShares is the driver's --consumable-shares flag not
	// disabled (inventory.Options.ConsumableShares): claims may share the
	// device, MPS is refused.
	ConsumableShares bool
	// TimeSlicingSettings is the driver's gate of that name: a TimeSlicing
	// strategy without an interval gets DefaultTimeSlice.
	TimeSlicingSettings bool
}

// nvidiaConfig is what SelectConfig decodes: the type and the sharing.
type nvidiaConfig struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Sharing    *Sharing `json:"sharing,omitempty"`
}

// kindFor is the configuration kind of each value of the type attribute.
var kindFor = map[string]string{"gpu": KindGPUConfig, "mig": KindMIGDeviceConfig, "vfio": KindVFIODeviceConfig}

// SelectConfig returns the configuration NVIDIA's gpu-kubelet-plugin
// applies to d, a device of deviceType ("gpu", "mig" or "vfio", the
// device's type attribute), as getConfigResultsMap in
// cmd/gpu-kubelet-plugin/device_state.go chooses it: of the configurations
// for the driver, class ones before claim ones, the last that names d's
// request exactly — which must be of d's kind, or the claim fails to
// prepare — or that names no request and is of d's kind; the driver's
// default otherwise.
//
// The driver compares the request name exactly, so a configuration naming
// a main request does not reach the devices of its subrequests
// ("main/sub"), although Kubernetes (and Prepare) says it applies to them;
// SelectConfig does as the driver does. Parameters are decoded strictly,
// as the driver's StrictDecoder does: an unknown field is an error. With
// opts.ConsumableShares an MPS strategy is an error ("MPS sharing is not
// supported when consumable shares is enabled"). Errors wrap
// ErrDeviceConfig and name the device and configuration.
func SelectConfig(d PreparedDevice, deviceType string, opts SelectOptions) (DeviceConfig, error) {
	kind, ok := kindFor[deviceType]
	if !ok {
		return DeviceConfig{}, fmt.Errorf("%w: device %s: type %q is not gpu, mig or vfio", ErrDeviceConfig, d.Result.Device, deviceType)
	}
	for i := len(d.Configs) - 1; i >= 0; i-- {
		c := &d.Configs[i]
		named := slices.Contains(c.Requests, d.Result.Request)
		if !named && len(c.Requests) > 0 {
			continue // names only the main request, or another
		}
		if c.Opaque == nil {
			return DeviceConfig{}, fmt.Errorf("%w: device %s: configuration %d is not opaque", ErrDeviceConfig, d.Result.Device, i)
		}
		var nc nvidiaConfig
		strict, err := sigsjson.UnmarshalStrict(c.Opaque.Parameters.Raw, &nc)
		if err == nil {
			err = errors.Join(strict...)
		}
		if err != nil {
			return DeviceConfig{}, fmt.Errorf("%w: device %s: configuration %d: %w", ErrDeviceConfig, d.Result.Device, i, err)
		}
		if nc.APIVersion != NVIDIAConfigAPIVersion || !slices.Contains([]string{KindGPUConfig, KindMIGDeviceConfig, KindVFIODeviceConfig}, nc.Kind) {
			return DeviceConfig{}, fmt.Errorf("%w: device %s: configuration %d: %s %s is not a device configuration of %s",
				ErrDeviceConfig, d.Result.Device, i, nc.APIVersion, nc.Kind, NVIDIAConfigAPIVersion)
		}
		if nc.Kind != kind {
			if named {
				return DeviceConfig{}, fmt.Errorf("%w: cannot apply %s to device %s of type %s (request %s)",
					ErrDeviceConfig, nc.Kind, d.Result.Device, deviceType, d.Result.Request)
			}
			continue
		}
		out := DeviceConfig{Kind: kind, Source: c.DeepCopy(), Sharing: nc.Sharing}
		if s := out.Sharing; s != nil {
			if s.Strategy != StrategyTimeSlicing && s.Strategy != StrategyMPS {
				return DeviceConfig{}, fmt.Errorf("%w: device %s: configuration %d: unknown sharing strategy %q", ErrDeviceConfig, d.Result.Device, i, s.Strategy)
			}
			if s.Strategy == StrategyTimeSlicing && s.TimeSlicingConfig == nil && opts.TimeSlicingSettings && kind == KindGPUConfig {
				s.TimeSlicingConfig = &TimeSlicing{Interval: DefaultTimeSlice}
			}
			if s.Strategy == StrategyMPS && opts.ConsumableShares {
				return DeviceConfig{}, fmt.Errorf("%w: device %s: MPS sharing is not supported when consumable shares is enabled", ErrDeviceConfig, d.Result.Device)
			}
		}
		return out, nil
	}
	return DeviceConfig{Kind: kind}, nil
}

// CheckShared says whether a device already prepared for one claim with
// existing may be prepared for another with incoming, under consumable
// shares: NVIDIA's driver (validateNoOverlappingPreparedDevices) requires
// the two normalised configurations to be equal, since one device runs
// one sharing setup. The error wraps ErrDeviceConfig.
func CheckShared(device string, existing, incoming DeviceConfig) error {
	if existing.Kind != incoming.Kind || !reflect.DeepEqual(canonical(existing.Sharing), canonical(incoming.Sharing)) {
		return fmt.Errorf("%w: device %s has a configuration that conflicts with the claim already prepared on it", ErrDeviceConfig, device)
	}
	return nil
}

// canonical makes two sharing sections that decode alike compare equal.
func canonical(s *Sharing) any {
	if s == nil {
		return nil
	}
	var mps any
	if len(s.MPSConfig) > 0 {
		_ = json.Unmarshal(s.MPSConfig, &mps) // decoded strictly before
	}
	if s.Strategy == StrategyMPS && mps == nil {
		mps = map[string]any{} // Normalize gives an MPS strategy an empty MpsConfig
	}
	return struct {
		S string
		T *TimeSlicing
		M any
	}{s.Strategy, s.TimeSlicingConfig, mps}
}
