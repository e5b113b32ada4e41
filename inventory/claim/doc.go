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
//
// Inputs are never modified; errors name the claim and the field.
//
// Imports: only the Kubernetes API types (k8s.io/api), apimachinery and
// k8s.io/utils; no other dralloc package, in particular not the allocator.
package claim
