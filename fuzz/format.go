package fuzz

import (
	"encoding/json"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/dralloc/dralloc/allocator/verify"
)

// String returns the cluster as a multi-document YAML stream, as `kubectl get -o yaml` writes objects: the
// nodes, ResourceSlices, DeviceClasses, DeviceTaintRules, allocated claims and pending claims, each with its
// kind and apiVersion, separated by "---". Comments at the top name the node the claims are for and the feature
// gates; the stream reads back with allocator/manifest (or kubectl), so a failing case can be replayed with
// dractl. A drawn value that is not an object (a nil entry) is written as a comment.
func (c *Cluster) String() string {
	if c == nil {
		return "# nil cluster\n"
	}
	var b strings.Builder
	if c.Node != nil {
		fmt.Fprintf(&b, "# node: %s\n", c.Node.Name)
	}
	fmt.Fprintf(&b, "# features: %s\n", featureList(c.Gates()))
	write := func(what string, gvk string, obj runtime.Object, isNil bool) {
		b.WriteString("---\n")
		if isNil {
			fmt.Fprintf(&b, "# nil %s\n", what)
			return
		}
		obj = obj.DeepCopyObject()
		apiVersion, kind, _ := strings.Cut(gvk, ",")
		setKind(obj, apiVersion, kind) // objects built in Go have no TypeMeta; set it on the copy
		var out []byte
		var err error
		if n, ok := obj.(*v1.Node); ok {
			out, err = nodeYAML(n)
		} else {
			out, err = yaml.Marshal(obj)
		}
		if err != nil {
			fmt.Fprintf(&b, "# %s: %v\n", what, err)
			return
		}
		fmt.Fprintf(&b, "# %s\n", what)
		b.Write(out)
	}
	for _, n := range c.Nodes {
		write("node", "v1,Node", n, n == nil)
	}
	for _, s := range c.Slices {
		write("ResourceSlice", "resource.k8s.io/v1,ResourceSlice", s, s == nil)
	}
	for _, cl := range c.Classes {
		write("DeviceClass", "resource.k8s.io/v1,DeviceClass", cl, cl == nil)
	}
	for _, r := range c.TaintRules {
		write("DeviceTaintRule", "resource.k8s.io/v1,DeviceTaintRule", r, r == nil)
	}
	for _, cl := range c.Allocated {
		write("allocated claim", "resource.k8s.io/v1,ResourceClaim", cl, cl == nil)
	}
	for _, cl := range c.Claims {
		write("pending claim", "resource.k8s.io/v1,ResourceClaim", cl, cl == nil)
	}
	return b.String()
}

// GoString is String, so that the draws rapid logs for a failing case (it prints them with %#v) read as
// YAML instead of pointer addresses.
func (c *Cluster) GoString() string { return c.String() }

// nodeYAML writes a node without the empty fields of its status: v1.NodeStatus holds structs that JSON writes
// even when nothing is set (nodeInfo, daemonEndpoints), which only a kubelet fills in.
func nodeYAML(n *v1.Node) ([]byte, error) {
	raw, err := json.Marshal(n)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if st, ok := m["status"].(map[string]any); ok && pruneEmpty(st) {
		delete(m, "status")
	}
	return yaml.Marshal(m)
}

// pruneEmpty removes empty strings, zeros and empty maps from m, recursively, and reports whether m is empty then.
func pruneEmpty(m map[string]any) bool {
	for k, v := range m {
		switch v := v.(type) {
		case map[string]any:
			if pruneEmpty(v) {
				delete(m, k)
			}
		case string:
			if v == "" {
				delete(m, k)
			}
		case float64:
			if v == 0 {
				delete(m, k)
			}
		}
	}
	return len(m) == 0
}

// setKind fills in the TypeMeta of the kinds a cluster holds.
func setKind(obj runtime.Object, apiVersion, kind string) {
	switch o := obj.(type) {
	case *v1.Node:
		o.APIVersion, o.Kind = apiVersion, kind
	case *resourceapi.ResourceSlice:
		o.APIVersion, o.Kind = apiVersion, kind
	case *resourceapi.DeviceClass:
		o.APIVersion, o.Kind = apiVersion, kind
	case *resourceapi.DeviceTaintRule:
		o.APIVersion, o.Kind = apiVersion, kind
	case *resourceapi.ResourceClaim:
		o.APIVersion, o.Kind = apiVersion, kind
	}
}

// featureList names the gates that are on, in the order of the fields of gates.Features, or "none".
func featureList(f verify.Features) string {
	var on []string
	for _, g := range []struct {
		name string
		on   bool
	}{
		{"DRAAdminAccess", f.DRAAdminAccess},
		{"DRAPrioritizedList", f.DRAPrioritizedList},
		{"DRADeviceTaints", f.DRADeviceTaints},
		{"DRAPartitionableDevices", f.DRAPartitionableDevices},
		{"DRAConsumableCapacity", f.DRAConsumableCapacity},
		{"DRAFractionalCapacityRange", f.DRAFractionalCapacityRange},
		{"DRADeviceBindingConditions", f.DRADeviceBindingConditions},
		{"DRAResourceClaimDeviceStatus", f.DRAResourceClaimDeviceStatus},
		{"DRAListTypeAttributes", f.DRAListTypeAttributes},
		{"DRAOptionalNodeOperations", f.DRAOptionalNodeOperations},
		{"DRADerivedAttributes", f.DRADerivedAttributes},
		{"DRADeviceCompatibilityGroups", f.DRADeviceCompatibilityGroups},
	} {
		if g.on {
			on = append(on, g.name)
		}
	}
	if len(on) == 0 {
		return "none"
	}
	return strings.Join(on, ",")
}
