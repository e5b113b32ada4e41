package nvml

import (
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

// readMIGDevices lists the GPU instances that exist, per profile, with their
// placements, and the UUIDs of the MIG devices on them where NVML gives them.
func readMIGDevices(dev gonvml.Device, profiles []inventory.MIGProfile, what string, u *unknowns) []inventory.MIGDevice {
	uuids := migUUIDs(dev, what, u)
	var out []inventory.MIGDevice
	for _, p := range profiles {
		info, err := call(func() (gonvml.GpuInstanceProfileInfo, gonvml.Return) {
			return dev.GetGpuInstanceProfileInfo(p.GIProfileID)
		})
		if err != nil {
			continue // read a moment ago; reported then if it failed
		}
		gis, err := call(func() ([]gonvml.GpuInstance, gonvml.Return) { return dev.GetGpuInstances(&info) })
		if err != nil {
			u.add(fmt.Sprintf("%s.migDevices[profile=%s]", what, p.Name), err)
			continue
		}
		for _, gi := range gis {
			gii, err := call(gi.GetInfo)
			if err != nil {
				u.add(fmt.Sprintf("%s.migDevices[profile=%s]", what, p.Name), err)
				continue
			}
			out = append(out, inventory.MIGDevice{
				UUID:          uuids[int(gii.Id)],
				GIProfileID:   p.GIProfileID,
				GPUInstanceID: int(gii.Id),
				Placement:     inventory.Placement{Start: int(gii.Placement.Start), Size: int(gii.Placement.Size)},
			})
		}
	}
	slices.SortFunc(out, func(a, b inventory.MIGDevice) int { return a.Placement.Start - b.Placement.Start })
	return out
}

// migUUIDs maps GPU-instance IDs to MIG device UUIDs.
func migUUIDs(dev gonvml.Device, what string, u *unknowns) map[int]string {
	out := map[int]string{}
	n, err := call(dev.GetMaxMigDeviceCount)
	if err != nil {
		u.add(what+".migDevices.uuid", err)
		return out
	}
	for i := range n {
		mig, err := call(func() (gonvml.Device, gonvml.Return) { return dev.GetMigDeviceHandleByIndex(i) })
		if err != nil || mig == nil {
			continue // an empty slot answers NOT_FOUND
		}
		gi, err := call(mig.GetGpuInstanceId)
		if err != nil {
			u.add(fmt.Sprintf("%s.migDevices[%d].uuid", what, i), err)
			continue
		}
		uuid, err := call(mig.GetUUID)
		if err != nil {
			u.add(fmt.Sprintf("%s.migDevices[%d].uuid", what, i), err)
			continue
		}
		out[gi] = uuid
	}
	return out
}
