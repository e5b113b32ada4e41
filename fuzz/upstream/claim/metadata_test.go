package claim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/api/metadata"
	"k8s.io/dynamic-resource-allocation/api/metadata/install"
	metadatav1beta1 "k8s.io/dynamic-resource-allocation/api/metadata/v1beta1"
	"k8s.io/dynamic-resource-allocation/devicemetadata"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/utils/ptr"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/fuzz"
	"github.com/dralloc/dralloc/inventory/claim"
)

var versions = []schema.GroupVersion{
	{Group: metadata.GroupName, Version: "v1beta1"},
	{Group: metadata.GroupName, Version: "v1alpha1"},
}

// upstreamFile is what kubeletplugin's metadataWriter writes for one request.
type upstreamFile struct {
	containerPath, hostPath string
	stream                  []byte
}

// upstreamFiles writes the metadata of claim for driver as kubeletplugin/metadata.go does: the prepared
// devices are grouped by request (processPreparedClaim), each group becomes an internal metadata.DeviceMetadata
// of generation 1 (buildDeviceMetadata) encoded once per version with the scheme's pretty JSON serializer
// (encodeMetadataStream), at the paths of metadataFilePath and containerFilePath. The device metadata a driver
// passes are the attributes of the device in its newest pool generation and the network data of its
// status.devices entry, which is what BuildDeviceMetadata takes them from. Keyed by request reference.
func upstreamFiles(t testing.TB, c *resourceapi.ResourceClaim, slices []*resourceapi.ResourceSlice, driver string) map[string]upstreamFile {
	scheme := install.NewScheme()
	codecs := runtimeserializer.NewCodecFactory(scheme)
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok {
		t.Fatal("no JSON serializer")
	}
	gen := map[string]int64{}
	for _, s := range slices {
		if s.Spec.Driver == driver && s.Spec.Pool.Generation >= gen[s.Spec.Pool.Name] {
			gen[s.Spec.Pool.Name] = s.Spec.Pool.Generation
		}
	}
	attrs := func(pool, device string) map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
		for _, s := range slices {
			if s.Spec.Driver != driver || s.Spec.Pool.Name != pool || s.Spec.Pool.Generation != gen[pool] {
				continue
			}
			for _, d := range s.Spec.Devices {
				if d.Name == device {
					if d.Attributes == nil {
						return nil
					}
					out := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{}
					for k, v := range d.Attributes {
						out[k] = v
					}
					return out
				}
			}
		}
		t.Fatalf("device %s/%s not in slices", pool, device)
		return nil
	}
	var podClaimName *string
	if v, ok := c.Annotations[resourceapi.PodResourceClaimAnnotation]; ok {
		podClaimName = &v
	}
	byRequest := map[string][]metadata.Device{}
	for _, r := range c.Status.Allocation.Devices.Results {
		if r.Driver != driver {
			continue
		}
		d := metadata.Device{Driver: driver, Pool: r.Pool, Name: r.Device, Attributes: attrs(r.Pool, r.Device)}
		for _, st := range c.Status.Devices {
			if st.Driver == r.Driver && st.Pool == r.Pool && st.Device == r.Device && ptr.Deref(st.ShareID, "") == string(ptr.Deref(r.ShareID, "")) {
				d.NetworkData = st.NetworkData
			}
		}
		byRequest[r.Request] = append(byRequest[r.Request], d)
	}
	files := map[string]upstreamFile{}
	for ref, devices := range byRequest {
		dm := &metadata.DeviceMetadata{PodClaimName: podClaimName, Requests: []metadata.DeviceMetadataRequest{{Name: ref, Devices: devices}}}
		dm.Name, dm.Namespace, dm.UID, dm.Generation = c.Name, c.Namespace, c.UID, 1
		var buf bytes.Buffer
		for _, gv := range versions {
			data, err := runtime.Encode(codecs.EncoderForVersion(info.PrettySerializer, gv), dm)
			if err != nil {
				t.Fatal(err)
			}
			buf.Write(data)
			buf.WriteByte('\n')
		}
		base := resourceclaim.BaseRequestRef(ref)
		f := upstreamFile{stream: buf.Bytes(), hostPath: filepath.Join("dra-device-metadata", c.Namespace+"_"+c.Name, base, "metadata.json")}
		if podClaimName != nil && *podClaimName != "" {
			f.containerPath = metadata.ResourceClaimTemplateFilePath(driver, *podClaimName, base)
		} else {
			f.containerPath = metadata.ResourceClaimFilePath(driver, c.Name, base)
		}
		files[ref] = f
	}
	return files
}

// allocatedClaims are the cluster's allocated claims and its pending claims as dralloc allocates them, each
// with a drawn pod claim name annotation and network data for some devices.
func allocatedClaims(rt *rapid.T, c *fuzz.Cluster) []*resourceapi.ResourceClaim {
	var out []*resourceapi.ResourceClaim
	for _, a := range c.Allocated {
		out = append(out, a.DeepCopy())
	}
	if s, err := c.Snapshot(allocator.Options{}); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		results, err := s.Allocate(ctx, c.Node, c.Claims)
		cancel()
		if err == nil {
			for i, p := range c.Claims {
				a := p.DeepCopy()
				a.Status.Allocation = &results[i]
				out = append(out, a)
			}
		}
	}
	for i, a := range out {
		a.UID = types.UID(fmt.Sprint("uid-", i))
		switch rapid.IntRange(0, 5).Draw(rt, "podClaimName") {
		case 1, 2:
			a.Annotations = map[string]string{resourceapi.PodResourceClaimAnnotation: "pod-claim"}
		case 3:
			a.Annotations = map[string]string{resourceapi.PodResourceClaimAnnotation: ""}
		}
		for _, r := range a.Status.Allocation.Devices.Results {
			if rapid.Bool().Draw(rt, "networkData") {
				a.Status.Devices = append(a.Status.Devices, resourceapi.AllocatedDeviceStatus{
					Driver: r.Driver, Pool: r.Pool, Device: r.Device, ShareID: (*string)(r.ShareID),
					NetworkData: &resourceapi.NetworkDeviceData{InterfaceName: "net-" + r.Device, IPs: []string{"10.0.0.1/24"}, HardwareAddress: "00:11:22:33:44:55"},
				})
			}
		}
	}
	return out
}

// TestDeviceMetadataMatchesUpstream builds the documents of generated allocated claims with dralloc and with
// upstream's types, encoders and path helpers, and requires the same files byte for byte; each side also reads
// the other's stream back to the same document, and upstream's validation accepts dralloc's.
func TestDeviceMetadataMatchesUpstream(t *testing.T) {
	var claims, files, subrequests, shared, admin, rejected atomic.Int64
	rapid.Check(t, func(rt *rapid.T) {
		c := fuzz.ClusterGen(fuzz.AllOptions()).Draw(rt, "cluster")
		for _, a := range allocatedClaims(rt, c) {
			claims.Add(1)
			for _, driver := range []string{fuzz.GPUDriver, fuzz.NICDriver} {
				got, err := claim.BuildDeviceMetadata(a, c.Slices, driver)
				if err != nil {
					rt.Fatalf("ResourceClaim %s: %v", a.Name, err)
				}
				want := upstreamFiles(t, a, c.Slices, driver)
				var gotRefs, wantRefs []string
				for _, f := range got {
					gotRefs = append(gotRefs, f.Metadata.Requests[0].Name)
				}
				for ref := range want {
					wantRefs = append(wantRefs, ref)
				}
				sort.Strings(gotRefs)
				sort.Strings(wantRefs)
				if !reflect.DeepEqual(gotRefs, wantRefs) {
					rt.Fatalf("ResourceClaim %s driver %s: requests %v, upstream %v", a.Name, driver, gotRefs, wantRefs)
				}
				for _, f := range got {
					files.Add(1)
					ref := f.Metadata.Requests[0].Name
					if ref != resourceclaim.BaseRequestRef(ref) {
						subrequests.Add(1)
					}
					w := want[ref]
					stream, err := claim.EncodeDeviceMetadata(&f.Metadata, claim.MetadataV1Beta1, claim.MetadataV1Alpha1)
					if err != nil {
						rt.Fatal(err)
					}
					if !bytes.Equal(stream, w.stream) {
						rt.Fatalf("ResourceClaim %s request %s: dralloc\n%s\nupstream\n%s", a.Name, ref, stream, w.stream)
					}
					if f.ContainerPath != w.containerPath || f.HostPath != w.hostPath {
						rt.Fatalf("paths %q %q, upstream %q %q", f.ContainerPath, f.HostPath, w.containerPath, w.hostPath)
					}
					var up metadatav1beta1.DeviceMetadata
					var invalid error
					if err := devicemetadata.DecodeMetadataFromStream(json.NewDecoder(bytes.NewReader(stream)), &up,
						devicemetadata.DecodeMetadataWithValidationResult(&invalid)); err != nil {
						rt.Fatalf("upstream reads dralloc's stream: %v", err)
					}
					parsed, err := claim.ParseDeviceMetadata(w.stream)
					if (invalid != nil) != (err != nil) {
						rt.Fatalf("upstream validation: %v, dralloc reading upstream's stream: %v", invalid, err)
					}
					if err != nil {
						// Only an empty pod claim name annotation makes a document upstream writes invalid.
						if ptr.Deref(f.Metadata.PodClaimName, "x") != "" {
							rt.Fatalf("dralloc rejects upstream's stream: %v", err)
						}
						rejected.Add(1)
						continue
					}
					again, _ := claim.EncodeDeviceMetadata(parsed, claim.MetadataV1Beta1, claim.MetadataV1Alpha1)
					if !bytes.Equal(again, w.stream) {
						rt.Fatalf("re-encoding the parsed upstream stream differs:\n%s", again)
					}
				}
			}
			for _, r := range a.Status.Allocation.Devices.Results {
				if r.ShareID != nil {
					shared.Add(1)
				}
				if ptr.Deref(r.AdminAccess, false) {
					admin.Add(1)
				}
			}
		}
	})
	t.Logf("%d claims, %d files (%d for subrequests, %d rejected by both readers); results with share IDs %d, with admin access %d",
		claims.Load(), files.Load(), subrequests.Load(), rejected.Load(), shared.Load(), admin.Load())
	if files.Load() == 0 || subrequests.Load() == 0 {
		t.Error("the generated claims covered no files or no subrequests")
	}
}
