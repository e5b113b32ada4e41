package manifest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/dralloc/dralloc/fuzz/watchdog"
)

// fuzzOptions bound what one input may ask for: the pods of its workloads and its size.
var fuzzOptions = Options{SkipUnknown: true, MaxPods: 100, MaxBytes: 1 << 20}

// maxFuzzAlloc bounds the memory one input may allocate. Within fuzzOptions' bounds an input
// allocates a few MiB at most (a 1 MiB document, 100 pods of a small template); an expansion that
// escaped the bounds (aliases, replicas, DaemonSets times Nodes) would allocate hundreds.
const maxFuzzAlloc = 256 << 20

// FuzzDecode feeds arbitrary bytes to Decode, through watchdog.Run: it must end in bounded time
// and memory without panicking; every error it returns must be an *Error that names the file;
// what it reads has at most MaxPods expanded pods, each with a source and a name no other pod of
// its namespace has. The seed corpus (testdata/fuzz/FuzzDecode) has the hostile inputs of the
// hardening issue: an alias bomb, nested aliases, an alias cycle, 40 Deployments of 100,000
// replicas, 20 DaemonSets on 20 Nodes, workloads with alike names, negative counts and ordinals,
// pods without names.
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
		watchdog.Run(t, data, func(context.Context) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			objs, err := Decode(bytes.NewReader(data), "fuzz.yaml", fuzzOptions)
			runtime.ReadMemStats(&after)
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > maxFuzzAlloc {
				t.Fatalf("allocated %d MiB for %d bytes of input", alloc>>20, len(data))
			}
			if err != nil {
				var e *Error
				if !errors.As(err, &e) || e.Source.File != "fuzz.yaml" {
					t.Fatalf("error %q is not an *Error naming the file", err)
				}
				return
			}
			checkExpandedPods(t, objs)
		})
	})
}

// checkExpandedPods checks that objs has at most fuzzOptions.MaxPods expanded pods, each with a
// source and a name that no other pod of its namespace has.
func checkExpandedPods(t *testing.T, objs *Objects) {
	t.Helper()
	count := make(map[string]int, len(objs.Pods))
	for _, pod := range objs.Pods {
		count[pod.Namespace+"/"+pod.Name]++
	}
	expanded := 0
	for _, pod := range objs.Pods {
		src, ok := objs.Source(pod)
		if !ok {
			t.Fatalf("pod %s has no source", pod.Name)
		}
		if src.Owner == "" {
			continue
		}
		expanded++
		if n := count[pod.Namespace+"/"+pod.Name]; n > 1 || pod.Name == "" {
			t.Fatalf("pod %s/%q of %s: %d pods have its name", pod.Namespace, pod.Name, src.Owner, n)
		}
	}
	if expanded > fuzzOptions.MaxPods {
		t.Fatalf("%d expanded pods, more than MaxPods (%d)", expanded, fuzzOptions.MaxPods)
	}
}
