// Package claim is what a DRA driver needs to know about a ResourceClaim
// after it is allocated: whether the pod may bind, the per-device status the
// driver writes, and the devices and configurations NodePrepareResources must
// set up.
//
//   - CheckBinding decides, from allocated claims, what kube-scheduler's
//     dynamicresources plugin does in PreBind: bind now, wait for binding
//     conditions, or give up so that the pod is scheduled again (a binding
//     failure condition is True, or the binding timeout passed).
//   - DeviceStatus, NetworkData and SetDeviceStatus build the entries of
//     status.devices; ValidateDeviceStatuses checks them as the API server
//     does; NetworkInterfaces reads the interfaces and IPs of a pod's network
//     devices back.
//   - Prepare lists the devices a claim allocated for one driver with the
//     opaque configurations that apply to each, class configuration first, as
//     a kubelet plugin needs them.
//   - SelectConfig picks, for one prepared device, the configuration NVIDIA's
//     gpu-kubelet-plugin applies (GpuConfig, MigDeviceConfig, VfioDeviceConfig
//     with their time-slicing or MPS sharing), as that driver chooses it;
//     CheckShared says whether two claims sharing a device by consumable
//     capacity configure it alike, as that driver requires.
//   - BuildDeviceMetadata builds the device metadata documents (the alpha
//     Downward API for DRA devices, metadata.resource.k8s.io DeviceMetadata)
//     a driver writes per request, with their container and host paths, as
//     k8s.io/dynamic-resource-allocation/kubeletplugin does;
//     EncodeDeviceMetadata writes them as that package's JSON stream, one
//     document per apiVersion; ParseDeviceMetadata reads one back strictly.
//     The types DeviceMetadata, DeviceMetadataRequest and MetadataDevice
//     marshal to the JSON of upstream's api/metadata/v1beta1.
//
// Inputs are never modified; errors name the claim and the field.
//
// Imports: the Kubernetes API types (k8s.io/api), apimachinery, k8s.io/utils,
// sigs.k8s.io/json (strict decoding) and, of dralloc, only allocator/validation
// (the one validation of status.devices, which imports nothing of the
// allocator itself).
package claim
