package cli

import (
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/dralloc/dralloc/allocator/manifest"
)

// TestBuildClusterLetsGoOfDevices: with dropDevices (place, explain), a ResourceSlice read is
// collected once the snapshot has its copy, while the cluster is in use; the snapshot still has the
// slice's devices. A dump's slices as read are about 100 MB besides the snapshot's copies.
func TestBuildClusterLetsGoOfDevices(t *testing.T) {
	objs, err := manifest.Load([]string{reasons}, manifest.Options{SkipUnknown: true, Validate: validate})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs.Slices) == 0 {
		t.Fatal("no ResourceSlices in the input")
	}
	collected := make(chan struct{})
	runtime.AddCleanup(objs.Slices[0], func(struct{}) { close(collected) }, struct{}{})
	c, err := buildCluster(objs, io.Discard, "dractl", false, true)
	if err != nil {
		t.Fatal(err)
	}
	gone := false
	for range 20 {
		runtime.GC()
		select {
		case <-collected:
			gone = true
		case <-time.After(10 * time.Millisecond):
		}
		if gone {
			break
		}
	}
	if !gone {
		t.Error("the ResourceSlice read is still alive after the snapshot copied it")
	}
	if len(c.snap.CounterSets()) == 0 && len(c.snap.Nodes()) == 0 {
		t.Error("the snapshot has neither pools nor nodes")
	}
	runtime.KeepAlive(c)
}
