package manifest

import (
	"bytes"
	"fmt"
	"testing"

	"sigs.k8s.io/yaml"
)

// BenchmarkDecode reads a kubectl List of 100 ResourceSlices of 8 devices each and 100 claims, in
// v1 and in v1beta1 (which is converted), as YAML and as JSON.
func BenchmarkDecode(b *testing.B) {
	for _, version := range []string{"v1", "v1beta1"} {
		var in bytes.Buffer
		in.WriteString("apiVersion: v1\nkind: List\nitems:\n")
		for s := range 100 {
			fmt.Fprintf(&in, "- apiVersion: resource.k8s.io/%s\n  kind: ResourceSlice\n  metadata: {name: node-%d-gpu}\n", version, s)
			fmt.Fprintf(&in, "  spec:\n    driver: gpu.example.com\n    nodeName: node-%d\n    pool: {name: node-%d, generation: 1, resourceSliceCount: 1}\n    devices:\n", s, s)
			for d := range 8 {
				if version == "v1" {
					fmt.Fprintf(&in, "    - name: gpu-%d\n      attributes: {model: {string: H200}, index: {int: %d}}\n      capacity: {memory: {value: 141Gi}}\n", d, d)
				} else {
					fmt.Fprintf(&in, "    - name: gpu-%d\n      basic:\n        attributes: {model: {string: H200}, index: {int: %d}}\n        capacity: {memory: {value: 141Gi}}\n", d, d)
				}
			}
			fmt.Fprintf(&in, "- apiVersion: resource.k8s.io/%s\n  kind: ResourceClaim\n  metadata: {name: claim-%d, namespace: ml}\n", version, s)
			if version == "v1" {
				in.WriteString("  spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com, count: 2}}]}}\n")
			} else {
				in.WriteString("  spec: {devices: {requests: [{name: gpu, deviceClassName: gpu.example.com, count: 2}]}}\n")
			}
		}
		asJSON, err := yaml.YAMLToJSON(in.Bytes())
		if err != nil {
			b.Fatal(err)
		}
		for _, format := range []struct {
			name string
			data []byte
		}{{"yaml", in.Bytes()}, {"json", asJSON}} {
			benchmarkDecode(b, version+"/"+format.name, format.data)
		}
	}
}

func benchmarkDecode(b *testing.B, name string, data []byte) {
	b.Run(name, func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			objs, err := Decode(bytes.NewReader(data), "bench.yaml", Options{})
			if err != nil {
				b.Fatal(err)
			}
			if len(objs.Slices) != 100 || len(objs.Claims) != 100 {
				b.Fatalf("got %d slices and %d claims", len(objs.Slices), len(objs.Claims))
			}
		}
	})
}
