package inventory

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// ComputeDomainDriver is the driver name of NVIDIA's compute-domain kubelet
// plugin, which hands out IMEX channels on NVLink-fabric nodes.
const ComputeDomainDriver = "compute-domain.nvidia.com"

// Values of the type attribute of compute-domain devices.
const (
	TypeChannel = "channel"
	TypeDaemon  = "daemon"
)

// ComputeDomainSlices builds the pool NVIDIA's compute-domain kubelet plugin
// publishes for a node (cmd/compute-domain-kubelet-plugin, driver.go and
// deviceinfo.go at the commit named in doc.go): one slice with the IMEX
// channel device "channel-0" and the IMEX daemon device "daemon-0", each with
// a string attribute type ("channel", "daemon") and an int attribute id (0).
// The other IMEX channels (the plugin counts 2048) are not published per
// node; ComputeDomain objects hand them out through the control plane. The
// devices do not depend on anything NVML reports; whether a node runs the
// plugin does (an NVLink fabric with IMEX). Devices are sorted by name; the
// plugin walks a map, whose order is not defined. With opts.HostManagedIMEX
// (the plugin's hostManaged IMEX mode, in which the node's administrator runs
// the IMEX daemon) the daemon device is left out, as
// computeDomainPublishedDevices in cmd/compute-domain-kubelet-plugin/driver.go
// leaves it out: daemon claims are never valid in that mode.
//
// opts.NodeName names the node and pool; opts.Driver defaults to
// ComputeDomainDriver and opts.Generation to 1; Mode and Taints do not apply.
func ComputeDomainSlices(opts Options) ([]*resourceapi.ResourceSlice, error) {
	if opts.Driver == "" {
		opts.Driver = ComputeDomainDriver
	}
	if opts.Generation == 0 {
		opts.Generation = 1
	}
	var errs field.ErrorList
	if opts.NodeName == "" {
		errs = append(errs, field.Required(field.NewPath("nodeName"), "the node name is also the pool name"))
	}
	if opts.Generation < 0 {
		errs = append(errs, field.Invalid(field.NewPath("generation"), opts.Generation, "must not be negative"))
	}
	if len(opts.Taints) > 0 || (opts.Mode != "" && opts.Mode != ModeGPU) || opts.ConsumableShares != "" ||
		opts.ListAttributes || opts.FabricManagerPartitioning {
		errs = append(errs, field.Forbidden(field.NewPath("mode"), "compute-domain devices have no modes, taints, shares or GPU attributes"))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: node %q: %w", ErrInvalidNode, opts.NodeName, errs.ToAggregate())
	}
	dev := func(typ string) resourceapi.Device {
		return resourceapi.Device{
			Name: typ + "-0",
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				AttrType: {StringValue: ptr.To(typ)},
				"id":     {IntValue: ptr.To(int64(0))},
			},
		}
	}
	s := &resourceapi.ResourceSlice{
		TypeMeta:   metav1.TypeMeta{APIVersion: resourceapi.SchemeGroupVersion.String(), Kind: "ResourceSlice"},
		ObjectMeta: metav1.ObjectMeta{Name: sliceName(opts.NodeName, opts.Driver, 0)},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   opts.Driver,
			NodeName: ptr.To(opts.NodeName),
			Pool:     resourceapi.ResourcePool{Name: opts.NodeName, Generation: opts.Generation, ResourceSliceCount: 1},
			Devices:  []resourceapi.Device{dev(TypeChannel)},
		},
	}
	if !opts.HostManagedIMEX {
		s.Spec.Devices = append(s.Spec.Devices, dev(TypeDaemon))
	}
	if errs := ValidateSlice(s); len(errs) > 0 {
		return nil, fmt.Errorf("%w: node %q: slice %s would be invalid: %w", ErrInvalidNode, opts.NodeName, s.Name, errs.ToAggregate())
	}
	return []*resourceapi.ResourceSlice{s}, nil
}
