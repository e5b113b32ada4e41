package manifest

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to Decode: it must not panic, and every error it returns must
// be an *Error that names the file.
func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob("testdata/demo/dra-example-driver/*/*.yaml")
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice", "metadata": {"name": "s"}, "spec": {"devices": [{"name": "d", "basic": {}}]}}]}`))
	f.Add([]byte("apiVersion: apps/v1\nkind: Job\nmetadata: {name: j}\nspec: {parallelism: 2, completionMode: Indexed, completions: 3, template: {spec: {containers: [{name: c}]}}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := Decode(bytes.NewReader(data), "fuzz.yaml", Options{SkipUnknown: true, MaxPods: 100})
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Source.File != "fuzz.yaml" {
				t.Fatalf("error %q is not an *Error naming the file", err)
			}
			return
		}
		for _, pod := range objs.Pods {
			if _, ok := objs.Source(pod); !ok {
				t.Fatalf("pod %s has no source", pod.Name)
			}
		}
	})
}
