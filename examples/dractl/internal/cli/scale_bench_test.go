package cli

import (
	"io"
	"os"
	"testing"

	"github.com/dralloc/dralloc/allocator/manifest"
)

// BenchmarkScaleDump measures `dractl place -f $DRALLOC_SCALE_DUMP -o text` in its phases: loading
// the dump (manifest.Load), building the cluster from it, and the whole command. The dump is the one
// of the issue "Scale", written by testdata/scaledump (5,000 nodes of 8 GPUs, 10,000 pending pods);
// without the variable the benchmark is skipped, the dump being too large to keep in the repository.
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
	b.Run("build", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			objs, err := manifest.Load([]string{path}, opts)
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if _, err := buildCluster(objs, io.Discard, "dractl", false, true); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("place", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if code := run([]string{"place", "-f", path, "-o", "text"}, nil, io.Discard, io.Discard); code != exitOK {
				b.Fatalf("exit status %d", code)
			}
		}
	})
}
