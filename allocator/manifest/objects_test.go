package manifest

import (
	"runtime"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
)

// TestObjectsDoNotKeepDroppedObjectsAlive: an object the caller drops from Objects is collected,
// though Objects still knows where the others were read. dractl drops each ResourceSlice once the
// snapshot has copied it; the sources of a large dump must not keep a second copy of every slice.
func TestObjectsDoNotKeepDroppedObjectsAlive(t *testing.T) {
	objs := decodeString(t, `apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: a}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: b}
`, Options{})
	if len(objs.Classes) != 2 {
		t.Fatalf("got %d classes, want 2", len(objs.Classes))
	}
	collected := make(chan struct{})
	runtime.AddCleanup(objs.Classes[0], func(struct{}) { close(collected) }, struct{}{})
	kept := objs.Classes[1]
	objs.Classes = []*resourceapi.DeviceClass{kept}
	// A collected object's cleanup is queued by the collection that finds it unreachable and runs once the
	// cleanup goroutine is scheduled, which on a loaded host may take long; the deadline is for a DeviceClass
	// kept alive, never for a slow machine.
	collectedInTime := false
	for deadline := time.Now().Add(30 * time.Second); !collectedInTime && time.Now().Before(deadline); {
		runtime.GC()
		select {
		case <-collected:
			collectedInTime = true
		case <-time.After(10 * time.Millisecond):
		}
	}
	if !collectedInTime {
		t.Error("the DeviceClass dropped from Objects is still alive: Objects.Source keeps it")
	}
	if src, ok := objs.Source(kept); !ok || src.Document != 2 {
		t.Errorf("Source of the DeviceClass kept: %v, %v; want document 2", src, ok)
	}
	if _, ok := objs.Source(&resourceapi.DeviceClass{}); ok {
		t.Error("Source of an object not read: found")
	}
}
