package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/dralloc/dralloc/allocator/manifest"
)

// BenchmarkScaleDump measures `dractl place -f $DRALLOC_SCALE_DUMP -o text` in its phases: loading
// the dump (manifest.Load), building the cluster from it, and the whole command; and loading the
// dump's objects of each kind alone, as a List in JSON and in YAML (load-kind/json/Node...), with the
// memory they keep once read (live-MB) besides what loading them allocates (B/op). The dump is the
// one of the issue "Scale", written by testdata/scaledump (5,000 nodes of 8 GPUs, 10,000 pending
// pods) in JSON; without the variable the benchmark is skipped, the dump being too large to keep in
// the repository.
//
// Measured on the 2-core build machine, shared (go test -bench ScaleDump -benchtime 1x):
//
//	                                 objects    time   live-MB  allocated
//	load-kind/json/ResourceSlice       5,000   1.0 s        98     175 MB
//	load-kind/yaml/ResourceSlice       5,000   3.3 s        98     865 MB
//	load-kind/json/Node                5,000   0.15 s       15      40 MB
//	load-kind/yaml/Node                5,000   0.7 s        15     317 MB
//	load-kind/json/Pod                10,000   0.2 s        27      63 MB
//	load-kind/yaml/Pod                10,000   0.9 s        26     421 MB
//
// `dractl place -o text` on the whole dump (/usr/bin/time, three runs, the machine loaded so that wall
// time says little; CPU time is user+sys): max RSS 568-591 MB and 2.7 s of CPU in JSON, 717-842 MB
// and 5.4 s in YAML, before the Lists were decoded item by item and the slices read let go of once
// copied; 431-439 MB and 2.7 s in JSON, 393-450 MB and 5.0 s in YAML after. The heap in use after a
// collection: 134 MB after loading (both), 210 MB then 108 MB after building, 308 MB then 206 MB after
// placing; what placing keeps (about 100 MB: the devices' CEL views, the claims, the node classes)
// and the snapshot's copies of the slices (65 MB) are most of what is left.
func BenchmarkScaleDump(b *testing.B) {
	path := os.Getenv("DRALLOC_SCALE_DUMP")
	if path == "" {
		b.Skip("DRALLOC_SCALE_DUMP names no dump (go run ./testdata/scaledump > dump.json)")
	}
	opts := manifest.Options{SkipUnknown: true, Validate: validate}
	b.Run("load", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := manifest.Load([]string{path}, opts); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("load-build", func(b *testing.B) {
		// As place and explain build the cluster: the slices go into the snapshot as they are read.
		b.ReportAllocs()
		var live float64
		for b.Loop() {
			before := heapLive()
			snap := newSnapshot(false)
			feed := opts
			feed.TakeSlice = newSliceFeed(snap, io.Discard, "dractl").take
			objs, err := manifest.Load([]string{path}, feed)
			if err != nil {
				b.Fatal(err)
			}
			c, err := buildInto(snap, objs, io.Discard, "dractl", true)
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			live = float64(heapLive()-before) / 1e6
			runtime.KeepAlive(c)
			b.StartTimer()
		}
		b.ReportMetric(live, "live-MB")
	})
	b.Run("place", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if code := run([]string{"place", "-f", path, "-o", "text"}, nil, io.Discard, io.Discard); code != exitOK {
				b.Fatalf("exit status %d", code)
			}
		}
	})
	files, err := splitByKind(path, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range files {
		b.Run("load-kind/"+f.format+"/"+f.kind, func(b *testing.B) {
			b.ReportAllocs()
			var live float64
			for b.Loop() {
				before := heapLive()
				objs, err := manifest.Load([]string{f.path}, opts)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				live = float64(heapLive()-before) / 1e6
				runtime.KeepAlive(objs)
				b.StartTimer()
			}
			b.ReportMetric(live, "live-MB")
			b.ReportMetric(float64(f.objects), "objects")
		})
	}
}

// heapLive is the heap in use after a collection.
func heapLive() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

type kindFile struct {
	kind, format, path string
	objects            int
}

// splitByKind writes the items of the JSON List at path into one List per kind, in JSON and in
// YAML (as kubectl get -o yaml writes a List), under dir.
func splitByKind(path, dir string) ([]kindFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var list struct{ Items []json.RawMessage }
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("%s: not a JSON List: %w", path, err)
	}
	byKind := map[string][]json.RawMessage{}
	var kinds []string
	for _, item := range list.Items {
		var meta struct{ Kind string }
		if err := json.Unmarshal(item, &meta); err != nil {
			return nil, err
		}
		if _, ok := byKind[meta.Kind]; !ok {
			kinds = append(kinds, meta.Kind)
		}
		byKind[meta.Kind] = append(byKind[meta.Kind], item)
	}
	var files []kindFile
	for _, kind := range kinds {
		items := byKind[kind]
		if len(items) < 100 {
			continue // the DeviceClass and the template: nothing to measure
		}
		asJSON, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
		if err != nil {
			return nil, err
		}
		var asYAML bytes.Buffer
		asYAML.WriteString("apiVersion: v1\nitems:\n")
		for _, item := range items {
			y, err := yaml.JSONToYAML(item)
			if err != nil {
				return nil, err
			}
			asYAML.WriteString("- " + strings.ReplaceAll(strings.TrimSuffix(string(y), "\n"), "\n", "\n  ") + "\n")
		}
		asYAML.WriteString("kind: List\n")
		for i, format := range []string{"json", "yaml"} {
			content := [][]byte{asJSON, asYAML.Bytes()}[i]
			p := filepath.Join(dir, kind+"."+format)
			if err := os.WriteFile(p, content, 0o600); err != nil {
				return nil, err
			}
			files = append(files, kindFile{kind: kind, format: format, path: p, objects: len(items)})
		}
	}
	return files, nil
}
