package claim_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/dralloc/dralloc/inventory/claim"
)

func metaSlice(driver, pool string, generation int64, devices ...string) *resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{Spec: resourceapi.ResourceSliceSpec{Driver: driver,
		Pool: resourceapi.ResourcePool{Name: pool, Generation: generation, ResourceSliceCount: 1}}}
	for _, d := range devices {
		s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: d, Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"index": {StringValue: ptr.To(fmt.Sprintf("%s-gen%d", d, generation))}}})
	}
	return s
}

func metaClaim(annotations map[string]string, results ...resourceapi.DeviceRequestAllocationResult) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", UID: "uid-1", Annotations: annotations},
		Status:     resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: results}}},
	}
}

func res(request, driver, pool, device string) resourceapi.DeviceRequestAllocationResult {
	return resourceapi.DeviceRequestAllocationResult{Request: request, Driver: driver, Pool: pool, Device: device}
}

// summary renders a file as "container path: request=device(index attr),...".
func summary(f claim.MetadataFile) string {
	var parts []string
	for _, r := range f.Metadata.Requests {
		for _, d := range r.Devices {
			attr := ""
			if a, ok := d.Attributes["index"]; ok {
				attr = *a.StringValue
			}
			nd := ""
			if d.NetworkData != nil {
				nd = " " + d.NetworkData.InterfaceName
			}
			parts = append(parts, fmt.Sprintf("%s=%s/%s(%s%s)", r.Name, d.Pool, d.Name, attr, nd))
		}
	}
	return f.ContainerPath + ": " + strings.Join(parts, ",")
}

func TestBuildDeviceMetadata(t *testing.T) {
	const drv, other = "gpu.example.com", "nic.example.com"
	slices := []*resourceapi.ResourceSlice{
		metaSlice(drv, "p", 1, "a", "b", "c"),
		metaSlice(drv, "p", 2, "a", "b", "c"),
		metaSlice(other, "p", 1, "a"),
	}
	dir := claim.MetadataContainerDir
	shared := res("gpu", drv, "p", "a")
	shared.ShareID = ptr.To(types.UID("11111111-1111-4111-8111-111111111111"))
	shared.ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse("1Gi")}
	shared2 := *shared.DeepCopy()
	shared2.ShareID = ptr.To(types.UID("22222222-2222-4222-8222-222222222222"))
	admin := res("gpu", drv, "p", "b")
	admin.AdminAccess = ptr.To(true)
	withNet := metaClaim(nil, shared, shared2)
	withNet.Status.Devices = []resourceapi.AllocatedDeviceStatus{
		{Driver: drv, Pool: "p", Device: "a", ShareID: ptr.To(string(*shared2.ShareID)), NetworkData: &resourceapi.NetworkDeviceData{InterfaceName: "eth1"}},
	}
	for _, tc := range []struct {
		name  string
		claim *resourceapi.ResourceClaim
		want  []string
	}{
		{"one request with two devices is one file holding both in result order, attributes of the newest pool generation",
			metaClaim(nil, res("gpu", drv, "p", "b"), res("gpu", drv, "p", "a")),
			[]string{dir + "/resourceclaims/c/gpu/gpu.example.com-metadata.json: gpu=p/b(b-gen2),gpu=p/a(a-gen2)"}},
		{"several requests are one file each, in the order the results first name them",
			metaClaim(nil, res("y", drv, "p", "a"), res("x", drv, "p", "b"), res("y", drv, "p", "c")),
			[]string{
				dir + "/resourceclaims/c/y/gpu.example.com-metadata.json: y=p/a(a-gen2),y=p/c(c-gen2)",
				dir + "/resourceclaims/c/x/gpu.example.com-metadata.json: x=p/b(b-gen2)",
			}},
		{"a firstAvailable subrequest keeps req/sub in the document and the request in the path",
			metaClaim(nil, res("gpu/large", drv, "p", "a")),
			[]string{dir + "/resourceclaims/c/gpu/gpu.example.com-metadata.json: gpu/large=p/a(a-gen2)"}},
		{"devices of another driver are left out",
			metaClaim(nil, res("nic", other, "p", "a"), res("gpu", drv, "p", "c")),
			[]string{dir + "/resourceclaims/c/gpu/gpu.example.com-metadata.json: gpu=p/c(c-gen2)"}},
		{"a claim with only other drivers' devices has no file",
			metaClaim(nil, res("nic", other, "p", "a")), nil},
		{"an admin access device is listed like any other",
			metaClaim(nil, admin),
			[]string{dir + "/resourceclaims/c/gpu/gpu.example.com-metadata.json: gpu=p/b(b-gen2)"}},
		{"a device shared twice appears twice, network data matched by share ID",
			withNet,
			[]string{dir + "/resourceclaims/c/gpu/gpu.example.com-metadata.json: gpu=p/a(a-gen2),gpu=p/a(a-gen2 eth1)"}},
		{"a claim from a template is placed under its pod claim name",
			metaClaim(map[string]string{resourceapi.PodResourceClaimAnnotation: "my-gpu"}, res("gpu", drv, "p", "a")),
			[]string{dir + "/resourceclaimtemplates/my-gpu/gpu/gpu.example.com-metadata.json: gpu=p/a(a-gen2)"}},
		{"an empty pod claim name annotation falls back to the claim name",
			metaClaim(map[string]string{resourceapi.PodResourceClaimAnnotation: ""}, res("gpu", drv, "p", "a")),
			[]string{dir + "/resourceclaims/c/gpu/gpu.example.com-metadata.json: gpu=p/a(a-gen2)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.claim.DeepCopy()
			files, err := claim.BuildDeviceMetadata(tc.claim, slices, drv)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range files {
				got = append(got, summary(f))
				m := f.Metadata
				if m.Name != "c" || m.Namespace != "ns" || m.UID != "uid-1" || m.Generation != 1 {
					t.Errorf("object meta %+v, want name c, namespace ns, uid uid-1, generation 1", m.ObjectMeta)
				}
				if want := "dra-device-metadata/ns_c/" + f.Request + "/metadata.json"; f.HostPath != want {
					t.Errorf("host path %q, want %q", f.HostPath, want)
				}
				if v, ok := tc.claim.Annotations[resourceapi.PodResourceClaimAnnotation]; ok != (m.PodClaimName != nil) || ok && v != *m.PodClaimName {
					t.Errorf("podClaimName %v, want the annotation %q (present %v)", m.PodClaimName, v, ok)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if !reflect.DeepEqual(tc.claim, before) {
				t.Error("claim was modified")
			}
		})
	}
}

func TestBuildDeviceMetadataRejects(t *testing.T) {
	const drv = "gpu.example.com"
	unallocated := metaClaim(nil)
	unallocated.Status.Allocation = nil
	for _, tc := range []struct {
		name  string
		claim *resourceapi.ResourceClaim
		want  string
	}{
		{"nil claim", nil, "claim must not be nil"},
		{"claim not allocated", unallocated, "ResourceClaim ns/c: status.allocation: claim is not allocated"},
		{"device in no slice", metaClaim(nil, res("gpu", drv, "p", "a"), res("gpu", drv, "q", "z")),
			"ResourceClaim ns/c: status.allocation.devices.results[1]: device gpu.example.com/q/z is in no ResourceSlice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := claim.BuildDeviceMetadata(tc.claim, []*resourceapi.ResourceSlice{metaSlice(drv, "p", 1, "a")}, drv)
			if !errors.Is(err, claim.ErrInvalidClaim) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want ErrInvalidClaim containing %q", err, tc.want)
			}
		})
	}
}

func TestParseDeviceMetadataReadsWhatEncodeWrites(t *testing.T) {
	files, err := claim.BuildDeviceMetadata(metaClaim(map[string]string{resourceapi.PodResourceClaimAnnotation: "pc"}, res("gpu/sub", "d.example.com", "p", "a")),
		[]*resourceapi.ResourceSlice{metaSlice("d.example.com", "p", 0, "a")}, "d.example.com")
	if err != nil {
		t.Fatal(err)
	}
	want := files[0].Metadata
	data, err := claim.EncodeDeviceMetadata(&want, claim.MetadataV1Beta1, claim.MetadataV1Alpha1)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), `"kind": "DeviceMetadata"`); n != 2 {
		t.Fatalf("stream holds %d documents, want 2:\n%s", n, data)
	}
	got, err := claim.ParseDeviceMetadata(data)
	if err != nil {
		t.Fatal(err)
	}
	want.TypeMeta = metav1.TypeMeta{Kind: claim.MetadataKind, APIVersion: claim.MetadataV1Beta1}
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("parsed %+v, want %+v", *got, want)
	}
}

func TestParseDeviceMetadata(t *testing.T) {
	doc := func(apiVersion, body string) string {
		return `{"kind":"DeviceMetadata","apiVersion":"` + apiVersion + `","metadata":{"name":"c"},` + body + "}\n"
	}
	dev := `"requests":[{"name":"r","devices":[{"driver":"d","pool":"p","name":"x"%s}]}]`
	for _, tc := range []struct {
		name, data string
		want       string // error substring; empty: parses, first device named x
	}{
		{"v1beta1", doc(claim.MetadataV1Beta1, fmt.Sprintf(dev, "")), ""},
		{"an unknown newer version first is skipped",
			doc("metadata.resource.k8s.io/v1", `"future":1`) + doc(claim.MetadataV1Alpha1, fmt.Sprintf(dev, "")), ""},
		{"only unknown versions", `{"kind":"DeviceMetadata","apiVersion":"metadata.resource.k8s.io/v1"}`, "no supported apiVersion in stream (found metadata.resource.k8s.io/v1)"},
		{"empty stream", "", "no document in stream"},
		{"missing apiVersion", `{"kind":"DeviceMetadata"}`, "apiVersion: Required value"},
		{"wrong kind", `{"kind":"Pod","apiVersion":"` + claim.MetadataV1Beta1 + `"}`, `kind: Unsupported value: "Pod"`},
		{"unknown field names its path", doc(claim.MetadataV1Beta1, fmt.Sprintf(dev, `,"shareID":"u"`)), `unknown field "requests[0].devices[0].shareID"`},
		{"duplicate field", doc(claim.MetadataV1Beta1, `"podClaimName":"a","podClaimName":"b"`), `duplicate field "podClaimName"`},
		{"wrong type", doc(claim.MetadataV1Beta1, `"requests":[{"name":3}]`), "requests"},
		{"pod claim name that is no DNS label", doc(claim.MetadataV1Beta1, `"podClaimName":""`), `podClaimName: Invalid value: ""`},
		{"missing request name", doc(claim.MetadataV1Beta1, `"requests":[{"devices":[]}]`), "requests[0].name: Required value"},
		{"missing pool", doc(claim.MetadataV1Beta1, `"requests":[{"name":"r","devices":[{"driver":"d","name":"x"}]}]`), "requests[0].devices[0].pool: Required value"},
		{"attribute with two values", doc(claim.MetadataV1Beta1, fmt.Sprintf(dev, `,"attributes":{"m":{"int":1,"bool":true}}`)), "requests[0].devices[0].attributes[m]"},
		{"attribute without value", doc(claim.MetadataV1Beta1, fmt.Sprintf(dev, `,"attributes":{"m":{}}`)), "requests[0].devices[0].attributes[m]"},
		{"repeated network address", doc(claim.MetadataV1Beta1, fmt.Sprintf(dev, `,"networkData":{"ips":["10.0.0.1/24","10.0.0.1/24"]}`)), "requests[0].devices[0].networkData.ips[1]: Duplicate value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dm, err := claim.ParseDeviceMetadata([]byte(tc.data))
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if d := dm.Requests[0].Devices[0]; d.Name != "x" || d.Driver != "d" || d.Pool != "p" {
					t.Errorf("device %+v, want d/p/x", d)
				}
				return
			}
			if !errors.Is(err, claim.ErrInvalidMetadata) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want ErrInvalidMetadata containing %q", err, tc.want)
			}
		})
	}
}

func TestEncodeDeviceMetadataRejectsUnknownVersions(t *testing.T) {
	_, err := claim.EncodeDeviceMetadata(&claim.DeviceMetadata{}, "metadata.resource.k8s.io/v1")
	if !errors.Is(err, claim.ErrInvalidMetadata) || !strings.Contains(err.Error(), `apiVersion: Unsupported value: "metadata.resource.k8s.io/v1"`) {
		t.Errorf("error %v", err)
	}
}

// TestBuildDeviceMetadataRefusesNamesThatAreNoNames: the host path joins namespace, claim and request
// names, the container path the pod claim name annotation (which whoever creates a claim can set) and
// the driver; a name the API server would not store (`..`, a slash, NUL, too long, empty) could move
// the file out of its directory, so it is refused before any path is built, naming the field.
func TestBuildDeviceMetadataRefusesNamesThatAreNoNames(t *testing.T) {
	const drv = "gpu.example.com"
	slices := []*resourceapi.ResourceSlice{metaSlice(drv, "p", 1, "a")}
	long := strings.Repeat("a", 254)
	withMeta := func(namespace, name string) *resourceapi.ResourceClaim {
		c := metaClaim(nil, res("gpu", drv, "p", "a"))
		c.Namespace, c.Name = namespace, name
		return c
	}
	annotated := func(v string) *resourceapi.ResourceClaim {
		return metaClaim(map[string]string{resourceapi.PodResourceClaimAnnotation: v}, res("gpu", drv, "p", "a"))
	}
	for _, tc := range []struct {
		name   string
		claim  *resourceapi.ResourceClaim
		driver string
		want   string
	}{
		{"namespace that climbs", withMeta("../../../../etc", "c"), drv, `ResourceClaim "../../../../etc"/c: metadata.namespace: Invalid value: "../../../../etc": a lowercase RFC 1123 label`},
		{"namespace with a slash", withMeta("a/b", "c"), drv, `metadata.namespace: Invalid value: "a/b"`},
		{"namespace with NUL", withMeta("ns\x00", "c"), drv, `metadata.namespace: Invalid value: "ns\x00"`},
		{"namespace too long for a label", withMeta(strings.Repeat("n", 64), "c"), drv, "metadata.namespace: Invalid value: \"nnnn"},
		{"empty namespace", withMeta("", "c"), drv, `ResourceClaim ""/c: metadata.namespace: Required value`},
		{"claim name that climbs", withMeta("ns", "../../x"), drv, `ResourceClaim ns/"../../x": metadata.name: Invalid value: "../../x": a lowercase RFC 1123 subdomain`},
		{"claim name ..", withMeta("ns", ".."), drv, `metadata.name: Invalid value: ".."`},
		{"claim name with NUL", withMeta("ns", "c\x00/.."), drv, `metadata.name: Invalid value: "c\x00/.."`},
		{"claim name too long, cut in the message", withMeta("ns", long), drv, `metadata.name: Invalid value: "` + long[:64] + `"…: must be no more than 253 characters`},
		{"empty claim name", withMeta("ns", ""), drv, `metadata.name: Required value`},
		{"pod claim name that climbs", annotated("../../../../etc"), drv,
			`ResourceClaim ns/c: metadata.annotations[resource.kubernetes.io/pod-claim-name]: Invalid value: "../../../../etc": a lowercase RFC 1123 label`},
		{"pod claim name ..", annotated(".."), drv, `metadata.annotations[resource.kubernetes.io/pod-claim-name]: Invalid value: ".."`},
		{"pod claim name with a slash", annotated("a/b"), drv, `metadata.annotations[resource.kubernetes.io/pod-claim-name]: Invalid value: "a/b"`},
		{"pod claim name with NUL", annotated("\x00"), drv, `metadata.annotations[resource.kubernetes.io/pod-claim-name]: Invalid value: "\x00"`},
		{"request that climbs", metaClaim(nil, res("../../../../etc", drv, "p", "a")), drv,
			`ResourceClaim ns/c: status.allocation.devices.results[0].request: Invalid value: "../../../../etc": a lowercase RFC 1123 label`},
		{"request ..", metaClaim(nil, res("..", drv, "p", "a")), drv, `status.allocation.devices.results[0].request: Invalid value: ".."`},
		{"subrequest that climbs", metaClaim(nil, res("gpu/../..", drv, "p", "a")), drv, `status.allocation.devices.results[0].request: Invalid value: "gpu/../.."`},
		{"empty request", metaClaim(nil, res("gpu", drv, "p", "a"), res("", drv, "p", "a")), drv, `status.allocation.devices.results[1].request: Required value`},
		{"driver that climbs", metaClaim(nil, res("gpu", "../../x", "p", "a")), "../../x", `driver: Invalid value: "../../x": a lowercase RFC 1123 subdomain`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files, err := claim.BuildDeviceMetadata(tc.claim, slices, tc.driver)
			if !errors.Is(err, claim.ErrInvalidClaim) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("files %v, error %v; want ErrInvalidClaim containing %q", files, err, tc.want)
			}
			if err != nil && len(err.Error()) > 400 {
				t.Errorf("error of %d bytes: the name is not cut", len(err.Error()))
			}
		})
	}
}
