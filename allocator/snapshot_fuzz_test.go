package allocator_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dralloc/dralloc/allocator"
)

// FuzzSnapshotForks runs a sequence of snapshot operations decoded from the input, three bytes each
// (operation, snapshot, argument): fork, allocate a claim and record it, delete or deallocate a claim,
// commit, discard, update or add or delete a slice, add a class, add or delete a taint rule; on the root or
// on any fork made so far, committed and discarded ones included. After every step the verifier must accept
// the allocated claims of the root and of the snapshot the step used, whatever commits succeeded: no device
// held twice, no share capacity or shared counter overdrawn, no claim on a device that is not published. A
// refused commit must leave the parent exactly as it was. Nothing may panic.
//
// Operations keep the world one where every allocation stays valid by itself (slice updates keep the
// devices, taints have effect None, a slice is deleted only by the snapshot that added it and only while
// none of its claims use it), so that every violation is one a commit let through.
func FuzzSnapshotForks(f *testing.F) {
	for _, seed := range [][]byte{
		// Eight forks of the root allocate two GPUs each and commit.
		{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 1, 1, 3, 1, 1, 4, 1, 3, 1, 0, 3, 2, 0, 3, 3, 0, 3, 4, 0},
		// Forks and a nested fork take shares of the NIC and partitions of one GPU, then commit in turn.
		{0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 2, 1, 2, 3, 1, 3, 4, 1, 0, 2, 3, 3, 0, 3, 2, 0, 3, 1, 0},
		// A fork allocates from a slice the root then deletes.
		{5, 0, 1, 0, 0, 0, 1, 1, 5, 6, 0, 0, 3, 1, 0},
		// Claims deleted in both, classes and taint rules changed under a fork.
		{1, 0, 0, 0, 0, 0, 2, 1, 0, 2, 0, 0, 7, 0, 1, 8, 0, 2, 3, 1, 0, 8, 0, 3},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 3*48 {
			data = data[:3*48]
		}
		w := newForkWorld(t)
		for step := 0; step+3 <= len(data); step += 3 {
			w.step(step/3, data[step], data[step+1], data[step+2])
			intact(t, w.snaps[0])
			if t.Failed() {
				t.Fatalf("after step %d: %s", step/3, w.last)
			}
		}
	})
}

// forkWorld is the state of one FuzzSnapshotForks run: every snapshot made so far (the root first) and,
// per snapshot, the extra slices it added itself.
type forkWorld struct {
	t      *testing.T
	snaps  []*allocator.Snapshot
	parent []int // index of each snapshot's parent; -1 for the root
	extras []map[string]bool
	last   string
}

// The requests a fuzzed claim may make, by the kind of device.
var forkRequests = []resourceapi.DeviceRequest{
	exact("req", "any", 1, forkKind("gpu")),
	exact("req", "any", 2, forkKind("gpu")),
	withCapacity(exact("req", "any", 1, forkKind("nic")), "3Gi"),
	exact("req", "half", 1),
	exact("req", "whole", 1),
}

// forkKind selects the devices of one kind; partitions have none.
func forkKind(kind string) string {
	attrs := `device.attributes["` + driverA + `"]`
	return `"kind" in ` + attrs + ` && ` + attrs + `.kind == "` + kind + `"`
}

// forkSizeClass selects the partitions of one size; other devices have no size.
func forkSizeClass(size string) *resourceapi.DeviceClass {
	attrs := `device.attributes["` + driverA + `"]`
	return class(size, `"size" in `+attrs+` && `+attrs+`.size == "`+size+`"`)
}

func kindDevices(kind string, names ...string) []resourceapi.Device {
	out := make([]resourceapi.Device, len(names))
	for i, n := range names {
		out[i] = device(n, map[string]any{"kind": kind})
	}
	return out
}

func gpuNodeSlice(nodeName string, rev int) *resourceapi.ResourceSlice {
	s := nodeSlice(nodeName+"-gpu", nodeName, driverA, nodeName+"-gpu", kindDevices("gpu", "gpu-0", "gpu-1", "gpu-2")...)
	for i := range s.Spec.Devices {
		s.Spec.Devices[i].Attributes["rev"] = resourceapi.DeviceAttribute{IntValue: ptr(int64(rev))}
	}
	return s
}

func newForkWorld(t *testing.T) *forkWorld {
	var next atomic.Int64
	s := allocator.NewSnapshot(allocator.Options{ShareIDs: func() types.UID { return types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", next.Add(1))) }})
	nic := shareable("nic-0", "8Gi", nil)
	nic.Attributes = map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"kind": {StringValue: ptr("nic")}}
	objects := []error{
		s.AddOrUpdateClass(anyClass), s.AddOrUpdateClass(forkSizeClass("half")), s.AddOrUpdateClass(forkSizeClass("whole")),
		s.AddOrUpdateSlice(gpuNodeSlice(node1, 0)), s.AddOrUpdateSlice(gpuNodeSlice(node2, 0)),
		s.AddOrUpdateSlice(networkSlice("fabric", "fabric", nil, nic)),
	}
	for _, sl := range partitionedPool(partition("p-a", "half", "4Gi"), partition("p-b", "half", "4Gi"), partition("whole", "whole", "8Gi")) {
		objects = append(objects, s.AddOrUpdateSlice(sl))
	}
	for _, err := range objects {
		if err != nil {
			t.Fatal(err)
		}
	}
	return &forkWorld{t: t, snaps: []*allocator.Snapshot{s}, parent: []int{-1}, extras: []map[string]bool{{}}}
}

// step runs one operation on snapshot which (modulo the number of snapshots) with argument arg.
func (w *forkWorld) step(n int, op, which, arg byte) {
	t := w.t
	i := int(which) % len(w.snaps)
	s := w.snaps[i]
	ctx := context.Background()
	// An error a closed fork or the root may give for the operation, besides the one it must not.
	allowed := func(err error, what string) {
		t.Helper()
		switch {
		case err == nil, errors.Is(err, allocator.ErrClosed):
		case i == 0 && strings.Contains(err.Error(), "snapshot is not a fork"):
		default:
			t.Fatalf("step %d: %s on snapshot %d: %v", n, what, i, err)
		}
	}
	switch op % 9 {
	case 0:
		w.last = fmt.Sprintf("fork snapshot %d", i)
		w.snaps = append(w.snaps, s.Fork())
		w.parent = append(w.parent, i)
		w.extras = append(w.extras, map[string]bool{})
	case 1:
		c := claim(fmt.Sprintf("c-%d", n), forkRequests[int(arg)%len(forkRequests)])
		nodeName := []string{node1, node2}[int(arg)/len(forkRequests)%2]
		w.last = fmt.Sprintf("allocate %s (request %d) on %s in snapshot %d", c.Name, int(arg)%len(forkRequests), nodeName, i)
		r, err := s.Allocate(ctx, node(nodeName, nil), []*resourceapi.ResourceClaim{c})
		switch {
		case errors.Is(err, allocator.ErrUnsatisfiable), errors.Is(err, allocator.ErrClosed):
			return
		case err != nil:
			t.Fatalf("step %d: %s: %v", n, w.last, err)
		}
		c.Status.Allocation = &r[0]
		allowed(s.AddOrUpdateClaim(c), "record the allocation")
	case 2:
		_, _, _, claims := allocator.SnapshotObjects(s)
		if len(claims) == 0 {
			return
		}
		c := claims[int(arg)%len(claims)]
		if arg&0x80 != 0 {
			w.last = fmt.Sprintf("deallocate %s in snapshot %d", c.Name, i)
			pending := c.DeepCopy()
			pending.Status.Allocation = nil
			allowed(s.AddOrUpdateClaim(pending), "deallocate")
		} else {
			w.last = fmt.Sprintf("delete %s in snapshot %d", c.Name, i)
			allowed(s.DeleteClaim(c.Namespace, c.Name), "delete claim")
		}
	case 3:
		w.last = fmt.Sprintf("commit snapshot %d", i)
		if i == 0 {
			allowed(s.Commit(), "commit")
			return
		}
		p := w.snaps[w.parent[i]]
		before := snapshotContent(p)
		err := s.Commit()
		if errors.Is(err, allocator.ErrConflict) {
			var ce *allocator.ConflictError
			if !errors.As(err, &ce) || ce.Claim.Name == "" {
				t.Fatalf("step %d: conflict without a claim: %v", n, err)
			}
			if after := snapshotContent(p); !reflect.DeepEqual(before, after) {
				t.Fatalf("step %d: a refused commit changed the parent: %v", n, err)
			}
			w.last += " (conflict: " + err.Error() + ")"
			return
		}
		allowed(err, "commit")
		if err == nil {
			for name := range w.extras[i] {
				w.extras[w.parent[i]][name] = true
			}
		}
	case 4:
		w.last = fmt.Sprintf("discard snapshot %d", i)
		allowed(s.Discard(), "discard")
	case 5:
		if arg%2 == 0 {
			nodeName := []string{node1, node2}[int(arg/2)%2]
			w.last = fmt.Sprintf("update the GPUs of %s in snapshot %d", nodeName, i)
			allowed(s.AddOrUpdateSlice(gpuNodeSlice(nodeName, n)), "update slice")
			return
		}
		name := fmt.Sprintf("extra-%d", n)
		w.last = fmt.Sprintf("add slice %s in snapshot %d", name, i)
		err := s.AddOrUpdateSlice(nodeSlice(name, node1, driverA, name, kindDevices("gpu", "gpu-0")...))
		allowed(err, "add slice")
		if err == nil {
			w.extras[i][name] = true
		}
	case 6:
		// Only a slice this snapshot added, and only while none of its claims use it.
		for name := range w.extras[i] {
			if w.uses(s, name) {
				continue
			}
			w.last = fmt.Sprintf("delete slice %s in snapshot %d", name, i)
			err := s.DeleteSlice(name)
			allowed(err, "delete slice")
			if err == nil {
				delete(w.extras[i], name)
			}
			return
		}
	case 7:
		w.last = fmt.Sprintf("update classes in snapshot %d", i)
		allowed(s.AddOrUpdateClass(anyClass), "update class")
		allowed(s.AddOrUpdateClass(class(fmt.Sprintf("extra-%d", arg%4), "device.driver != \"\"")), "add class")
	case 8:
		name := fmt.Sprintf("rule-%d", arg%2)
		if arg&0x80 != 0 {
			w.last = fmt.Sprintf("delete taint rule %s in snapshot %d", name, i)
			allowed(s.DeleteTaintRule(name), "delete taint rule")
			return
		}
		w.last = fmt.Sprintf("add taint rule %s in snapshot %d", name, i)
		allowed(s.AddOrUpdateTaintRule(taintRule(name, "gpu-0", resourceapi.DeviceTaint{Key: "example.com/note", Effect: resourceapi.DeviceTaintEffectNone})), "add taint rule")
	}
}

// uses reports whether a claim of the snapshot holds a device of the slice (every extra slice has its own
// pool).
func (w *forkWorld) uses(s *allocator.Snapshot, slice string) bool {
	_, _, _, claims := allocator.SnapshotObjects(s)
	for _, c := range claims {
		if c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.Pool == slice {
				return true
			}
		}
	}
	return false
}

// snapshotContent is what a snapshot holds, comparable with reflect.DeepEqual.
func snapshotContent(s *allocator.Snapshot) []any {
	slices, classes, rules, claims := allocator.SnapshotObjects(s)
	return []any{slices, classes, rules, claims}
}
