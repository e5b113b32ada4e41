package allocator_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

func TestAllocateInvalidInput(t *testing.T) {
	slices := attrSlice(device("dev-1", map[string]any{"model": "a"}))
	emptySelector := claim("c", exact("req", "any", 1))
	emptySelector.Spec.Devices.Requests[0].Exactly.Selectors = []resourceapi.DeviceSelector{{}}
	noMode := claim("c", exact("req", "any", 1))
	noMode.Spec.Devices.Requests[0].Exactly.AllocationMode = "Some"
	neither := claim("c", resourceapi.DeviceRequest{Name: "req"})
	runAll(t, []scenario{{
		name: "an unknown device class", slices: slices, classes: []*resourceapi.DeviceClass{anyClass},
		claims:  []*resourceapi.ResourceClaim{claim("c", exact("req", "gpu", 1))},
		wantErr: allocator.ErrInvalidInput, wantErrText: "ResourceClaim default/c: spec.devices.requests[0].exactly.deviceClassName: device class gpu not found",
	}, {
		name: "a stored class selector that does not compile", slices: slices, classes: []*resourceapi.DeviceClass{class("any", "device.driver ==")}, trusted: true,
		claims:  []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))},
		wantErr: allocator.ErrInvalidInput, wantErrText: "DeviceClass any: spec.selectors[0].cel.expression",
	}, {
		name: "a request selector that fails at runtime", slices: slices, classes: []*resourceapi.DeviceClass{anyClass},
		claims:  []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1, `device.attributes["`+driverA+`"].missing == "x"`))},
		wantErr: allocator.ErrInvalidInput, wantErrText: "spec.devices.requests[0].exactly.selectors[0].cel.expression",
	}, {
		name: "a selector error is not reported while no device reaches it", classes: []*resourceapi.DeviceClass{anyClass},
		claims:  []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1, "device.driver =="))},
		wantErr: allocator.ErrUnsatisfiable,
	}, {
		name: "a selector without CEL", slices: slices, classes: []*resourceapi.DeviceClass{anyClass},
		claims:  []*resourceapi.ResourceClaim{emptySelector},
		wantErr: allocator.ErrInvalidInput, wantErrText: "selectors[0]",
	}, {
		name: "an unknown allocation mode", slices: slices, classes: []*resourceapi.DeviceClass{anyClass},
		claims:  []*resourceapi.ResourceClaim{noMode},
		wantErr: allocator.ErrInvalidInput, wantErrText: "allocationMode",
	}, {
		name: "a request with neither exactly nor firstAvailable", slices: slices, classes: []*resourceapi.DeviceClass{anyClass},
		claims:  []*resourceapi.ResourceClaim{neither},
		wantErr: allocator.ErrInvalidInput, wantErrText: "spec.devices.requests[0]",
	}, {
		name: "a nil claim", slices: slices, classes: []*resourceapi.DeviceClass{anyClass},
		claims:  []*resourceapi.ResourceClaim{nil},
		wantErr: allocator.ErrInvalidInput,
	}})
}

func TestSnapshotRejectsMalformedObjects(t *testing.T) {
	s := allocator.NewSnapshot(allocator.Options{})
	noDriver := nodeSlice("s1", node1, "", "pool-1")
	noPool := nodeSlice("s1", node1, driverA, "")
	for name, err := range map[string]error{
		"nil slice":              s.AddOrUpdateSlice(nil),
		"slice without a driver": s.AddOrUpdateSlice(noDriver),
		"slice without a pool":   s.AddOrUpdateSlice(noPool),
		"nil class":              s.AddOrUpdateClass(nil),
		"nil claim":              s.AddOrUpdateClaim(nil),
		"nil rule":               s.AddOrUpdateTaintRule(nil),
		"nil node":               s.AddOrUpdateNode(nil),
	} {
		if !errors.Is(err, allocator.ErrInvalidInput) {
			t.Errorf("%s: got %v, want ErrInvalidInput", name, err)
		}
	}
	if _, err := s.Allocate(context.Background(), nil, nil); !errors.Is(err, allocator.ErrInvalidInput) {
		t.Errorf("nil node: got %v", err)
	}
}

func TestSnapshotUpdates(t *testing.T) {
	ctx, n := context.Background(), node(node1, nil)
	s := allocator.NewSnapshot(allocator.Options{})
	must(t, s.AddOrUpdateClass(class("model-a", model("a"))))
	must(t, s.AddOrUpdateSlice(attrSlice(modelDevices("dev-1", "b")...)[0]))
	want := func(step, dev string) {
		t.Helper()
		r, err := s.Allocate(ctx, n, []*resourceapi.ResourceClaim{claim("c", exact("req", "model-a", 1))})
		got := "none"
		if err == nil {
			got = r[0].Devices.Results[0].Device
		} else if !errors.Is(err, allocator.ErrUnsatisfiable) {
			t.Fatalf("%s: %v", step, err)
		}
		if got != dev {
			t.Errorf("%s: got %s, want %s", step, got, dev)
		}
	}
	want("no matching device", "none")
	must(t, s.AddOrUpdateSlice(attrSlice(modelDevices("dev-1", "b", "dev-2", "a")...)[0]))
	want("slice updated", "dev-2")
	must(t, s.AddOrUpdateClaim(allocatedClaim("holder", result(driverA, "pool-1", "dev-2"))))
	want("device allocated", "none")
	must(t, s.DeleteClaim("default", "holder"))
	want("claim deleted", "dev-2")
	must(t, s.AddOrUpdateClass(class("model-a", model("b"))))
	want("class changed", "dev-1")
	must(t, s.DeleteSlice("s1"))
	want("slice deleted", "none")
	must(t, s.DeleteClass("model-a"))
	if _, err := s.Allocate(ctx, n, []*resourceapi.ResourceClaim{claim("c", exact("req", "model-a", 1))}); !errors.Is(err, allocator.ErrInvalidInput) {
		t.Errorf("class deleted: got %v, want ErrInvalidInput", err)
	}
	must(t, s.AddOrUpdateNode(n))
	must(t, s.AddOrUpdateClass(anyClass))
	must(t, s.AddOrUpdateSlice(attrSlice(devices("dev-9")...)[0]))
	if r, err := s.AllocateOnNode(ctx, node1, []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))}); err != nil || r[0].Devices.Results[0].Device != "dev-9" {
		t.Errorf("allocate on a stored node: %v %v", r, err)
	}
	must(t, s.DeleteNode(node1))
	if _, err := s.AllocateOnNode(ctx, node1, nil); !errors.Is(err, allocator.ErrInvalidInput) {
		t.Errorf("deleted node: got %v", err)
	}
}

func TestSnapshotFork(t *testing.T) {
	ctx, n := context.Background(), node(node1, nil)
	fits := func(s *allocator.Snapshot) bool {
		_, err := s.Allocate(ctx, n, []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))})
		return err == nil
	}
	base := func() *allocator.Snapshot {
		s := allocator.NewSnapshot(allocator.Options{})
		must(t, s.AddOrUpdateClass(anyClass))
		must(t, s.AddOrUpdateSlice(attrSlice(devices("dev-1")...)[0]))
		return s
	}
	hold := allocatedClaim("holder", result(driverA, "pool-1", "dev-1"))

	t.Run("discarded changes never reach the parent", func(t *testing.T) {
		s := base()
		f := s.Fork()
		must(t, f.AddOrUpdateClaim(hold))
		if fits(f) || !fits(s) {
			t.Fatalf("fork must be full, parent free")
		}
		must(t, f.Discard())
		if !fits(s) {
			t.Errorf("parent changed by a discarded fork")
		}
		if err := f.AddOrUpdateClaim(hold); !errors.Is(err, allocator.ErrClosed) {
			t.Errorf("use after discard: got %v", err)
		}
	})
	t.Run("commit adopts the fork when the parent is unchanged", func(t *testing.T) {
		s := base()
		f := s.Fork()
		must(t, f.AddOrUpdateClaim(hold))
		must(t, f.Commit())
		if fits(s) {
			t.Errorf("committed claim missing in the parent")
		}
		if err := f.Commit(); !errors.Is(err, allocator.ErrClosed) {
			t.Errorf("second commit: got %v", err)
		}
	})
	t.Run("commit replays the fork's changes on a parent that changed meanwhile", func(t *testing.T) {
		s := base()
		f := s.Fork()
		must(t, f.AddOrUpdateClaim(hold))
		must(t, s.AddOrUpdateSlice(attrSlice(devices("dev-1", "dev-2")...)[0]))
		must(t, f.Commit())
		r, err := s.Allocate(ctx, n, []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))})
		if err != nil || r[0].Devices.Results[0].Device != "dev-2" {
			t.Errorf("after replay: %v %v, want dev-2 (dev-1 held by the committed claim)", describe(r), err)
		}
	})
	t.Run("forks nest", func(t *testing.T) {
		s := base()
		f1 := s.Fork()
		f2 := f1.Fork()
		must(t, f2.AddOrUpdateClaim(hold))
		must(t, f2.Commit())
		if fits(f1) == true || fits(s) == false {
			t.Fatalf("inner commit must reach the middle fork only")
		}
		must(t, f1.Commit())
		if fits(s) {
			t.Errorf("outer commit must reach the root")
		}
	})
	t.Run("commit on a root snapshot is an error", func(t *testing.T) {
		if err := base().Commit(); err == nil {
			t.Errorf("want error")
		}
	})
	t.Run("discard on a root snapshot is an error and leaves it usable", func(t *testing.T) {
		s := base()
		if err := s.Discard(); err == nil || errors.Is(err, allocator.ErrClosed) {
			t.Errorf("got %v, want an error saying the snapshot is not a fork", err)
		}
		if !fits(s) {
			t.Errorf("root unusable after a refused discard")
		}
	})
	t.Run("a discarded or committed fork answers every call with ErrClosed", func(t *testing.T) {
		s := base()
		must(t, s.AddOrUpdateNode(n))
		discarded, committed := s.Fork(), s.Fork()
		must(t, discarded.Discard())
		must(t, committed.Commit())
		claims := []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))}
		for name, f := range map[string]*allocator.Snapshot{"discarded": discarded, "committed": committed} {
			_, allocErr := f.Allocate(ctx, n, claims)
			_, onNodeErr := f.AllocateOnNode(ctx, node1, claims)
			_, fitsErr := f.Fits(ctx, n, claims)
			for call, err := range map[string]error{"Allocate": allocErr, "AllocateOnNode": onNodeErr, "Fits": fitsErr, "Discard": f.Discard(), "Commit": f.Commit()} {
				if !errors.Is(err, allocator.ErrClosed) {
					t.Errorf("%s fork: %s: got %v, want ErrClosed", name, call, err)
				}
			}
		}
	})
}

// A node is named by metadata.name; one without a name is invalid input, whichever entry point gets it.
func TestAllocateNamelessNode(t *testing.T) {
	s := allocator.NewSnapshot(allocator.Options{})
	must(t, s.AddOrUpdateClass(anyClass))
	must(t, s.AddOrUpdateSlice(networkSlice("fabric", "fabric", nil, devices("nic-0")...)))
	ctx, nameless := context.Background(), node("", nil)
	claims := []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 2))}
	_, allocErr := s.Allocate(ctx, nameless, claims)
	_, fitsErr := s.Fits(ctx, nameless, claims)
	_, onNodeErr := s.AllocateOnNode(ctx, "", claims)
	for call, err := range map[string]error{"Allocate": allocErr, "Fits": fitsErr, "AllocateOnNode": onNodeErr} {
		if !errors.Is(err, allocator.ErrInvalidInput) || err.Error() != "Node: metadata.name: must not be empty" {
			t.Errorf("%s: got %v, want invalid input naming metadata.name", call, err)
		}
	}
	if got := (&allocator.UnsatisfiableError{Reasons: []string{"too few"}}).Error(); got != "cannot allocate all claims: too few" {
		t.Errorf("an explanation without a node reads %q", got)
	}
}

func TestAllocateConcurrentReaders(t *testing.T) {
	s := allocator.NewSnapshot(allocator.Options{ShareIDs: sequentialShareIDs()})
	must(t, s.AddOrUpdateClass(anyClass))
	for i := range 8 {
		must(t, s.AddOrUpdateSlice(nodeSlice(fmt.Sprintf("s%d", i), fmt.Sprintf("node-%d", i), driverA, fmt.Sprintf("pool-%d", i), manyDevices(4)...)))
	}
	claims := []*resourceapi.ResourceClaim{withConstraints(claim("c", exact("req", "any", 2)), distinctAttr(driverA+"/none"))}
	plain := []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 3))}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				nodeName := fmt.Sprintf("node-%d", (g+i)%8)
				r, err := s.Allocate(context.Background(), node(nodeName, nil), plain)
				if err != nil || len(r[0].Devices.Results) != 3 || r[0].Devices.Results[2].Device != "dev-02" {
					errs <- fmt.Errorf("%s: %v %v", nodeName, describe(r), err)
					return
				}
				if _, err := s.Allocate(context.Background(), node(nodeName, nil), claims); !errors.Is(err, allocator.ErrUnsatisfiable) {
					errs <- fmt.Errorf("%s: constraint on a missing attribute: %v", nodeName, err)
					return
				}
				if g == 0 && i%5 == 0 {
					// A writer in between the readers.
					if err := s.AddOrUpdateClaim(allocatedClaim(fmt.Sprintf("x%d", i), result(driverA, "pool-7", "dev-03"))); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestAllocateHonoursContextAndBudget(t *testing.T) {
	// The constraint compares a derived attribute, which counting before the search does not evaluate, so
	// only the search can tell that no five devices match.
	derived := allocator.DefaultFeatures()
	derived.DRADerivedAttributes = true
	s := allocator.NewSnapshot(allocator.Options{StepBudget: 10, Features: &derived})
	must(t, s.AddOrUpdateClass(anyClass))
	var unique []resourceapi.Device
	for i := range 20 {
		unique = append(unique, device(fmt.Sprintf("dev-%d", i), map[string]any{"numa": i}))
	}
	must(t, s.AddOrUpdateSlice(attrSlice(unique...)[0]))
	hopeless := []*resourceapi.ResourceClaim{withConstraints(claim("c",
		withDerived(exact("gpus", "any", 5), "example.com/numa", `device.attributes["`+driverA+`"].numa`)), matchAttr("example.com/numa"))}
	if _, err := s.Allocate(context.Background(), node(node1, nil), hopeless); !errors.Is(err, allocator.ErrSearchBudget) {
		t.Errorf("budget: got %v, want ErrSearchBudget", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	unbounded := allocator.NewSnapshot(allocator.Options{})
	must(t, unbounded.AddOrUpdateClass(anyClass))
	must(t, unbounded.AddOrUpdateSlice(attrSlice(manyDevices(2)...)[0]))
	if _, err := unbounded.Allocate(ctx, node(node1, nil), []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: got %v, want context.Canceled", err)
	}
}

func TestAllocateIsDeterministic(t *testing.T) {
	sc := scenario{
		slices: attrSlice(shareable("shared-1", "10Gi", nil), device("dev-1", nil)), classes: []*resourceapi.DeviceClass{anyClass},
		claims: []*resourceapi.ResourceClaim{claim("c1", withCapacity(exact("req", "any", 1), "1Gi")), claim("c2", exact("req", "any", 1))},
	}
	var first []resourceapi.AllocationResult
	for i := range 5 {
		sc.shareIDs = sequentialShareIDs()
		s := sc.snapshot(t)
		r, err := s.Allocate(context.Background(), node(node1, nil), sc.claims)
		must(t, err)
		if i == 0 {
			first = r
			continue
		}
		if !reflect.DeepEqual(r, first) {
			t.Fatalf("run %d differs:\n%v\n%v", i, r, first)
		}
	}
}

func TestForkCommitsWhileReadersRun(t *testing.T) {
	s := allocator.NewSnapshot(allocator.Options{})
	must(t, s.AddOrUpdateClass(anyClass))
	must(t, s.AddOrUpdateSlice(attrSlice(manyDevices(16)...)[0]))
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, err := s.Allocate(context.Background(), node(node1, nil), []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))})
				if err != nil && !errors.Is(err, allocator.ErrUnsatisfiable) {
					t.Error(err)
					return
				}
			}
		}()
	}
	for i := range 16 {
		f := s.Fork()
		must(t, f.AddOrUpdateClaim(allocatedClaim(fmt.Sprintf("h%d", i), result(driverA, "pool-1", fmt.Sprintf("dev-%02d", i)))))
		must(t, f.Commit())
	}
	close(stop)
	wg.Wait()
	if _, err := s.Allocate(context.Background(), node(node1, nil), []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))}); !errors.Is(err, allocator.ErrUnsatisfiable) {
		t.Errorf("all 16 devices committed as held: got %v", err)
	}
}

// The pools a node sees are cached across calls; replacing one of the node's slices (here the second, so
// that the node's slice list keeps its first entry and its length) must show the new devices.
func TestUpdatedSliceReplacesCachedPools(t *testing.T) {
	s := allocator.NewSnapshot(allocator.Options{})
	must(t, s.AddOrUpdateClass(class("any")))
	must(t, s.AddOrUpdateSlice(nodeSlice("first", node1, driverA, "pool-1", devices("dev-a")...)))
	must(t, s.AddOrUpdateSlice(nodeSlice("second", node1, driverA, "pool-2", devices("dev-old")...)))
	ctx, n := context.Background(), node(node1, nil)
	c := []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 2))}
	allocated := func() []string {
		t.Helper()
		res, err := s.Allocate(ctx, n, c)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range res[0].Devices.Results {
			names = append(names, r.Device)
		}
		return names
	}
	if got := allocated(); !reflect.DeepEqual(got, []string{"dev-a", "dev-old"}) {
		t.Fatalf("before the update: %v", got)
	}
	must(t, s.AddOrUpdateSlice(nodeSlice("second", node1, driverA, "pool-2", devices("dev-new")...)))
	if got := allocated(); !reflect.DeepEqual(got, []string{"dev-a", "dev-new"}) {
		t.Fatalf("after the update: %v, want dev-a and dev-new", got)
	}
}

// At V(5) every call logs one line saying whether the claims fit, for Fits as for Allocate.
func TestCallsLogWhetherTheClaimsFit(t *testing.T) {
	var lines []string
	logger := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: 5})
	s := allocator.NewSnapshot(allocator.Options{Logger: logger})
	must(t, s.AddOrUpdateClass(anyClass))
	must(t, s.AddOrUpdateSlice(attrSlice(devices("dev-1")...)[0]))
	ctx, n := context.Background(), node(node1, nil)
	one := []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))}
	two := []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 2))}
	if ok, err := s.Fits(ctx, n, one); !ok || err != nil {
		t.Fatalf("Fits one device: %v, %v", ok, err)
	}
	if ok, err := s.Fits(ctx, n, two); ok || err != nil {
		t.Fatalf("Fits two devices: %v, %v", ok, err)
	}
	if _, err := s.Allocate(ctx, n, two); !errors.Is(err, allocator.ErrUnsatisfiable) {
		t.Fatalf("Allocate two devices: %v", err)
	}
	want := []string{`"success"=true`, `"success"=false`, `"success"=false`}
	if len(lines) != len(want) {
		t.Fatalf("logged %d lines, want %d: %q", len(lines), len(want), lines)
	}
	for i, w := range want {
		if !strings.Contains(lines[i], `"msg"="Allocation done"`) || !strings.Contains(lines[i], w) {
			t.Errorf("line %d: %s, want %s", i, lines[i], w)
		}
	}
}
