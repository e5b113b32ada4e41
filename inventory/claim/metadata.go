package claim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/operation"
	"k8s.io/apimachinery/pkg/api/validate"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	sigsjson "sigs.k8s.io/json"
)

// The device metadata format (the Downward API for DRA devices, alpha) is
// defined by k8s.io/dynamic-resource-allocation/api/metadata (types.go,
// helpers.go, v1alpha1 and v1beta1) and written by
// k8s.io/dynamic-resource-allocation/kubeletplugin/metadata.go. The types
// below marshal to the same JSON as the versioned upstream types, which have
// identical fields in v1alpha1 and v1beta1.
const (
	// MetadataGroup is the API group of the document.
	MetadataGroup = "metadata.resource.k8s.io"
	// MetadataKind is the kind of the document.
	MetadataKind = "DeviceMetadata"
	// MetadataV1Beta1 is the newest apiVersion of the document.
	MetadataV1Beta1 = MetadataGroup + "/v1beta1"
	// MetadataV1Alpha1 is the older apiVersion, for consumers not updated yet.
	MetadataV1Alpha1 = MetadataGroup + "/v1alpha1"

	// MetadataContainerDir is where the files are mounted in a container
	// (api/metadata ContainerDir).
	MetadataContainerDir = "/var/run/kubernetes.io/dra-device-attributes"
	// MetadataHostDir is the directory, under the driver's plugin data
	// directory, where kubeletplugin keeps the files on the host.
	MetadataHostDir = "dra-device-metadata"
)

// ErrInvalidMetadata is wrapped by the errors of ParseDeviceMetadata and
// EncodeDeviceMetadata.
var ErrInvalidMetadata = errors.New("invalid device metadata")

// DeviceMetadata is the document a DRA driver writes for a request of a
// claim: the claim's name, namespace and UID, a generation (1 when first
// written, incremented by each update), the pod's name for a claim made from
// a template, and the devices of the request.
type DeviceMetadata struct {
	metav1.TypeMeta `json:",inline"`
	// ObjectMeta holds name, namespace, uid and generation of the claim.
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// PodClaimName is pod.spec.resourceClaims[].name for a claim made from a
	// ResourceClaimTemplate, nil for a claim the pod names directly.
	PodClaimName *string `json:"podClaimName,omitempty"`
	// Requests lists the requests, each named as the allocation results name
	// it (request or request/subrequest).
	Requests []DeviceMetadataRequest `json:"requests,omitempty"`
}

// DeviceMetadataRequest is one request of a DeviceMetadata document.
type DeviceMetadataRequest struct {
	// Name is the request, "<request>/<subrequest>" for firstAvailable.
	Name string `json:"name"`
	// Devices are the devices allocated for the request, in result order.
	Devices []MetadataDevice `json:"devices,omitempty"`
}

// MetadataDevice is one device of a DeviceMetadataRequest.
type MetadataDevice struct {
	// Driver, Pool and Name identify the device.
	Driver string `json:"driver"`
	Pool   string `json:"pool"`
	Name   string `json:"name"`
	// Attributes are the device's attributes as its ResourceSlice has them.
	Attributes map[resourceapi.QualifiedName]resourceapi.DeviceAttribute `json:"attributes,omitempty"`
	// NetworkData is the network data of a network device.
	NetworkData *resourceapi.NetworkDeviceData `json:"networkData,omitempty"`
}

// MetadataFile is the document for one request with where it lives.
type MetadataFile struct {
	// Request is the request name the paths use: a subrequest's request.
	Request string
	// ContainerPath is where the file appears in the container:
	// MetadataContainerDir/resourceclaims/<claim>/<request>/<driver>-metadata.json,
	// or resourceclaimtemplates/<pod claim name>/... for a claim made from a
	// template (api/metadata helpers.go).
	ContainerPath string
	// HostPath is where kubeletplugin writes it, relative to the driver's
	// plugin data directory:
	// MetadataHostDir/<namespace>_<claim>/<request>/metadata.json.
	HostPath string
	// Metadata is the document, without apiVersion and kind (set by
	// EncodeDeviceMetadata).
	Metadata DeviceMetadata
}

// BuildDeviceMetadata builds the documents a driver writes for an allocated
// claim, as kubeletplugin's metadataWriter does: one file per request that
// has devices of driver, in the order the allocation results first name the
// request, each holding that one request (named as the result names it, with
// its subrequest) and its devices of driver in result order. Results of other
// drivers are left out. Each device carries the attributes of the device in
// slices (the newest generation of its pool; kubeletplugin recommends
// publishing these) and the network data of its entry in status.devices, if
// any (matched by driver, pool, device and share ID). The format has no
// admin access, share ID or consumed capacity: a device shared twice appears
// twice. Generation is 1 and PodClaimName is the claim's
// resource.kubernetes.io/pod-claim-name annotation, copied even when empty as
// kubeletplugin does (such a document fails validation; the resourceclaim
// controller never sets an empty one).
//
// A nil or unallocated claim, or a device of driver missing from slices, is
// an error naming the field; inputs are not modified. The names the paths are
// made of must be names the API server would store: namespace and request
// names DNS labels, the claim's name and the driver DNS subdomains, a
// non-empty pod claim name a DNS label. Any other (`..`, a slash, NUL, too
// long) is an error naming the field, returned before any path is built,
// since kubeletplugin joins them unchecked and the file would leave its
// directory.
func BuildDeviceMetadata(claim *resourceapi.ResourceClaim, resourceSlices []*resourceapi.ResourceSlice, driver string) ([]MetadataFile, error) {
	if claim == nil {
		return nil, fmt.Errorf("%w: claim must not be nil", ErrInvalidClaim)
	}
	a := claim.Status.Allocation
	if a == nil {
		return nil, fmt.Errorf("%w: ResourceClaim %s: status.allocation: claim is not allocated", ErrInvalidClaim, claimRef(claim))
	}
	var podClaimName *string
	if v, ok := claim.Annotations[resourceapi.PodResourceClaimAnnotation]; ok {
		podClaimName = &v
	}
	if err := checkPathNames(claim, podClaimName, driver); err != nil {
		return nil, err
	}
	devices := newestDevices(resourceSlices, driver)
	var files []MetadataFile
	index := map[string]int{}
	resultsPath := field.NewPath("status", "allocation", "devices", "results")
	for i, r := range a.Devices.Results {
		if r.Driver != driver {
			continue
		}
		if msgs := requestNameErrors(r.Request); len(msgs) > 0 {
			return nil, invalidName(claimRef(claim), resultsPath.Index(i).Child("request").String(), r.Request, msgs)
		}
		dev, ok := devices[poolDevice{r.Pool, r.Device}]
		if !ok {
			return nil, fmt.Errorf("%w: ResourceClaim %s: %s: device %s/%s/%s is in no ResourceSlice", ErrInvalidClaim, claimRef(claim), resultsPath.Index(i), r.Driver, r.Pool, r.Device)
		}
		md := MetadataDevice{Driver: driver, Pool: r.Pool, Name: r.Device}
		if len(dev.Attributes) > 0 {
			md.Attributes = make(map[resourceapi.QualifiedName]resourceapi.DeviceAttribute, len(dev.Attributes))
			for k, v := range dev.Attributes {
				md.Attributes[k] = *v.DeepCopy()
			}
		}
		want := key{r.Driver, r.Pool, r.Device, string(ptr.Deref(r.ShareID, ""))}
		if j := slices.IndexFunc(claim.Status.Devices, func(d resourceapi.AllocatedDeviceStatus) bool { return statusKey(d) == want }); j >= 0 {
			md.NetworkData = claim.Status.Devices[j].NetworkData.DeepCopy()
		}
		k, ok := index[r.Request]
		if !ok {
			k = len(files)
			index[r.Request] = k
			base, _, _ := strings.Cut(r.Request, "/")
			container := containerPath(driver, claim.Name, podClaimName, base)
			host := path.Join(MetadataHostDir, claim.Namespace+"_"+claim.Name, base, "metadata.json")
			if err := under(MetadataContainerDir, container); err != nil {
				return nil, fmt.Errorf("%w: ResourceClaim %s: %s: container path: %w", ErrInvalidClaim, claimRef(claim), resultsPath.Index(i), err)
			}
			if err := under(MetadataHostDir, host); err != nil {
				return nil, fmt.Errorf("%w: ResourceClaim %s: %s: host path: %w", ErrInvalidClaim, claimRef(claim), resultsPath.Index(i), err)
			}
			files = append(files, MetadataFile{
				Request:       base,
				ContainerPath: container,
				HostPath:      host,
				Metadata: DeviceMetadata{
					ObjectMeta:   metav1.ObjectMeta{Name: claim.Name, Namespace: claim.Namespace, UID: claim.UID, Generation: 1},
					PodClaimName: cloneString(podClaimName),
					Requests:     []DeviceMetadataRequest{{Name: r.Request}},
				},
			})
		}
		req := &files[k].Metadata.Requests[0]
		req.Devices = append(req.Devices, md)
	}
	return files, nil
}

// checkPathNames refuses the names the paths of BuildDeviceMetadata are made of when the API server
// would not store them: the claim's namespace (a DNS label) and name (a DNS subdomain), the pod claim
// name annotation, which whoever creates a claim can set (pod.spec.resourceClaims[].name, a DNS label;
// empty is kept, as kubeletplugin keeps it, and uses the claim's name), and the driver (a DNS subdomain,
// as ResourceSlice spec.driver). kubeletplugin joins them unchecked; a name with a slash or `..` would
// move the file out of its directory on the host or in the container.
func checkPathNames(claim *resourceapi.ResourceClaim, podClaimName *string, driver string) error {
	ref := claimRef(claim)
	for _, f := range [...]struct {
		field, value string
		check        func(string) []string
	}{
		{"metadata.namespace", claim.Namespace, validation.IsDNS1123Label},
		{"metadata.name", claim.Name, validation.IsDNS1123Subdomain},
	} {
		if msgs := nameErrors(f.value, f.check); len(msgs) > 0 {
			return invalidName(ref, f.field, f.value, msgs)
		}
	}
	if podClaimName != nil && *podClaimName != "" {
		if msgs := validation.IsDNS1123Label(*podClaimName); len(msgs) > 0 {
			return invalidName(ref, "metadata.annotations["+resourceapi.PodResourceClaimAnnotation+"]", *podClaimName, msgs)
		}
	}
	if msgs := nameErrors(driver, validation.IsDNS1123Subdomain); len(msgs) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidClaim, nameError("driver", driver, msgs))
	}
	return nil
}

// requestNameErrors checks a result's request, "<request>" or "<request>/<subrequest>", each a DNS
// label as in a claim's spec.
func requestNameErrors(request string) []string {
	base, sub, isSub := strings.Cut(request, "/")
	if msgs := nameErrors(base, validation.IsDNS1123Label); len(msgs) > 0 || !isSub {
		return msgs
	}
	return nameErrors(sub, validation.IsDNS1123Label)
}

// nameErrors is check's verdict; an empty name, which the checks word as an invalid value, gets one
// empty message, and nameError words it as required.
func nameErrors(value string, check func(string) []string) []string {
	if value == "" {
		return []string{""}
	}
	return check(value)
}

// invalidName is the error for a name in a claim that is no name.
func invalidName(ref, fieldPath, value string, msgs []string) error {
	return fmt.Errorf("%w: ResourceClaim %s: %s", ErrInvalidClaim, ref, nameError(fieldPath, value, msgs))
}

// nameError words a refused name as apimachinery's field errors do ("Required value", "Invalid value:
// <value>: <why>"), the value quoted and cut so that a hostile name can neither forge nor flood the
// message.
func nameError(fieldPath, value string, msgs []string) string {
	if value == "" {
		return fieldPath + ": Required value"
	}
	return fieldPath + ": Invalid value: " + quoteCut(value) + ": " + strings.Join(msgs, "; ")
}

// maxShown is how much of a refused name an error shows.
const maxShown = 64

func quoteCut(s string) string {
	if len(s) > maxShown {
		return strconv.Quote(s[:maxShown]) + "…"
	}
	return strconv.Quote(s)
}

// claimRef is namespace/name for an error, each part quoted and cut when it is not a valid name.
func claimRef(claim *resourceapi.ResourceClaim) string {
	ns, name := claim.Namespace, claim.Name
	if len(nameErrors(ns, validation.IsDNS1123Label)) > 0 {
		ns = quoteCut(ns)
	}
	if len(nameErrors(name, validation.IsDNS1123Subdomain)) > 0 {
		name = quoteCut(name)
	}
	return ns + "/" + name
}

// under checks, as a second line behind checkPathNames, that p (a joined, hence cleaned, path) lies
// inside root: joining cleans `..` away, so a name that climbed would show here as a path outside it.
func under(root, p string) error {
	if path.Clean(p) != p || !strings.HasPrefix(p, root+"/") {
		return fmt.Errorf("%s leaves %s", quoteCut(p), root)
	}
	return nil
}

// containerPath is api/metadata ResourceClaimFilePath, or
// ResourceClaimTemplateFilePath for a non-empty pod claim name, as
// kubeletplugin's containerFilePath picks them.
func containerPath(driver, claim string, podClaimName *string, request string) string {
	file := driver + "-metadata.json"
	if podClaimName != nil && *podClaimName != "" {
		return path.Join(MetadataContainerDir, "resourceclaimtemplates", *podClaimName, request, file)
	}
	return path.Join(MetadataContainerDir, "resourceclaims", claim, request, file)
}

func cloneString(s *string) *string {
	if s == nil {
		return nil
	}
	return ptr.To(*s)
}

type poolDevice struct{ pool, device string }

// newestDevices indexes the devices of driver by pool and name, taking each
// pool from its newest generation, as the allocator reads slices.
func newestDevices(resourceSlices []*resourceapi.ResourceSlice, driver string) map[poolDevice]*resourceapi.Device {
	newest := map[string]int64{}
	for _, s := range resourceSlices {
		if s != nil && s.Spec.Driver == driver {
			if g, ok := newest[s.Spec.Pool.Name]; !ok || s.Spec.Pool.Generation > g {
				newest[s.Spec.Pool.Name] = s.Spec.Pool.Generation
			}
		}
	}
	devices := map[poolDevice]*resourceapi.Device{}
	for _, s := range resourceSlices {
		if s == nil || s.Spec.Driver != driver || s.Spec.Pool.Generation != newest[s.Spec.Pool.Name] {
			continue
		}
		for i := range s.Spec.Devices {
			k := poolDevice{s.Spec.Pool.Name, s.Spec.Devices[i].Name}
			if _, dup := devices[k]; !dup {
				devices[k] = &s.Spec.Devices[i]
			}
		}
	}
	return devices
}

// EncodeDeviceMetadata encodes dm as the file kubeletplugin writes: a JSON
// stream holding the document once per apiVersion, in the given order
// (newest first), each indented by two spaces and ended by a newline
// (kubeletplugin encodeMetadataStream with the scheme's pretty JSON
// serializer). Without apiVersions it writes MetadataV1Beta1 only. The
// apiVersion and kind of dm are replaced; dm is not modified.
func EncodeDeviceMetadata(dm *DeviceMetadata, apiVersions ...string) ([]byte, error) {
	if dm == nil {
		return nil, fmt.Errorf("%w: document must not be nil", ErrInvalidMetadata)
	}
	if len(apiVersions) == 0 {
		apiVersions = []string{MetadataV1Beta1}
	}
	var buf bytes.Buffer
	for _, v := range apiVersions {
		if v != MetadataV1Beta1 && v != MetadataV1Alpha1 {
			return nil, fmt.Errorf("%w: apiVersion: Unsupported value: %q", ErrInvalidMetadata, v)
		}
		doc := *dm
		doc.TypeMeta = metav1.TypeMeta{Kind: MetadataKind, APIVersion: v}
		data, err := json.MarshalIndent(&doc, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidMetadata, err)
		}
		buf.Write(data)
		buf.WriteByte('\n')
	}
	return buf.Bytes(), nil
}

// ParseDeviceMetadata reads a metadata file as
// k8s.io/dynamic-resource-allocation/devicemetadata DecodeMetadataFromStream
// does: the first document of the stream whose apiVersion is v1beta1 or
// v1alpha1, skipping documents of other apiVersions. It is strict: unknown
// and duplicate fields, a wrong kind, and the values the upstream validation
// rejects (a pod claim name that is no DNS label, missing request, driver,
// pool or device names, attributes without exactly one value, network data
// with a long interface name or repeated addresses) are errors naming the
// field.
func ParseDeviceMetadata(data []byte) (*DeviceMetadata, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var unknown []string
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("%w: read document: %w", ErrInvalidMetadata, err)
		}
		var tm metav1.TypeMeta
		if err := json.Unmarshal(raw, &tm); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidMetadata, err)
		}
		switch tm.APIVersion {
		case MetadataV1Beta1, MetadataV1Alpha1:
		case "":
			return nil, fmt.Errorf("%w: apiVersion: Required value", ErrInvalidMetadata)
		default:
			unknown = append(unknown, tm.APIVersion)
			continue
		}
		if tm.Kind != MetadataKind {
			return nil, fmt.Errorf("%w: kind: Unsupported value: %q: supported values: %q", ErrInvalidMetadata, tm.Kind, MetadataKind)
		}
		var dm DeviceMetadata
		strict, err := sigsjson.UnmarshalStrict(raw, &dm)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrInvalidMetadata, tm.APIVersion, err)
		}
		if len(strict) > 0 {
			return nil, fmt.Errorf("%w: %s: %w", ErrInvalidMetadata, tm.APIVersion, errors.Join(strict...))
		}
		if errs := validateDeviceMetadata(&dm); len(errs) > 0 {
			return nil, fmt.Errorf("%w: %s: %w", ErrInvalidMetadata, tm.APIVersion, errs.ToAggregate())
		}
		return &dm, nil
	}
	if len(unknown) == 0 {
		return nil, fmt.Errorf("%w: no document in stream", ErrInvalidMetadata)
	}
	return nil, fmt.Errorf("%w: no supported apiVersion in stream (found %s)", ErrInvalidMetadata, strings.Join(unknown, ", "))
}

// validateDeviceMetadata checks what the required fields and custom
// validations of api/metadata/v1beta1 check.
func validateDeviceMetadata(dm *DeviceMetadata) field.ErrorList {
	var errs field.ErrorList
	ctx, op := context.Background(), operation.Operation{Type: operation.Create}
	errs = append(errs, validate.ShortName(ctx, op, field.NewPath("podClaimName"), dm.PodClaimName, nil)...)
	for i, r := range dm.Requests {
		p := field.NewPath("requests").Index(i)
		if r.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		for j, d := range r.Devices {
			dp := p.Child("devices").Index(j)
			for _, f := range [...]struct{ name, value string }{{"driver", d.Driver}, {"pool", d.Pool}, {"name", d.Name}} {
				if f.value == "" {
					errs = append(errs, field.Required(dp.Child(f.name), ""))
				}
			}
			names := make([]resourceapi.QualifiedName, 0, len(d.Attributes))
			for k := range d.Attributes {
				names = append(names, k)
			}
			slices.Sort(names)
			for _, k := range names {
				v := d.Attributes[k]
				errs = append(errs, resourceapi.Validate_DeviceAttribute(ctx, op, dp.Child("attributes").Key(string(k)), &v, nil)...)
			}
			if d.NetworkData != nil {
				errs = append(errs, resourceapi.Validate_NetworkDeviceData(ctx, op, dp.Child("networkData"), d.NetworkData, nil)...)
			}
		}
	}
	return errs
}
