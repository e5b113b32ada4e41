package nvml

import (
	"errors"
	"fmt"
	"math"
	"slices"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/dralloc/dralloc/inventory"
)

// readProfiles asks for every GPU-instance profile ID directly; IDs the GPU
// does not have answer NOT_SUPPORTED or INVALID_ARGUMENT and are skipped.
func readProfiles(dev gonvml.Device, memoryBytes int64, what string, u *unknowns) []inventory.MIGProfile {
	var out []inventory.MIGProfile
	for id := range gonvml.GPU_INSTANCE_PROFILE_COUNT {
		pw := fmt.Sprintf("%s.migProfiles[id=%d]", what, id)
		info, err := call(func() (gonvml.GpuInstanceProfileInfo, gonvml.Return) { return dev.GetGpuInstanceProfileInfo(id) })
		if err != nil {
			if ret, ok := err.(gonvml.Return); !ok || ret != gonvml.ERROR_INVALID_ARGUMENT {
				u.add(pw, err)
			}
			continue
		}
		if info.SliceCount == 0 {
			continue
		}
		placements, err := call(func() ([]gonvml.GpuInstancePlacement, gonvml.Return) {
			return dev.GetGpuInstancePossiblePlacements(&info)
		})
		if err != nil {
			u.add(pw+".placements", err)
			continue
		}
		p := inventory.MIGProfile{
			Name:            profileName(id, info, memoryBytes),
			GIProfileID:     id,
			SliceCount:      int(info.SliceCount),
			InstanceCount:   int(info.InstanceCount),
			Multiprocessors: int64(info.MultiprocessorCount),
			CopyEngines:     int64(info.CopyEngineCount),
			Decoders:        int64(info.DecoderCount),
			Encoders:        int64(info.EncoderCount),
			JPEGEngines:     int64(info.JpegCount),
			OFAEngines:      int64(info.OfaCount),
			MemoryBytes:     clampInt64(info.MemorySizeMB * 1024 * 1024), // NVML's "MB" is MiB
		}
		for _, pl := range placements {
			p.Placements = append(p.Placements, inventory.Placement{Start: int(pl.Start), Size: int(pl.Size)})
		}
		out = append(out, p)
	}
	return out
}

// profileName names a profile as NVIDIA's driver does, through go-nvlib's
// MigProfileInfo.String (pkg/nvlib/device/mig_profile.go, v0.10.0):
// "<slices>g.<GB>gb" plus a suffix for the media-engine and graphics
// variants, where GB is the profile's share of the GPU's memory rounded up to
// eighths, times the GPU's memory in GiB rounded up, rounded to the nearest
// integer (getMigMemorySizeGB). The name NVML itself gives is not used, so that
// the profile attribute and the device names are the ones NVIDIA publishes.
func profileName(id int, info gonvml.GpuInstanceProfileInfo, gpuMemoryBytes int64) string {
	return fmt.Sprintf("%dg.%dgb%s", info.SliceCount, migMemoryGB(info.MemorySizeMB, gpuMemoryBytes), profileSuffix(id))
}

// migMemoryGB is go-nvlib's getMigMemorySizeGB.
func migMemoryGB(memorySizeMiB uint64, gpuMemoryBytes int64) int64 {
	const mib, gib = 1 << 20, 1 << 30
	if gpuMemoryBytes <= 0 {
		return int64(math.Ceil(float64(memorySizeMiB) / 1024))
	}
	share := float64(memorySizeMiB) * mib / float64(gpuMemoryBytes)
	share = math.Ceil(share*8) / 8
	totalGB := float64((gpuMemoryBytes + gib - 1) / gib)
	return int64(math.Round(share * totalGB))
}

func profileSuffix(id int) string {
	switch id {
	case gonvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1, gonvml.GPU_INSTANCE_PROFILE_2_SLICE_REV1:
		return "+me"
	case gonvml.GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME, gonvml.GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME:
		return "+me.all"
	case gonvml.GPU_INSTANCE_PROFILE_1_SLICE_NO_ME, gonvml.GPU_INSTANCE_PROFILE_2_SLICE_NO_ME:
		return "-me"
	case gonvml.GPU_INSTANCE_PROFILE_1_SLICE_GFX, gonvml.GPU_INSTANCE_PROFILE_2_SLICE_GFX,
		gonvml.GPU_INSTANCE_PROFILE_3_SLICE_GFX, gonvml.GPU_INSTANCE_PROFILE_4_SLICE_GFX:
		return "+gfx"
	default:
		return ""
	}
}

// readMIGDevices lists the MIG devices that exist as NVIDIA's driver does
// (getMigDevices through walkMigDevices, cmd/gpu-kubelet-plugin/nvlib.go):
// one per MIG device handle, located by its GPU instance's profile and
// placement. NVML has a MIG device handle for each compute instance, so a GPU
// instance without one is no MIG device: nothing can run on it, the driver
// publishes nothing for it, and a claim allocated a device for it would fail
// at prepare. Several compute instances of one GPU instance are listed once,
// with the first handle's UUID: the driver keys its devices by name, which
// for compute instances as large as their GPU instance is the GPU
// instance's. Smaller compute instances, which the driver names by their
// own profile ("1c.3g.40gb"), are not modelled.
func readMIGDevices(dev gonvml.Device, profiles []inventory.MIGProfile, what string, u *unknowns) []inventory.MIGDevice {
	n, err := call(dev.GetMaxMigDeviceCount)
	if err != nil {
		u.add(what+".migDevices", err)
		return nil
	}
	known := map[int]bool{}
	for _, p := range profiles {
		known[p.GIProfileID] = true
	}
	seen := map[int]bool{} // GPU-instance IDs
	var out []inventory.MIGDevice
	for i := range n {
		w := fmt.Sprintf("%s.migDevices[%d]", what, i)
		mig, err := call(func() (gonvml.Device, gonvml.Return) { return dev.GetMigDeviceHandleByIndex(i) })
		if errors.Is(err, gonvml.ERROR_NOT_FOUND) || errors.Is(err, gonvml.ERROR_INVALID_ARGUMENT) {
			continue // an empty slot, skipped by the driver too
		}
		if err == nil && mig == nil {
			err = errors.New("nil device")
		}
		if err != nil {
			u.add(w, err)
			continue
		}
		giID, err := call(mig.GetGpuInstanceId)
		if err != nil {
			u.add(w+".gpuInstanceID", err)
			continue
		}
		if seen[giID] {
			continue
		}
		gi, err := call(func() (gonvml.GpuInstance, gonvml.Return) { return dev.GetGpuInstanceById(giID) })
		if err == nil && gi == nil {
			err = errors.New("nil GPU instance")
		}
		if err != nil {
			u.add(fmt.Sprintf("%s: GPU instance %d", w, giID), err)
			continue
		}
		info, err := call(gi.GetInfo)
		if err != nil {
			u.add(fmt.Sprintf("%s: GPU instance %d", w, giID), err)
			continue
		}
		if !known[int(info.ProfileId)] {
			u.add(w, fmt.Errorf("GPU instance %d has profile %d, which is not among the GPU's profiles", giID, info.ProfileId))
			continue
		}
		uuid, err := call(mig.GetUUID)
		u.add(w+".uuid", err)
		seen[giID] = true
		out = append(out, inventory.MIGDevice{
			UUID:          uuid,
			GIProfileID:   int(info.ProfileId),
			GPUInstanceID: giID,
			Placement:     inventory.Placement{Start: int(info.Placement.Start), Size: int(info.Placement.Size)},
		})
	}
	slices.SortFunc(out, func(a, b inventory.MIGDevice) int { return a.Placement.Start - b.Placement.Start })
	return out
}
