package manifest_test

import (
	"strings"
	"testing"

	"github.com/dralloc/dralloc/allocator/manifest"
)

// TestDecodeResourceQuota: a ResourceQuota is read (not skipped as an unknown kind), with its source
// and the input's namespace when it has none.
func TestDecodeResourceQuota(t *testing.T) {
	input := `
apiVersion: v1
kind: ResourceQuota
metadata: {name: gpus}
spec:
  hard:
    gpu.deviceclass.resource.k8s.io/devices: "2"
`
	objs, err := manifest.Decode(strings.NewReader(input), "quota.yaml", manifest.Options{Namespace: "team-a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs.ResourceQuotas) != 1 || objs.Len() != 1 || len(objs.Skipped) != 0 {
		t.Fatalf("read %d ResourceQuotas of %d objects, skipped %v; want the one", len(objs.ResourceQuotas), objs.Len(), objs.Skipped)
	}
	q := objs.ResourceQuotas[0]
	hard := q.Spec.Hard["gpu.deviceclass.resource.k8s.io/devices"]
	if q.Namespace != "team-a" || hard.Value() != 2 {
		t.Fatalf("ResourceQuota %s/%s with %s, want team-a/gpus with 2", q.Namespace, q.Name, hard.String())
	}
	if src, ok := objs.Source(q); !ok || !strings.HasPrefix(src.String(), "quota.yaml") {
		t.Fatalf("source %v, %v", src, ok)
	}
}
