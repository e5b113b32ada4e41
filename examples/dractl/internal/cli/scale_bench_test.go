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
// the dump (manifest.Load); loading it as place and explain do, each ResourceSlice fed into the
// snapshot as it is read, and building the cluster (load-build, with the heap it keeps, live-MB);
// and the whole command; and loading the dump's objects of each kind alone, as a List in JSON and in
// YAML (load-kind/json/Node...), with the memory they keep once read (live-MB) besides what loading
// them allocates (B/op). The dump is the one of the issue "Scale", written by testdata/scaledump
// (5,000 nodes of 8 GPUs, 10,000 pending pods) in JSON; without the variable the benchmark is
// skipped, the dump being too large to keep in the repository.
//
// Measured on the 2-core build machine, shared (go test -bench ScaleDump -benchtime 1x; the times
// vary twofold with the load):
//
//	                                 objects    time   live-MB  allocated
//	load-kind/json/ResourceSlice       5,000   0.5 s        98     175 MB
//	load-kind/yaml/ResourceSlice       5,000   1.1 s        98     451 MB  (865 MB parsing each entry twice)
//	load-kind/json/Node                5,000   0.16 s       15      39 MB
//	load-kind/yaml/Node                5,000   0.45 s       15     168 MB  (317 MB)
//	load-kind/json/Pod                10,000   0.19 s       26      63 MB
//	load-kind/yaml/Pod                10,000   0.5 s        26     227 MB  (421 MB)
//	load-build                        20,002   0.9 s        56     317 MB
//
// `dractl place -o text` on the whole dump (/usr/bin/time, three runs or more; CPU time is user+sys;
// wall time with the load average between 6 and 9 on the 2 cores, which it depends on more than on
// anything here): max RSS 568-591 MB and 2.7 s of CPU in JSON, 717-842 MB and 5.4 s in YAML, before
// the Lists were decoded item by item and the slices read let go of once copied; 431-461 MB and
// 2.4-2.8 s in JSON (wall 4.0-10 s), 393-463 MB and 4.9-5.1 s in YAML (wall 7.9-16 s) after. Then,
// with the slices fed into the snapshot as they are read (manifest.Options.TakeSlice: the decoded
// slices, 98 MB, are never all alive), equal attribute maps shared across the snapshot (55 MB for
// 40,000 two-entry maps), the CEL views and plain consumption of devices with the same maps shared
// (61 MB), each entry of a YAML List parsed once, and the entries parsed and the items decoded on
// every core: 234-257 MB and 2.0-2.3 s in JSON (wall 2.4-5.3 s), 232-261 MB and 3.0-3.3 s in YAML
// (wall 4.3-9.1 s); with GOMEMLIMIT=200MiB, which the Go runtime reads, 213-214 MB for 0.1-0.3 s
// more. The heap in use after a collection: 56 MB once loaded and built (was 134 MB after loading),
// 91 MB after placing (was 206 MB): the decoded pods (26 MB), the claims written (17 MB), the
// snapshot's copies of the nodes (14 MB) and of the slices (7 MB) are most of it. The dump's
// devices carry no uuid, so that every node publishes the same attributes; a fleet whose devices
// each have their own keeps an attribute map and a CEL view per device (about 1.3 and 1.2 KB).
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
