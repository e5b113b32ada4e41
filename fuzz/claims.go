package fuzz

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"pgregory.net/rapid"
)

// Namespace is the namespace of every generated claim.
const Namespace = "default"

// drawClaims draws pending claims. Classes that select no published device (the NIC class without a NIC pool)
// are left out, so that most claims have a chance to fit.
func drawClaims(t *rapid.T, opts Options, classes []*resourceapi.DeviceClass, slices []*resourceapi.ResourceSlice) []*resourceapi.ResourceClaim {
	nics := false
	for _, s := range slices {
		nics = nics || (s.Spec.Driver == NICDriver && len(s.Spec.Devices) > 0)
	}
	usable := classes
	if !nics {
		usable = nil
		for _, c := range classes {
			if c.Name != ClassNIC {
				usable = append(usable, c)
			}
		}
	}
	n := rapid.IntRange(1, opts.MaxClaims).Draw(t, "claims")
	claims := make([]*resourceapi.ResourceClaim, n)
	for i := range claims {
		claims[i] = drawClaim(t, opts, usable, nics, fmt.Sprintf("claim-%d", i))
	}
	return claims
}

func classNames(classes []*resourceapi.DeviceClass) []string {
	names := make([]string, len(classes))
	for i, c := range classes {
		names[i] = c.Name
	}
	return names
}

func drawClaim(t *rapid.T, opts Options, classes []*resourceapi.DeviceClass, nics bool, name string) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{}
	c.Name = name
	c.Namespace = Namespace
	c.UID = types.UID("uid-" + name)
	names := classNames(classes)
	nReq := rapid.IntRange(1, opts.MaxRequests).Draw(t, "requests")
	var refs []string // request and subrequest names constraints and config may refer to
	for r := 0; r < nReq; r++ {
		req := resourceapi.DeviceRequest{Name: fmt.Sprintf("req-%d", r)}
		refs = append(refs, req.Name)
		if opts.MIG && opts.FirstAvailable && hasClass(names, ClassGPU) && rapid.IntRange(0, 2).Draw(t, "wholeElseMIG") == 0 {
			req.FirstAvailable = wholeElseMIG(t)
			for _, sub := range req.FirstAvailable {
				refs = append(refs, req.Name+"/"+sub.Name)
			}
		} else if opts.FirstAvailable && rapid.IntRange(0, 2).Draw(t, "firstAvailable") == 0 {
			nSub := rapid.IntRange(1, 3).Draw(t, "subrequests")
			for s := 0; s < nSub; s++ {
				e := drawExact(t, opts, names, nics, false)
				sub := resourceapi.DeviceSubRequest{
					Name:            fmt.Sprintf("sub-%d", s),
					DeviceClassName: e.DeviceClassName,
					Selectors:       e.Selectors,
					AllocationMode:  e.AllocationMode,
					Count:           e.Count,
					Tolerations:     e.Tolerations,
					Capacity:        e.Capacity,
				}
				req.FirstAvailable = append(req.FirstAvailable, sub)
				refs = append(refs, req.Name+"/"+sub.Name)
			}
		} else {
			req.Exactly = drawExact(t, opts, names, nics, opts.AdminAccess)
		}
		c.Spec.Devices.Requests = append(c.Spec.Devices.Requests, req)
	}
	if opts.Constraints {
		n := rapid.IntRange(0, 2).Draw(t, "constraints")
		for i := 0; i < n; i++ {
			var con resourceapi.DeviceConstraint
			if rapid.Bool().Draw(t, "constraintScoped") {
				con.Requests = []string{rapid.SampledFrom(refs).Draw(t, "constraintRequest")}
				if other := rapid.SampledFrom(refs).Draw(t, "constraintRequest2"); other != con.Requests[0] && !sameRequest(other, con.Requests[0]) {
					con.Requests = append(con.Requests, other)
				}
			}
			attrs := []string{"gpu.example.com/model", "gpu.example.com/numa", "gpu.example.com/driverVersion", "nic.example.com/zone"}
			if opts.ListAttributes {
				attrs = append(attrs, "gpu.example.com/links")
			}
			attr := resourceapi.FullyQualifiedName(rapid.SampledFrom(attrs).Draw(t, "constraintAttribute"))
			if rapid.Bool().Draw(t, "distinct") {
				con.DistinctAttribute = &attr
			} else {
				con.MatchAttribute = &attr
			}
			c.Spec.Devices.Constraints = append(c.Spec.Devices.Constraints, con)
		}
	}
	if opts.DerivedAttributes && rapid.Bool().Draw(t, "derived") {
		addDerived(t, c)
	}
	if opts.Config && rapid.Bool().Draw(t, "claimConfig") {
		cfg := resourceapi.DeviceClaimConfiguration{DeviceConfiguration: opaque(GPUDriver, `{"partition":"auto"}`)}
		if rapid.Bool().Draw(t, "claimConfigScoped") {
			cfg.Requests = []string{rapid.SampledFrom(refs).Draw(t, "configRequest")}
		}
		c.Spec.Devices.Config = append(c.Spec.Devices.Config, cfg)
	}
	return c
}

// wholeElseMIG asks for one or two whole GPUs, else MIG devices of one profile, else (sometimes) MIG
// devices of a smaller one, as a workload that can run on less when a whole GPU is not free.
func wholeElseMIG(t *rapid.T) []resourceapi.DeviceSubRequest {
	sub := func(name, profile string, count int64) resourceapi.DeviceSubRequest {
		return resourceapi.DeviceSubRequest{Name: name, DeviceClassName: ClassGPU, AllocationMode: resourceapi.DeviceAllocationModeExactCount,
			Count: count, Selectors: []resourceapi.DeviceSelector{cel(migProfileSelector(profile))}}
	}
	count := int64(rapid.IntRange(1, 2).Draw(t, "wholeCount"))
	subs := []resourceapi.DeviceSubRequest{
		sub("whole", "whole", count),
		sub("mig", rapid.SampledFrom([]string{"3g.40gb", "2g.20gb", "1g.10gb"}).Draw(t, "migProfile"), int64(rapid.IntRange(1, 3).Draw(t, "migCount"))),
	}
	if rapid.Bool().Draw(t, "smaller") {
		subs = append(subs, sub("smaller", "1g.10gb", int64(rapid.IntRange(1, 2).Draw(t, "smallerCount"))))
	}
	return subs
}

func hasClass(names []string, class string) bool {
	for _, n := range names {
		if n == class {
			return true
		}
	}
	return false
}

// sameRequest reports whether two request references name the same top-level request, which API validation
// forbids listing together in one constraint when one of them is a subrequest.
func sameRequest(a, b string) bool {
	top := func(s string) string {
		for i := range s {
			if s[i] == '/' {
				return s[:i]
			}
		}
		return s
	}
	return top(a) == top(b)
}

func drawExact(t *rapid.T, opts Options, classes []string, nics, admin bool) *resourceapi.ExactDeviceRequest {
	e := &resourceapi.ExactDeviceRequest{DeviceClassName: rapid.SampledFrom(classes).Draw(t, "class")}
	var palette []string
	switch e.DeviceClassName {
	case ClassGPU, ClassA100:
		palette = gpuSelectors
	case ClassNIC:
		palette = nicSelectors
	default:
		palette = anySelectors
		if !nics {
			palette = palette[:1]
		}
		if opts.CELErrors {
			palette = append(palette, failingSelectors...)
		}
	}
	if rapid.IntRange(0, 2).Draw(t, "hasSelector") == 0 {
		e.Selectors = []resourceapi.DeviceSelector{cel(rapid.SampledFrom(palette).Draw(t, "selector"))}
	}
	e.AllocationMode = resourceapi.DeviceAllocationModeExactCount
	if opts.AllMode && rapid.IntRange(0, 6).Draw(t, "allMode") == 0 {
		e.AllocationMode = resourceapi.DeviceAllocationModeAll
	} else {
		e.Count = int64(rapid.SampledFrom([]int{1, 1, 2}).Draw(t, "count"))
	}
	if admin && rapid.IntRange(0, 4).Draw(t, "admin") == 0 {
		e.AdminAccess = ptr.To(true)
	}
	if opts.Taints && rapid.Bool().Draw(t, "tolerates") {
		e.Tolerations = []resourceapi.DeviceToleration{drawToleration(t)}
	}
	if opts.ConsumableCapacity && (e.DeviceClassName == ClassNIC || e.DeviceClassName == ClassAny) && rapid.Bool().Draw(t, "capacityRequest") {
		e.Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{
			"bandwidth": qty(rapid.SampledFrom([]string{"5G", "10G", "30G", "60G"}).Draw(t, "bandwidth")),
		}}
		if rapid.Bool().Draw(t, "coresRequest") {
			e.Capacity.Requests["cores"] = qty(rapid.SampledFrom([]string{"250m", "1", "1500m"}).Draw(t, "cores"))
		}
	}
	if opts.ResultLimit && e.DeviceClassName == ClassNIC && e.AllocationMode == resourceapi.DeviceAllocationModeExactCount && rapid.Bool().Draw(t, "many") {
		e.Count = int64(rapid.SampledFrom([]int{16, 17, 30, 33}).Draw(t, "manyCount"))
	}
	return e
}

func drawToleration(t *rapid.T) resourceapi.DeviceToleration {
	switch rapid.IntRange(0, 3).Draw(t, "toleration") {
	case 0:
		return resourceapi.DeviceToleration{Operator: resourceapi.DeviceTolerationOpExists}
	case 1:
		return resourceapi.DeviceToleration{Key: rapid.SampledFrom(taintKeys).Draw(t, "tolKey"), Operator: resourceapi.DeviceTolerationOpExists}
	case 2:
		return resourceapi.DeviceToleration{Key: rapid.SampledFrom(taintKeys).Draw(t, "tolKey"), Operator: resourceapi.DeviceTolerationOpEqual, Value: "true", Effect: resourceapi.DeviceTaintEffectNoSchedule}
	default:
		return resourceapi.DeviceToleration{Key: rapid.SampledFrom(taintKeys).Draw(t, "tolKey"), Operator: resourceapi.DeviceTolerationOpEqual, Value: "", TolerationSeconds: ptr.To(int64(60)), Effect: resourceapi.DeviceTaintEffectNoExecute}
	}
}

// derivedAttributes are derived attributes that are safe on every GPU device.
var derivedAttributes = []resourceapi.DeviceDerivedAttribute{
	{Name: "derived/evenNuma", Expression: `device.attributes["gpu.example.com"].numa % 2 == 0`},
	{Name: "derived/family", Expression: `device.attributes["gpu.example.com"].model.substring(0, 1)`},
	{Name: "gpu.example.com/model", Expression: `device.attributes["gpu.example.com"].healthy ? "ok" : "degraded"`},
}

// addDerived gives one GPU request a derived attribute and a constraint that uses it (the API requires each derived
// attribute to be used by a constraint). The attribute shadows or extends the device's attributes for that
// request only.
func addDerived(t *rapid.T, c *resourceapi.ResourceClaim) {
	var gpuReqs []int
	for i, r := range c.Spec.Devices.Requests {
		if r.Exactly != nil && (r.Exactly.DeviceClassName == ClassGPU || r.Exactly.DeviceClassName == ClassA100) {
			gpuReqs = append(gpuReqs, i)
		}
	}
	if len(gpuReqs) == 0 {
		return
	}
	i := rapid.SampledFrom(gpuReqs).Draw(t, "derivedRequest")
	da := rapid.SampledFrom(derivedAttributes).Draw(t, "derivedAttribute")
	e := c.Spec.Devices.Requests[i].Exactly
	e.DerivedAttributes = append(e.DerivedAttributes, da)
	name := da.Name
	con := resourceapi.DeviceConstraint{}
	if rapid.Bool().Draw(t, "derivedScoped") {
		con.Requests = []string{c.Spec.Devices.Requests[i].Name}
	}
	if rapid.Bool().Draw(t, "derivedDistinct") {
		con.DistinctAttribute = &name
	} else {
		con.MatchAttribute = &name
	}
	c.Spec.Devices.Constraints = append(c.Spec.Devices.Constraints, con)
}
