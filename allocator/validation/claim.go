package validation

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dralloc/dralloc/celenv"
)

// ResourceClaim validates a ResourceClaim as kube-apiserver 1.37 does on create (ValidateResourceClaim),
// and its status.allocation when one is set, as the API server validates a new allocation on a status
// update (the allocation a scheduler would write):
//
//   - spec.devices.requests: at most 32, unique names (DNS labels); each with exactly one of exactly and
//     firstAvailable; firstAvailable with at most 8 subrequests of unique names;
//   - every request or subrequest: a device class name, at most 32 selectors that compile as new CEL
//     expressions within the estimated cost limit, allocationMode ExactCount with count > 0 or All without
//     count, at most 16 well-formed tolerations, capacity requests within capacity.ValidateQuantity (a
//     negative request is valid: the allocator raises it to the policy's minimum), derived attributes
//     used by a constraint on the request;
//   - constraints (at most 32) naming known requests ("request" or "request/subrequest"), with a fully
//     qualified matchAttribute or distinctAttribute; config entries (at most 32) naming known requests,
//     with an opaque driver configuration that is a JSON object of at most 10 KiB;
//   - status.allocation: at most 32 results naming known requests, with valid driver, pool and device
//     names, share IDs and tolerations, at most 64 config entries, a valid node selector.
//
// opts.CEL compiles the selectors; with the zero Options a shared environment for new expressions is used.
func ResourceClaim(claim *resourceapi.ResourceClaim, opts Options) field.ErrorList {
	if claim == nil {
		return field.ErrorList{field.Required(field.NewPath(""), "the object must not be nil")}
	}
	errs := objectMeta(&claim.ObjectMeta, true)
	errs = append(errs, claimSpec(field.NewPath("spec"), &claim.Spec, opts)...)
	if a := claim.Status.Allocation; a != nil {
		errs = append(errs, allocation(field.NewPath("status", "allocation"), a, requestNamesOf(&claim.Spec.Devices))...)
	}
	if len(claim.Status.Devices) > 0 {
		errs = append(errs, DeviceStatuses(claim)...)
	}
	return errs
}

// ResourceClaimTemplate validates a ResourceClaimTemplate as kube-apiserver 1.37 does on create: its
// metadata, the metadata of the claims it creates (labels and annotations) and their spec, with the rules of
// [ResourceClaim].
func ResourceClaimTemplate(tmpl *resourceapi.ResourceClaimTemplate, opts Options) field.ErrorList {
	if tmpl == nil {
		return field.ErrorList{field.Required(field.NewPath(""), "the object must not be nil")}
	}
	errs := objectMeta(&tmpl.ObjectMeta, true)
	mp := field.NewPath("spec", "metadata")
	errs = append(errs, labelsAndAnnotations(mp, tmpl.Spec.Labels, tmpl.Spec.Annotations)...)
	errs = append(errs, claimSpec(field.NewPath("spec", "spec"), &tmpl.Spec.Spec, opts)...)
	return errs
}

// requestNames maps each request to its subrequests (nil for a request with exactly).
type requestNames map[string]map[string]bool

func requestNamesOf(dc *resourceapi.DeviceClaim) requestNames {
	names := requestNames{}
	for _, r := range dc.Requests {
		if len(r.FirstAvailable) == 0 {
			names[r.Name] = nil
			continue
		}
		subs := map[string]bool{}
		for _, s := range r.FirstAvailable {
			subs[s.Name] = true
		}
		names[r.Name] = subs
	}
	return names
}

func (r requestNames) has(ref string) bool {
	req, sub, isSub := strings.Cut(ref, "/")
	subs, ok := r[req]
	if !ok {
		return false
	}
	return !isSub || subs[sub]
}

func claimSpec(p *field.Path, spec *resourceapi.ResourceClaimSpec, opts Options) field.ErrorList {
	dp := p.Child("devices")
	dc := &spec.Devices
	names := requestNamesOf(dc)
	derived := constraintAttributes(dc.Constraints)
	var errs field.ErrorList
	var derivedCost uint64

	rp := dp.Child("requests")
	if len(dc.Requests) > resourceapi.DeviceRequestsMaxSize {
		errs = append(errs, field.TooMany(rp, len(dc.Requests), resourceapi.DeviceRequestsMaxSize))
	} else {
		seen := map[string]bool{}
		for i := range dc.Requests {
			errs = append(errs, request(rp.Index(i), &dc.Requests[i], derived, &derivedCost, opts)...)
			if n := dc.Requests[i].Name; seen[n] {
				errs = append(errs, field.Duplicate(rp.Index(i), n))
			} else {
				seen[n] = true
			}
		}
	}

	cp := dp.Child("constraints")
	if len(dc.Constraints) > resourceapi.DeviceConstraintsMaxSize {
		errs = append(errs, field.TooMany(cp, len(dc.Constraints), resourceapi.DeviceConstraintsMaxSize))
	} else {
		for i, c := range dc.Constraints {
			ip := cp.Index(i)
			errs = append(errs, requestRefs(ip.Child("requests"), c.Requests, names)...)
			switch {
			case c.MatchAttribute != nil:
				errs = append(errs, fullyQualifiedName(ip.Child("matchAttribute"), *c.MatchAttribute)...)
			case c.DistinctAttribute != nil:
				errs = append(errs, fullyQualifiedName(ip.Child("distinctAttribute"), *c.DistinctAttribute)...)
			default:
				errs = append(errs, field.Required(ip, `exactly one of "matchAttribute" or "distinctAttribute" is required`))
			}
		}
	}

	fp := dp.Child("config")
	if len(dc.Config) > resourceapi.DeviceConfigMaxSize {
		errs = append(errs, field.TooMany(fp, len(dc.Config), resourceapi.DeviceConfigMaxSize))
	} else {
		for i, c := range dc.Config {
			ip := fp.Index(i)
			errs = append(errs, requestRefs(ip.Child("requests"), c.Requests, names)...)
			errs = append(errs, deviceConfig(ip, c.DeviceConfiguration)...)
		}
	}
	if derivedCost > resourceapi.DeviceClaimDerivedAttributeCELMaxCost {
		errs = append(errs, field.Forbidden(dp, "too complex, total cost of derived attribute CEL expressions in the claim exceeds cost limit"))
	}
	return errs
}

func request(p *field.Path, r *resourceapi.DeviceRequest, derived map[string]map[string]bool, derivedCost *uint64, opts Options) field.ErrorList {
	errs := dnsLabel(p.Child("name"), r.Name)
	switch {
	case r.Exactly == nil && len(r.FirstAvailable) == 0:
		errs = append(errs, field.Required(p, "exactly one of `exactly` or `firstAvailable` is required"))
	case r.Exactly != nil && len(r.FirstAvailable) > 0:
		errs = append(errs, field.Invalid(p, nil, "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set"))
	case r.Exactly != nil:
		e := r.Exactly
		ep := p.Child("exactly")
		errs = append(errs, exactRequest(ep, r.Name, e.DeviceClassName, e.Selectors, e.AllocationMode, e.Count, e.Tolerations, e.Capacity, e.DerivedAttributes, derived, derivedCost, opts)...)
	default:
		fp := p.Child("firstAvailable")
		if len(r.FirstAvailable) > resourceapi.FirstAvailableDeviceRequestMaxSize {
			return append(errs, field.TooMany(fp, len(r.FirstAvailable), resourceapi.FirstAvailableDeviceRequestMaxSize))
		}
		seen := map[string]bool{}
		for i := range r.FirstAvailable {
			s := &r.FirstAvailable[i]
			sp := fp.Index(i)
			errs = append(errs, dnsLabel(sp.Child("name"), s.Name)...)
			errs = append(errs, exactRequest(sp, r.Name+"/"+s.Name, s.DeviceClassName, s.Selectors, s.AllocationMode, s.Count, s.Tolerations, s.Capacity, s.DerivedAttributes, derived, derivedCost, opts)...)
			if seen[s.Name] {
				errs = append(errs, field.Duplicate(sp, s.Name))
			}
			seen[s.Name] = true
		}
	}
	return errs
}

// exactRequest validates what exactly and a subrequest share.
func exactRequest(p *field.Path, name, class string, selectors []resourceapi.DeviceSelector, mode resourceapi.DeviceAllocationMode, count int64,
	tols []resourceapi.DeviceToleration, capReq *resourceapi.CapacityRequirements, derivedAttrs []resourceapi.DeviceDerivedAttribute,
	derived map[string]map[string]bool, derivedCost *uint64, opts Options) field.ErrorList {
	errs := dnsSubdomain(p.Child("deviceClassName"), class)
	errs = append(errs, selectorList(p.Child("selectors"), selectors, opts)...)
	errs = append(errs, derivedAttributes(p.Child("derivedAttributes"), name, derivedAttrs, derived, derivedCost, opts)...)
	switch mode {
	case resourceapi.DeviceAllocationModeAll:
		if count != 0 {
			errs = append(errs, field.Invalid(p.Child("count"), count, fmt.Sprintf("must not be specified when allocationMode is '%s'", mode)))
		}
	case resourceapi.DeviceAllocationModeExactCount:
		if count <= 0 {
			errs = append(errs, field.Invalid(p.Child("count"), count, "must be greater than zero"))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("allocationMode"), mode,
			[]resourceapi.DeviceAllocationMode{resourceapi.DeviceAllocationModeAll, resourceapi.DeviceAllocationModeExactCount}))
	}
	errs = append(errs, tolerations(p.Child("tolerations"), tols)...)
	if capReq != nil {
		rp := p.Child("capacity", "requests")
		for _, n := range sortedKeys(capReq.Requests) {
			errs = append(errs, qualifiedName(rp, n)...)
			// A negative request is valid API input: the allocator raises it to the policy's minimum or
			// reports the device unsuitable.
			errs = append(errs, quantity(mapKey(rp, string(n), attributeKeyMaxLength), capReq.Requests[n])...)
		}
	}
	return errs
}

func selectorList(p *field.Path, sels []resourceapi.DeviceSelector, opts Options) field.ErrorList {
	if len(sels) > resourceapi.DeviceSelectorsMaxSize {
		return field.ErrorList{field.TooMany(p, len(sels), resourceapi.DeviceSelectorsMaxSize)}
	}
	var errs field.ErrorList
	for i, s := range sels {
		if s.CEL == nil {
			errs = append(errs, field.Required(p.Index(i).Child("cel"), ""))
			continue
		}
		_, cerrs := celExpression(p.Index(i).Child("cel", "expression"), s.CEL.Expression, false, opts)
		errs = append(errs, cerrs...)
	}
	return errs
}

// celExpression compiles an expression as the API server compiles new ones and refuses it when its
// estimated worst-case cost exceeds resourceapi.CELSelectorExpressionMaxCost (for derived attributes also
// DeviceClaimDerivedAttributeCELMaxCost). It returns the estimate.
func celExpression(p *field.Path, expr string, derived bool, opts Options) (uint64, field.ErrorList) {
	if len(expr) > resourceapi.CELSelectorExpressionMaxLength {
		return 0, field.ErrorList{field.TooLong(p, "", resourceapi.CELSelectorExpressionMaxLength)}
	}
	env, err := opts.env()
	if err != nil {
		return 0, field.ErrorList{field.InternalError(p, fmt.Errorf("create CEL environment: %w", err))}
	}
	var cost uint64
	if derived {
		d, err := env.CompileDerived(expr)
		if err != nil {
			return 0, field.ErrorList{celError(p, expr, err)}
		}
		cost = d.MaxCost()
		if cost > min(resourceapi.CELSelectorExpressionMaxCost, resourceapi.DeviceClaimDerivedAttributeCELMaxCost) {
			return cost, field.ErrorList{field.Forbidden(p, "too complex, exceeds cost limit")}
		}
		return cost, nil
	}
	s, err := env.Compile(expr)
	if err != nil {
		return 0, field.ErrorList{celError(p, expr, err)}
	}
	if cost = s.MaxCost(); cost > resourceapi.CELSelectorExpressionMaxCost {
		return cost, field.ErrorList{field.Forbidden(p, "too complex, exceeds cost limit")}
	}
	return cost, nil
}

func celError(p *field.Path, expr string, err error) *field.Error {
	var ce *celenv.CompileError
	if errors.As(err, &ce) {
		if strings.TrimSpace(expr) == "" {
			return field.Required(p, "")
		}
		return field.Invalid(p, expr, ce.Detail)
	}
	return field.InternalError(p, err)
}

// constraintAttributes maps a request reference ("" for constraints on all requests) to the attributes its
// constraints name.
func constraintAttributes(cs []resourceapi.DeviceConstraint) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	add := func(req, attr string) {
		if out[req] == nil {
			out[req] = map[string]bool{}
		}
		out[req][attr] = true
	}
	for _, c := range cs {
		var attr string
		switch {
		case c.MatchAttribute != nil:
			attr = string(*c.MatchAttribute)
		case c.DistinctAttribute != nil:
			attr = string(*c.DistinctAttribute)
		default:
			continue
		}
		if len(c.Requests) == 0 {
			add("", attr)
		}
		for _, r := range c.Requests {
			add(r, attr)
		}
	}
	return out
}

// derivedAttributes: unique names that a constraint on the request (or its parent, or all requests) uses,
// expressions that compile within the cost limits.
func derivedAttributes(p *field.Path, request string, attrs []resourceapi.DeviceDerivedAttribute, used map[string]map[string]bool, total *uint64, opts Options) field.ErrorList {
	if len(attrs) > resourceapi.DeviceDerivedAttributesMaxSize {
		return field.ErrorList{field.TooMany(p, len(attrs), resourceapi.DeviceDerivedAttributesMaxSize)}
	}
	var errs field.ErrorList
	seen := map[resourceapi.FullyQualifiedName]bool{}
	parent, _, _ := strings.Cut(request, "/")
	for i, a := range attrs {
		ip := p.Index(i)
		if a.Name == "" {
			errs = append(errs, field.Required(ip.Child("name"), ""))
		} else {
			errs = append(errs, fullyQualifiedName(ip.Child("name"), a.Name)...)
			n := string(a.Name)
			if !used[""][n] && !used[request][n] && !used[parent][n] {
				errs = append(errs, field.Invalid(ip.Child("name"), n, "must be referenced by at least one matchAttribute or distinctAttribute constraint targeting this request"))
			}
		}
		if a.Expression == "" {
			errs = append(errs, field.Required(ip.Child("expression"), ""))
		} else {
			cost, cerrs := celExpression(ip.Child("expression"), a.Expression, true, opts)
			errs = append(errs, cerrs...)
			*total += cost
		}
		if seen[a.Name] {
			errs = append(errs, field.Duplicate(ip, a.Name))
		}
		seen[a.Name] = true
	}
	return errs
}

// requestRefs: at most 32 unique references to requests ("request" or "request/subrequest") of the claim.
func requestRefs(p *field.Path, refs []string, names requestNames) field.ErrorList {
	if len(refs) > resourceapi.DeviceRequestsMaxSize {
		return field.ErrorList{field.TooMany(p, len(refs), resourceapi.DeviceRequestsMaxSize)}
	}
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, ref := range refs {
		errs = append(errs, requestRef(p.Index(i), ref, names)...)
		if seen[ref] {
			errs = append(errs, field.Duplicate(p.Index(i), ref))
		}
		seen[ref] = true
	}
	return errs
}

const requestRefMessage = "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"

func requestRef(p *field.Path, ref string, names requestNames) field.ErrorList {
	parts := strings.Split(ref, "/")
	if len(parts) > 2 {
		return field.ErrorList{field.Invalid(p, ref, requestRefMessage)}
	}
	var errs field.ErrorList
	for _, part := range parts {
		errs = append(errs, dnsLabel(p, part)...)
	}
	if !names.has(ref) {
		errs = append(errs, field.Invalid(p, ref, requestRefMessage))
	}
	return errs
}

// deviceConfig: an opaque configuration with a driver name and parameters that are a JSON object of at
// most 10 KiB.
func deviceConfig(p *field.Path, c resourceapi.DeviceConfiguration) field.ErrorList {
	if c.Opaque == nil {
		return field.ErrorList{field.Required(p.Child("opaque"), "")}
	}
	op := p.Child("opaque")
	errs := driverName(op.Child("driver"), c.Opaque.Driver)
	return append(errs, rawObject(op.Child("parameters"), c.Opaque.Parameters, resourceapi.OpaqueParametersMaxLength)...)
}

func rawObject(p *field.Path, raw runtime.RawExtension, limit int) field.ErrorList {
	data := raw.Raw
	if len(data) == 0 && raw.Object != nil {
		var err error
		if data, err = json.Marshal(raw.Object); err != nil {
			return field.ErrorList{field.Invalid(p, "<value omitted>", "error encoding object as JSON: "+err.Error())}
		}
	}
	if len(data) == 0 {
		return field.ErrorList{field.Required(p, "")}
	}
	if len(data) > limit {
		return field.ErrorList{field.TooLong(p, "", limit)}
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return field.ErrorList{field.Invalid(p, "<value omitted>", "error parsing data as JSON: "+err.Error())}
	}
	switch v.(type) {
	case nil:
		return field.ErrorList{field.Required(p, "")}
	case map[string]any:
		return nil
	}
	return field.ErrorList{field.Invalid(p, "<value omitted>", "must be a valid JSON object")}
}

// allocation validates a new status.allocation.
func allocation(p *field.Path, a *resourceapi.AllocationResult, names requestNames) field.ErrorList {
	var errs field.ErrorList
	rp := p.Child("devices", "results")
	if len(a.Devices.Results) > resourceapi.AllocationResultsMaxSize {
		errs = append(errs, field.TooMany(rp, len(a.Devices.Results), resourceapi.AllocationResultsMaxSize))
	} else {
		for i, r := range a.Devices.Results {
			ip := rp.Index(i)
			errs = append(errs, requestRef(ip.Child("request"), r.Request, names)...)
			errs = append(errs, driverName(ip.Child("driver"), r.Driver)...)
			errs = append(errs, poolName(ip.Child("pool"), r.Pool)...)
			errs = append(errs, dnsLabel(ip.Child("device"), r.Device)...)
			errs = append(errs, bindingConditions(ip, r.BindingConditions, r.BindingFailureConditions)...)
			for j, t := range r.Tolerations {
				errs = append(errs, toleration(ip.Child("tolerations").Index(j), t)...)
			}
			if r.ShareID != nil {
				errs = append(errs, uid(ip.Child("shareID"), string(*r.ShareID))...)
			}
			for _, n := range sortedKeys(r.ConsumedCapacity) {
				errs = append(errs, quantity(mapKey(ip.Child("consumedCapacity"), string(n), attributeKeyMaxLength), r.ConsumedCapacity[n])...)
			}
			errs = append(errs, skipNodeOperations(ip.Child("skipNodeOperations"), r.SkipNodeOperations)...)
		}
	}
	cp := p.Child("devices", "config")
	if limit := 2 * resourceapi.DeviceConfigMaxSize; len(a.Devices.Config) > limit { // class and claim
		errs = append(errs, field.TooMany(cp, len(a.Devices.Config), limit))
	} else {
		for i, c := range a.Devices.Config {
			ip := cp.Index(i)
			switch c.Source {
			case resourceapi.AllocationConfigSourceClaim, resourceapi.AllocationConfigSourceClass:
			case "":
				errs = append(errs, field.Required(ip.Child("source"), ""))
			default:
				errs = append(errs, field.NotSupported(ip.Child("source"), c.Source,
					[]resourceapi.AllocationConfigSource{resourceapi.AllocationConfigSourceClaim, resourceapi.AllocationConfigSourceClass}))
			}
			errs = append(errs, requestRefs(ip.Child("requests"), c.Requests, names)...)
			errs = append(errs, deviceConfig(ip, c.DeviceConfiguration)...)
		}
	}
	if a.NodeSelector != nil {
		errs = append(errs, nodeSelector(p.Child("nodeSelector"), a.NodeSelector)...)
	}
	return errs
}

// uid: an RFC 4122 UUID in normalized form, xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx in lower-case hex, as the
// API server requires of share IDs.
func uid(p *field.Path, s string) field.ErrorList {
	ok := len(s) == 36
	for i := 0; ok && i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			ok = c == '-'
		default:
			ok = c >= '0' && c <= '9' || c >= 'a' && c <= 'f'
		}
	}
	if !ok {
		return field.ErrorList{field.Invalid(p, s, "uid must be in RFC 4122 normalized form, `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase hexadecimal characters")}
	}
	return nil
}
