package allocator_test

import (
	"context"
	"errors"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
)

func admin(r resourceapi.DeviceRequest) resourceapi.DeviceRequest {
	r.Exactly.AdminAccess = ptr(true)
	return r
}

func tolerate(r resourceapi.DeviceRequest, tols ...resourceapi.DeviceToleration) resourceapi.DeviceRequest {
	r.Exactly.Tolerations = tols
	return r
}

func tainted(name string, taints ...resourceapi.DeviceTaint) resourceapi.Device {
	d := device(name, nil)
	d.Taints = taints
	return d
}

var (
	noSchedule = resourceapi.DeviceTaint{Key: "example.com/broken", Value: "yes", Effect: resourceapi.DeviceTaintEffectNoSchedule}
	noExecute  = resourceapi.DeviceTaint{Key: "example.com/broken", Value: "yes", Effect: resourceapi.DeviceTaintEffectNoExecute}
	noEffect   = resourceapi.DeviceTaint{Key: "example.com/info", Effect: resourceapi.DeviceTaintEffectNone}
)

func TestAllocateAdminAccess(t *testing.T) {
	classes := []*resourceapi.DeviceClass{anyClass}
	two := attrSlice(devices("dev-1", "dev-2")...)
	noAdmin := allocator.DefaultFeatures()
	noAdmin.DRAAdminAccess = false
	runAll(t, []scenario{{
		name: "admin access may use a device that is in use", slices: two, classes: classes,
		allocated: []*resourceapi.ResourceClaim{allocatedClaim("other", result(driverA, "pool-1", "dev-1"))},
		claims:    []*resourceapi.ResourceClaim{claim("c", admin(exact("req", "any", 1)))},
		wantResults: []resourceapi.AllocationResult{{
			Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
				Request: "req", Driver: driverA, Pool: "pool-1", Device: "dev-1", AdminAccess: ptr(true),
			}}},
			NodeSelector: localSelector(node1),
		}},
	}, {
		name: "admin access is rejected when DRAAdminAccess is off", features: &noAdmin, slices: two, classes: classes,
		claims:  []*resourceapi.ResourceClaim{claim("c", admin(exact("req", "any", 1)))},
		wantErr: allocator.ErrInvalidInput, wantErrText: "spec.devices.requests[0].exactly.adminAccess",
	}, {
		name: "admin access may use a device another claim of the same pod takes", slices: two, classes: classes,
		claims: []*resourceapi.ResourceClaim{claim("c1", exact("req", "any", 1)), claim("c2", admin(exact("req", "any", 1)))},
		want:   [][]string{{"req=pool-1/dev-1"}, {"req=pool-1/dev-1"}},
	}, {
		name: "admin access does not take one device twice in the same claim", slices: two, classes: classes,
		claims: []*resourceapi.ResourceClaim{claim("c", admin(exact("a", "any", 1)), admin(exact("b", "any", 1)))},
		want:   [][]string{{"a=pool-1/dev-1", "b=pool-1/dev-2"}},
	}, {
		name: "a device taken with admin access stays free for others", slices: two, classes: classes,
		allocated: []*resourceapi.ResourceClaim{func() *resourceapi.ResourceClaim {
			r := result(driverA, "pool-1", "dev-1")
			r.AdminAccess = ptr(true)
			return allocatedClaim("admin", r)
		}()},
		claims: []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 2))},
		want:   [][]string{{"req=pool-1/dev-1", "req=pool-1/dev-2"}},
	}, {
		name: "all devices with admin access include those in use", slices: two, classes: classes,
		allocated: []*resourceapi.ResourceClaim{allocatedClaim("other", result(driverA, "pool-1", "dev-1"))},
		claims: []*resourceapi.ResourceClaim{claim("c", func() resourceapi.DeviceRequest {
			r := admin(allOf("req", "any"))
			return r
		}())},
		want: [][]string{{"req=pool-1/dev-1", "req=pool-1/dev-2"}},
	}, {
		name: "devices of allocated claims are in use", slices: two, classes: classes,
		allocated: []*resourceapi.ResourceClaim{allocatedClaim("other", result(driverA, "pool-1", "dev-1"))},
		claims:    []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))},
		want:      [][]string{{"req=pool-1/dev-2"}},
	}})
}

func TestAllocateTaints(t *testing.T) {
	classes := []*resourceapi.DeviceClass{anyClass}
	noTaints := allocator.DefaultFeatures()
	noTaints.DRADeviceTaints = false
	tol := resourceapi.DeviceToleration{Key: "example.com/broken", Operator: resourceapi.DeviceTolerationOpExists}
	runAll(t, []scenario{{
		name: "a NoSchedule taint keeps a device from new claims", classes: classes,
		slices: attrSlice(tainted("dev-1", noSchedule), device("dev-2", nil)),
		claims: []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))},
		want:   [][]string{{"req=pool-1/dev-2"}},
	}, {
		name: "a NoExecute taint keeps a device from new claims", classes: classes,
		slices:  attrSlice(tainted("dev-1", noExecute)),
		claims:  []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))},
		wantErr: allocator.ErrUnsatisfiable,
	}, {
		name: "a taint with effect None does not block", classes: classes,
		slices: attrSlice(tainted("dev-1", noEffect)),
		claims: []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))},
		want:   [][]string{{"req=pool-1/dev-1"}},
	}, {
		name: "a tolerated taint does not block and the tolerations are copied into the result", classes: classes,
		slices: attrSlice(tainted("dev-1", noSchedule, noExecute)),
		claims: []*resourceapi.ResourceClaim{claim("c", tolerate(exact("req", "any", 1), tol))},
		wantResults: []resourceapi.AllocationResult{{
			Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
				Request: "req", Driver: driverA, Pool: "pool-1", Device: "dev-1",
				Tolerations: []resourceapi.DeviceToleration{tol},
			}}},
			NodeSelector: localSelector(node1),
		}},
	}, {
		name: "one of two taints tolerated still blocks", classes: classes,
		slices:  attrSlice(tainted("dev-1", noSchedule, resourceapi.DeviceTaint{Key: "other", Effect: resourceapi.DeviceTaintEffectNoSchedule})),
		claims:  []*resourceapi.ResourceClaim{claim("c", tolerate(exact("req", "any", 1), tol))},
		wantErr: allocator.ErrUnsatisfiable,
	}, {
		name: "taints are ignored when DRADeviceTaints is off", features: &noTaints, classes: classes,
		slices: attrSlice(tainted("dev-1", noSchedule)),
		claims: []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))},
		want:   [][]string{{"req=pool-1/dev-1"}},
	}, {
		name: "admin access does not override a taint", classes: classes,
		slices:  attrSlice(tainted("dev-1", noSchedule)),
		claims:  []*resourceapi.ResourceClaim{claim("c", admin(exact("req", "any", 1)))},
		wantErr: allocator.ErrUnsatisfiable,
	}, {
		name: "a tainted device among all devices makes the request fail", classes: classes,
		slices:  attrSlice(device("dev-0", nil), tainted("dev-1", noSchedule)),
		claims:  []*resourceapi.ResourceClaim{claim("c", allOf("req", "any"))},
		wantErr: allocator.ErrUnsatisfiable,
	}, {
		name: "a DeviceTaintRule taints the devices it selects", classes: classes,
		slices: attrSlice(devices("dev-1", "dev-2")...),
		rules:  []*resourceapi.DeviceTaintRule{taintRule("maintenance", "dev-1", noSchedule)},
		claims: []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))},
		want:   [][]string{{"req=pool-1/dev-2"}},
	}, {
		name: "a subrequest's tolerations apply to it", classes: classes,
		slices: attrSlice(tainted("dev-1", noSchedule)),
		claims: []*resourceapi.ResourceClaim{claim("c", firstAvailable("req", func() resourceapi.DeviceSubRequest {
			s := sub("tol", "any", 1)
			s.Tolerations = []resourceapi.DeviceToleration{tol}
			return s
		}()))},
		want: [][]string{{"req/tol=pool-1/dev-1"}},
	}})
}

func taintRule(name, dev string, taint resourceapi.DeviceTaint) *resourceapi.DeviceTaintRule {
	return &resourceapi.DeviceTaintRule{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourceapi.DeviceTaintRuleSpec{
			DeviceSelector: &resourceapi.DeviceTaintSelector{Driver: ptr(driverA), Pool: ptr("pool-1"), Device: ptr(dev)},
			Taint:          taint,
		},
	}
}

func TestSnapshotTaintRuleLifecycle(t *testing.T) {
	s := allocator.NewSnapshot(allocator.Options{})
	must(t, s.AddOrUpdateSlice(attrSlice(devices("dev-1")...)[0]))
	must(t, s.AddOrUpdateClass(anyClass))
	ctx, n := context.Background(), node(node1, nil)
	c := []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))}
	if _, err := s.Allocate(ctx, n, c); err != nil {
		t.Fatalf("before the rule: %v", err)
	}
	must(t, s.AddOrUpdateTaintRule(taintRule("maintenance", "dev-1", noSchedule)))
	if _, err := s.Allocate(ctx, n, c); err == nil {
		t.Fatalf("with the rule: want does not fit")
	}
	// A slice added after the rule is tainted too.
	must(t, s.AddOrUpdateSlice(attrSlice(devices("dev-1")...)[0]))
	if _, err := s.Allocate(ctx, n, c); err == nil {
		t.Fatalf("with the rule, slice updated: want does not fit")
	}
	must(t, s.DeleteTaintRule("maintenance"))
	if _, err := s.Allocate(ctx, n, c); err != nil {
		t.Fatalf("after deleting the rule: %v", err)
	}
	bad := taintRule("bad", "dev-1", resourceapi.DeviceTaint{Effect: resourceapi.DeviceTaintEffectNoSchedule})
	if err := s.AddOrUpdateTaintRule(bad); err == nil {
		t.Errorf("a rule without a taint key must be rejected")
	}
	if _, err := s.Allocate(ctx, n, c); err != nil {
		t.Fatalf("a rejected rule must leave the snapshot unchanged: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Kubernetes picks the most stable of its three allocator implementations that supports all enabled
// gates; with only the GA gates on, that is one that predates distinctAttribute and consumable capacity.
func TestAllocateWithOnlyStableGates(t *testing.T) {
	stable := allocator.Features{DRAAdminAccess: true, DRAPrioritizedList: true, DRAPartitionableDevices: true, DRADeviceTaints: true}
	classes := []*resourceapi.DeviceClass{anyClass}
	runAll(t, []scenario{{
		name: "distinctAttribute is an unsupported constraint", features: &stable, classes: classes,
		slices:  attrSlice(devices("dev-1", "dev-2")...),
		claims:  []*resourceapi.ResourceClaim{withConstraints(claim("c", exact("req", "any", 2)), distinctAttr(driverA+"/x"))},
		wantErr: allocator.ErrInvalidInput, wantErrText: "empty constraint",
	}, {
		name: "capacity requests are ignored", features: &stable, classes: classes,
		slices: attrSlice(devices("dev-1")...),
		claims: []*resourceapi.ResourceClaim{claim("c", withCapacity(exact("req", "any", 1), "1Gi"))},
		want:   [][]string{{"req=pool-1/dev-1"}},
	}})
}

// Devices are prepared when a call first meets them, with the rules in force when their slice was added
// or last re-tainted: a rule added to the parent after a fork, before anything was prepared, taints the
// parent's devices and not the fork's.
func TestLazyDevicesKeepTheRulesOfTheirSnapshot(t *testing.T) {
	s := allocator.NewSnapshot(allocator.Options{})
	must(t, s.AddOrUpdateSlice(attrSlice(devices("dev-1")...)[0]))
	must(t, s.AddOrUpdateClass(anyClass))
	fork := s.Fork()
	must(t, s.AddOrUpdateTaintRule(taintRule("maintenance", "dev-1", noSchedule)))

	ctx, n := context.Background(), node(node1, nil)
	c := []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))}
	if _, err := s.Allocate(ctx, n, c); !errors.Is(err, allocator.ErrUnsatisfiable) {
		t.Fatalf("parent with the rule: got %v, want does not fit", err)
	}
	if _, err := fork.Allocate(ctx, n, c); err != nil {
		t.Fatalf("fork without the rule: %v", err)
	}

	// And the other way round: the fork adds a rule after the parent prepared the devices.
	fork2 := s.Fork()
	must(t, fork2.DeleteTaintRule("maintenance"))
	if _, err := fork2.Allocate(ctx, n, c); err != nil {
		t.Fatalf("fork that deleted the rule: %v", err)
	}
	if _, err := s.Allocate(ctx, n, c); !errors.Is(err, allocator.ErrUnsatisfiable) {
		t.Fatalf("parent still has the rule: got %v, want does not fit", err)
	}
}
