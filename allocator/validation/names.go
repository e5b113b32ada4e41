package validation

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dralloc/dralloc/capacity"
)

// The name rules of the API server's resource validation: a driver name is a CSI driver name, devices,
// requests and counters are DNS labels, classes DNS subdomains, pools DNS subdomains separated by "/".

// objectMeta is corevalidation.ValidateObjectMeta: name (or generateName) set and of the kind's format,
// namespace a DNS label for namespaced kinds, labels and annotations well formed.
func objectMeta(meta *metav1.ObjectMeta, namespaced bool) field.ErrorList {
	return apivalidation.ValidateObjectMeta(meta, namespaced, nameIsDNSSubdomain, field.NewPath("metadata"))
}

// nameIsDNSSubdomain is apivalidation.NameIsDNSSubdomain with the fast check in front: a valid name, what
// nearly every object has, is accepted without the regular expression (isDNSSubdomain accepts exactly
// what IsDNS1123Subdomain does), and anything else gets apimachinery's verdict and messages.
func nameIsDNSSubdomain(name string, prefix bool) []string {
	if !prefix && isDNSSubdomain(name) {
		return nil
	}
	return apivalidation.NameIsDNSSubdomain(name, prefix)
}

// labelsAndAnnotations is the API server's check of a template's metadata (ValidateTemplateObjectMeta).
func labelsAndAnnotations(p *field.Path, labels, annotations map[string]string) field.ErrorList {
	errs := apivalidation.ValidateAnnotations(annotations, p.Child("annotations"))
	return append(errs, metavalidation.ValidateLabels(labels, p.Child("labels"))...)
}

// driverName is corevalidation.ValidateCSIDriverName: at most 63 characters, a DNS subdomain once
// lower-cased.
func driverName(p *field.Path, name string) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	if len(name) > resourceapi.DriverNameMaxLength {
		errs = append(errs, field.TooLong(p, "", resourceapi.DriverNameMaxLength))
	} else if isDNSSubdomain(strings.ToLower(name)) {
		return nil
	}
	for _, msg := range validation.IsDNS1123Subdomain(strings.ToLower(name)) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}

// poolName: at most 253 characters, DNS subdomains separated by "/".
func poolName(p *field.Path, name string) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	if len(name) > resourceapi.PoolNameMaxLength {
		errs = append(errs, field.TooLong(p, "", resourceapi.PoolNameMaxLength))
	}
	for _, part := range strings.Split(name, "/") {
		for _, msg := range validation.IsDNS1123Subdomain(part) {
			errs = append(errs, field.Invalid(p, name, msg))
		}
	}
	return errs
}

// dnsLabel validates device, request, subrequest, counter set and counter names.
func dnsLabel(p *field.Path, name string) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	if isDNSLabel(name) {
		return nil
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(name) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}

// dnsSubdomain validates device class and node names.
func dnsSubdomain(p *field.Path, name string) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	if isDNSSubdomain(name) {
		return nil
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}

// qualifiedName validates an attribute or capacity name: a C identifier of at most 32 characters,
// optionally after a domain (a driver name) and "/". Errors are reported at p, the map's path, as the API
// server does.
func qualifiedName(p *field.Path, name resourceapi.QualifiedName) field.ErrorList {
	if qualifiedNameOK(name) {
		return nil
	}
	var errs field.ErrorList
	parts := strings.Split(string(name), "/")
	switch len(parts) {
	case 1:
		errs = append(errs, cIdentifier(p, parts[0])...)
	case 2:
		if parts[0] == "" {
			errs = append(errs, field.Invalid(p, "", "the domain must not be empty"))
		} else {
			errs = append(errs, driverName(p, parts[0])...)
		}
		if parts[1] == "" {
			errs = append(errs, field.Invalid(p, "", "the name must not be empty"))
		} else {
			errs = append(errs, cIdentifier(p, parts[1])...)
		}
	default:
		errs = append(errs, field.Invalid(p, string(name), "must not contain more than one slash"))
	}
	return errs
}

// fullyQualifiedName is a qualifiedName that has a domain.
func fullyQualifiedName(p *field.Path, name resourceapi.FullyQualifiedName) field.ErrorList {
	errs := qualifiedName(p, resourceapi.QualifiedName(name))
	if !strings.Contains(string(name), "/") {
		errs = append(errs, field.Invalid(p, string(name), "a fully qualified name must be a domain and a name separated by a slash"))
	}
	return errs
}

func cIdentifier(p *field.Path, id string) field.ErrorList {
	var errs field.ErrorList
	if len(id) > resourceapi.DeviceMaxIDLength {
		errs = append(errs, field.TooLong(p, "", resourceapi.DeviceMaxIDLength))
	}
	for _, msg := range validation.IsCIdentifier(id) {
		errs = append(errs, field.Invalid(p, id, msg))
	}
	return errs
}

// mapKey is the path of a map entry; keys longer than the longest valid key are shortened in the middle,
// as the API server does, so that an error about a huge key does not repeat it.
func mapKey(p *field.Path, key string, maxLen int) *field.Path {
	maxLen = max(maxLen, 16)
	if len(key) > maxLen {
		rest := maxLen - 3
		key = key[:(rest+1)/2] + "..." + key[len(key)-rest/2:]
	}
	return p.Key(key)
}

// attributeKeyMaxLength is the longest attribute or capacity name: domain, "/", identifier.
const attributeKeyMaxLength = resourceapi.DeviceMaxDomainLength + 1 + resourceapi.DeviceMaxIDLength

func labelValue(p *field.Path, value string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsValidLabelValue(value) {
		errs = append(errs, field.Invalid(p, value, msg))
	}
	return errs
}

// labelName is metav1validation.ValidateLabelName, except that an empty name is reported as required
// (the API server reports it as invalid, "name part must be non-empty"); taints.ValidateTaint does the
// same.
func labelName(p *field.Path, name string) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	return metavalidation.ValidateLabelName(name, p)
}

// quantity applies capacity.ValidateQuantity: the API server stores such quantities, but arithmetic on
// them does not terminate in reasonable time.
func quantity(p *field.Path, q resource.Quantity) field.ErrorList {
	if err := capacity.ValidateQuantity(q); err != nil {
		return field.ErrorList{field.Invalid(p, "<omitted>", err.Error())}
	}
	return nil
}

// nonNegative is quantity plus a sign check.
func nonNegative(p *field.Path, q resource.Quantity) field.ErrorList {
	if errs := quantity(p, q); len(errs) > 0 {
		return errs
	}
	if q.Sign() < 0 {
		return field.ErrorList{field.Invalid(p, q.String(), "must not be negative")}
	}
	return nil
}

// extendedResourceName is v1helper.IsExtendedResourceName: a name with a domain outside kubernetes.io
// that, prefixed with "requests.", is a qualified name.
func extendedResourceName(name string) bool {
	if !strings.Contains(name, "/") || strings.Contains(name, v1.ResourceDefaultNamespacePrefix) || strings.HasPrefix(name, "requests.") {
		return false
	}
	return len(validation.IsQualifiedName("requests."+name)) == 0
}
