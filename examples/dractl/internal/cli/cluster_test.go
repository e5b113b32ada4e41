package cli

import (
	"io"
	"runtime"
	"strings"
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
	// A collected object's cleanup is queued by the collection that finds it unreachable and runs once the
	// cleanup goroutine is scheduled, which on a loaded host may take long; the deadline is for a ResourceSlice
	// kept alive, never for a slow machine.
	gone := false
	for deadline := time.Now().Add(30 * time.Second); !gone && time.Now().Before(deadline); {
		runtime.GC()
		select {
		case <-collected:
			gone = true
		case <-time.After(10 * time.Millisecond):
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

// TestSliceFeed: place and explain add each ResourceSlice to the snapshot as it is read. A slice read
// again replaces the one read before, with the warning buildCluster gives for the other kinds; lint,
// which reads the slices themselves, sees the same devices. (The snapshot validates a slice as the
// loader has before, so an error of the feed is manifest's TestTakeSliceHostile.)
func TestSliceFeed(t *testing.T) {
	slice := func(devices string) string {
		return `apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: n1-gpus}
spec: {driver: gpu.example.com, nodeName: n1, pool: {name: n1, resourceSliceCount: 1}, devices: [` + devices + `]}
`
	}
	node := "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: \"8\", memory: 32Gi, pods: \"110\"}}\n"
	pod := `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: c, image: i, resources: {claims: [{name: gpus}]}}]
  resourceClaims: [{name: gpus, resourceClaimTemplateName: two}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: two}
spec: {spec: {devices: {requests: [{name: g, exactly: {deviceClassName: gpu, count: 2}}]}}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec: {selectors: [{cel: {expression: "device.driver == 'gpu.example.com'"}}]}
`
	// The first slice has one device, the second two: the pod fits only if the second replaced it.
	in := node + "---\n" + slice("{name: g0}") + "---\n" + slice("{name: g0}, {name: g1}") + "---\n" + pod
	code, out, errOut := dractl(t, in, "place", "-f", "-", "-o", "text")
	wantErr := "dractl: -: document 3: ResourceSlice n1-gpus replaces the one read at -: document 2, as kubectl apply would\n"
	if code != exitOK || !strings.Contains(out, "Pod default/p goes to node n1") || errOut != wantErr {
		t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	code, out, errOut = dractl(t, in, "lint", "-f", "-")
	if code != exitOK || !strings.Contains(out, "against 2 devices") || errOut != wantErr {
		t.Errorf("lint: exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}
