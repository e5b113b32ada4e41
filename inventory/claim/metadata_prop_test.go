package claim_test

import (
	"errors"
	"path"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/inventory/claim"
)

// pathName draws a name for a path part: three times in four a name that may be valid (dots and dashes
// included), else one joined from the pieces hostile names are made of (`..`, slashes, NUL, a name as
// long as the limit, upper case, empty).
func pathName(max int) *rapid.Generator[string] {
	name := rapid.StringMatching(`[a-z0-9]([-a-z0-9.]{0,8}[a-z0-9])?`)
	piece := rapid.OneOf(name, rapid.SampledFrom([]string{"..", ".", "/", "\x00", "", "A", "_", "-", "é", "%2e%2e", `\`, strings.Repeat("a", max)}))
	hostile := rapid.Custom(func(t *rapid.T) string {
		return strings.Join(rapid.SliceOfN(piece, 1, 4).Draw(t, "pieces"), "")
	})
	return rapid.OneOf(name, name, name, hostile)
}

// TestPropMetadataPathsStayInTheirDirectories: whatever the names, BuildDeviceMetadata either refuses
// the claim (exactly when a name is one the API server would not store) or writes every file at the
// path made of those names, inside MetadataHostDir and MetadataContainerDir.
func TestPropMetadataPathsStayInTheirDirectories(t *testing.T) {
	const drv = "gpu.example.com"
	slices := []*resourceapi.ResourceSlice{metaSlice(drv, "p", 1, "a")}
	rapid.Check(t, func(t *rapid.T) {
		ns := pathName(63).Draw(t, "namespace")
		name := pathName(253).Draw(t, "name")
		request := pathName(63).Draw(t, "request")
		var annotations map[string]string
		podClaim := ""
		if rapid.Bool().Draw(t, "annotated") {
			podClaim = pathName(63).Draw(t, "podClaimName")
			annotations = map[string]string{resourceapi.PodResourceClaimAnnotation: podClaim}
		}
		c := metaClaim(annotations, res(request, drv, "p", "a"))
		c.Namespace, c.Name = ns, name
		files, err := claim.BuildDeviceMetadata(c, slices, drv)

		base, sub, isSub := strings.Cut(request, "/")
		valid := len(validation.IsDNS1123Label(ns)) == 0 && len(validation.IsDNS1123Subdomain(name)) == 0 &&
			len(validation.IsDNS1123Label(base)) == 0 && (!isSub || len(validation.IsDNS1123Label(sub)) == 0) &&
			(podClaim == "" || len(validation.IsDNS1123Label(podClaim)) == 0)
		if !valid {
			if !errors.Is(err, claim.ErrInvalidClaim) {
				t.Fatalf("names %q %q %q %q: files %v, error %v; want ErrInvalidClaim", ns, name, request, podClaim, files, err)
			}
			return
		}
		if err != nil || len(files) != 1 {
			t.Fatalf("valid names %q %q %q %q: files %v, error %v", ns, name, request, podClaim, files, err)
		}
		f := files[0]
		if want := claim.MetadataHostDir + "/" + ns + "_" + name + "/" + base + "/metadata.json"; f.HostPath != want {
			t.Fatalf("host path %q, want %q", f.HostPath, want)
		}
		dir := "resourceclaims/" + name
		if podClaim != "" {
			dir = "resourceclaimtemplates/" + podClaim
		}
		if want := claim.MetadataContainerDir + "/" + dir + "/" + base + "/" + drv + "-metadata.json"; f.ContainerPath != want {
			t.Fatalf("container path %q, want %q", f.ContainerPath, want)
		}
		for root, p := range map[string]string{claim.MetadataHostDir: f.HostPath, claim.MetadataContainerDir: f.ContainerPath} {
			if path.Clean(p) != p || !strings.HasPrefix(p, root+"/") || strings.Contains(p, "\x00") {
				t.Fatalf("path %q leaves %s", p, root)
			}
		}
	})
}
