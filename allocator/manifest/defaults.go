package manifest

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Default returns a copy of obj with the defaults kube-apiserver 1.37 applies when it is created; obj
// itself is not changed. The resource.k8s.io/v1 defaults are those of k8s.io/kubernetes
// pkg/apis/resource/v1 (defaults.go and the generated zz_generated.defaults.go), applied wherever the
// defaulted types occur:
//
//   - ResourceClaim and ResourceClaimTemplate: spec.devices.requests[].exactly and every
//     firstAvailable[] subrequest get allocationMode ExactCount when it is empty and count 1 when the
//     mode is ExactCount and count is 0; the operator of their tolerations, and of the tolerations in
//     a claim's status.allocation.devices.results[], becomes Equal when it is empty.
//   - ResourceSlice spec.devices[].taints[] and DeviceTaintRule spec.taint: timeAdded becomes now
//     when it is unset. kube-apiserver takes the time of the request; Default takes now, and leaves
//     timeAdded unset when now is the zero time, so that the same input always gives the same output.
//     (For a DeviceTaintRule kube-apiserver's update strategy also moves timeAdded to the time of an
//     update that changes the effect; that is not a default and Default does not do it.)
//   - DeviceClass has no defaulted field.
//   - A scheduling.k8s.io PodGroup's spec.disruptionMode becomes {single: {}} when unset (its
//     +default marker); nothing else of PodGroups and Workloads is defaulted. Their priority and
//     preemptionPolicy are set by admission, not by defaults, and are left alone.
//
// What kube-apiserver's strategies do on create (a new ResourceClaim's or DeviceTaintRule's status is
// cleared, metadata.generation becomes 1) is not applied: manifests read from a cluster carry the
// status the cluster has.
//
// Pods get the defaults of the pod create path that bear on scheduling (the package doc lists every
// step): SetDefaults_Pod's requests from limits and, on the host's network, hostPort from
// containerPort; spec.schedulerName "default-scheduler"; a container port's protocol TCP; every
// quantity rounded up to thousandths; then the pod-level requests and limits PrepareForCreate
// derives (DefaultPodLevelResources). The defaults that do not bear on scheduling (restartPolicy,
// dnsPolicy, image pull policy, ...) are not applied, nor is admission, which needs other objects
// (the loader admits pods once it has read them all). Other kinds (Nodes, RuntimeClasses) are
// returned as copies without change.
func Default(obj runtime.Object, now time.Time) runtime.Object {
	obj = obj.DeepCopyObject()
	defaultInPlace(obj, now)
	return obj
}

// defaultInPlace applies Default's defaults to obj itself, for the loader, which owns what it decoded:
// copying every object before defaulting it cost a tenth of loading a dump of 5,000 ResourceSlices.
func defaultInPlace(obj runtime.Object, now time.Time) {
	switch obj := obj.(type) {
	case *resourceapi.ResourceClaim:
		defaultClaimSpec(&obj.Spec)
		if obj.Status.Allocation != nil {
			for i := range obj.Status.Allocation.Devices.Results {
				defaultTolerations(obj.Status.Allocation.Devices.Results[i].Tolerations)
			}
		}
	case *resourceapi.ResourceClaimTemplate:
		defaultClaimSpec(&obj.Spec.Spec)
	case *resourceapi.ResourceSlice:
		for i := range obj.Spec.Devices {
			for j := range obj.Spec.Devices[i].Taints {
				defaultTaint(&obj.Spec.Devices[i].Taints[j], now)
			}
		}
	case *resourceapi.DeviceTaintRule:
		defaultTaint(&obj.Spec.Taint, now)
	case *schedulingapi.PodGroup:
		if obj.Spec.DisruptionMode == nil {
			obj.Spec.DisruptionMode = &schedulingapi.DisruptionMode{Single: &schedulingapi.SingleDisruptionMode{}}
		}
	case *corev1.Pod:
		defaultPod(obj)
	}
}

func defaultClaimSpec(spec *resourceapi.ResourceClaimSpec) {
	for i := range spec.Devices.Requests {
		req := &spec.Devices.Requests[i]
		if req.Exactly != nil {
			defaultMode(&req.Exactly.AllocationMode, &req.Exactly.Count)
			defaultTolerations(req.Exactly.Tolerations)
		}
		for j := range req.FirstAvailable {
			sub := &req.FirstAvailable[j]
			defaultMode(&sub.AllocationMode, &sub.Count)
			defaultTolerations(sub.Tolerations)
		}
	}
}

// defaultMode is SetDefaults_ExactDeviceRequest and SetDefaults_DeviceSubRequest.
func defaultMode(mode *resourceapi.DeviceAllocationMode, count *int64) {
	if *mode == "" {
		*mode = resourceapi.DeviceAllocationModeExactCount
	}
	if *mode == resourceapi.DeviceAllocationModeExactCount && *count == 0 {
		*count = 1
	}
}

// defaultTolerations applies the +default="Equal" of DeviceToleration.operator.
func defaultTolerations(tolerations []resourceapi.DeviceToleration) {
	for i := range tolerations {
		if tolerations[i].Operator == "" {
			tolerations[i].Operator = resourceapi.DeviceTolerationOpEqual
		}
	}
}

// defaultTaint is SetDefaults_DeviceTaint, with the time given instead of read from the clock. Like
// kube-apiserver, it keeps whole seconds, the resolution that survives encoding.
func defaultTaint(taint *resourceapi.DeviceTaint, now time.Time) {
	if taint.TimeAdded == nil && !now.IsZero() {
		taint.TimeAdded = &metav1.Time{Time: now.Truncate(time.Second)}
	}
}
