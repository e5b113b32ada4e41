package allocator_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/verify"
	"github.com/dralloc/dralloc/celenv"
	"github.com/dralloc/dralloc/fuzz"
)

// intact fails the test unless the verifier accepts every allocated claim of the snapshot, checked
// together: no device held twice, no capacity or counter overdrawn, every device published.
func intact(t tester, s *allocator.Snapshot) {
	t.Helper()
	slices, classes, rules, claims := allocator.SnapshotObjects(s)
	var allocated []*resourceapi.ResourceClaim
	var results []resourceapi.AllocationResult
	for _, c := range claims {
		if c.Status.Allocation != nil {
			allocated = append(allocated, c)
			results = append(results, *c.Status.Allocation)
		}
	}
	f := verify.Features(s.Features())
	env, err := verifyEnv(celenv.Features{DRAConsumableCapacity: f.DRAConsumableCapacity, DRAListTypeAttributes: f.DRAListTypeAttributes})
	if err != nil {
		t.Fatal(err)
	}
	in := verify.Input{Slices: slices, Classes: classes, TaintRules: rules, Claims: claims, Features: &f, CEL: env}
	violations, err := verify.Check(context.Background(), in, allocated, results)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range violations {
		t.Errorf("violation: %s", v)
	}
}

var verifyEnvs sync.Map // celenv.Features → *celenv.Env

// verifyEnv returns one CEL environment per feature set, so that checking after every step of a fuzzed
// sequence reuses its compile cache.
func verifyEnv(f celenv.Features) (*celenv.Env, error) {
	if env, ok := verifyEnvs.Load(f); ok {
		return env.(*celenv.Env), nil
	}
	env, err := celenv.NewEnv(celenv.Options{Features: &f})
	if err != nil {
		return nil, err
	}
	actual, _ := verifyEnvs.LoadOrStore(f, env)
	return actual.(*celenv.Env), nil
}

// tester is what both *testing.T and *rapid.T offer.
type tester interface {
	Helper()
	Fatal(args ...any)
	Errorf(format string, args ...any)
}

// claimNames lists the claims of a snapshot with the devices they hold.
func claimNames(s *allocator.Snapshot) []string {
	_, _, _, claims := allocator.SnapshotObjects(s)
	var out []string
	for _, c := range claims {
		name := c.Name
		if c.Status.Allocation != nil {
			for _, r := range c.Status.Allocation.Devices.Results {
				name += " " + r.Device
			}
		}
		out = append(out, name)
	}
	return out
}

// allocateIn allocates the claim on node-1 in the snapshot and records the allocation there.
func allocateIn(s *allocator.Snapshot, c *resourceapi.ResourceClaim) error {
	r, err := s.Allocate(context.Background(), node(node1, nil), []*resourceapi.ResourceClaim{c})
	if err != nil {
		return err
	}
	c = c.DeepCopy()
	c.Status.Allocation = &r[0]
	return s.AddOrUpdateClaim(c)
}

// Eight forks of one snapshot each allocate two GPUs of the same node: they all see the same free devices
// and pick the same two. Only the first commit may hold; the others conflict and leave the root as it was.
func TestForksOfOneSnapshotNeverShareADevice(t *testing.T) {
	s := allocator.NewSnapshot(allocator.Options{})
	must(t, s.AddOrUpdateClass(anyClass))
	must(t, s.AddOrUpdateSlice(attrSlice(devices("gpu-0", "gpu-1", "gpu-2", "gpu-3")...)[0]))
	forks := make([]*allocator.Snapshot, 8)
	for i := range forks {
		forks[i] = s.Fork()
		must(t, allocateIn(forks[i], claim(fmt.Sprintf("c-%d", i), exact("req", "any", 2))))
	}
	must(t, forks[0].Commit())
	want := []string{"c-0 gpu-0 gpu-1"}
	for i, f := range forks[1:] {
		err := f.Commit()
		var ce *allocator.ConflictError
		if !errors.Is(err, allocator.ErrConflict) || !errors.As(err, &ce) {
			t.Fatalf("fork %d: got %v, want a conflict", i+1, err)
		}
		wantClaim := types.NamespacedName{Namespace: "default", Name: fmt.Sprintf("c-%d", i+1)}
		wantDevices := []allocator.DeviceID{{Driver: driverA, Pool: "pool-1", Device: "gpu-0"}, {Driver: driverA, Pool: "pool-1", Device: "gpu-1"}}
		if ce.Claim != wantClaim || !reflect.DeepEqual(ce.Devices, wantDevices) {
			t.Errorf("fork %d: conflict names %v %v, want %v %v", i+1, ce.Claim, ce.Devices, wantClaim, wantDevices)
		}
		if got := claimNames(s); !reflect.DeepEqual(got, want) {
			t.Errorf("fork %d: root holds %q after the conflict, want %q", i+1, got, want)
		}
		must(t, f.Discard())
	}
	intact(t, s)
}

func TestCommitConflicts(t *testing.T) {
	gpus := func(s *allocator.Snapshot) error {
		return s.AddOrUpdateSlice(attrSlice(devices("dev-1", "dev-2")...)[0])
	}
	shared := func(s *allocator.Snapshot) error {
		return s.AddOrUpdateSlice(attrSlice(shareable("nic", "8Gi", nil))[0])
	}
	parts := func(s *allocator.Snapshot) error {
		for _, sl := range partitionedPool(partition("p-a", "half", "4Gi"), partition("p-b", "half", "4Gi"), partition("whole", "whole", "8Gi")) {
			if err := s.AddOrUpdateSlice(sl); err != nil {
				return err
			}
		}
		for _, c := range []*resourceapi.DeviceClass{sizeClass("half"), sizeClass("whole")} {
			if err := s.AddOrUpdateClass(c); err != nil {
				return err
			}
		}
		return nil
	}
	holds := func(name string, r ...resourceapi.DeviceRequestAllocationResult) func(*allocator.Snapshot) error {
		return func(s *allocator.Snapshot) error { return s.AddOrUpdateClaim(allocatedClaim(name, r...)) }
	}
	gets := func(name string, req resourceapi.DeviceRequest) func(*allocator.Snapshot) error {
		return func(s *allocator.Snapshot) error { return allocateIn(s, claim(name, req)) }
	}
	nicShare := func(name, memory string) func(*allocator.Snapshot) error {
		return gets(name, withCapacity(exact("req", "any", 1), memory))
	}
	both := func(fns ...func(*allocator.Snapshot) error) func(*allocator.Snapshot) error {
		return func(s *allocator.Snapshot) error {
			for _, fn := range fns {
				if err := fn(s); err != nil {
					return err
				}
			}
			return nil
		}
	}
	dev := func(name string) allocator.DeviceID {
		return allocator.DeviceID{Driver: driverA, Pool: "pool-1", Device: name}
	}
	for _, tc := range []struct {
		name         string
		base         func(*allocator.Snapshot) error
		fork, parent func(*allocator.Snapshot) error
		// wantClaim is the conflicting claim; empty when the commit must succeed.
		wantClaim   string
		wantDevices []allocator.DeviceID
		wantCounter []string
		wantReason  string
	}{{
		name: "a device the parent allocated meanwhile conflicts",
		base: gpus, fork: gets("mine", exact("req", "any", 1)), parent: holds("theirs", result(driverA, "pool-1", "dev-1")),
		wantClaim: "mine", wantDevices: []allocator.DeviceID{dev("dev-1")}, wantReason: "device driver-a.example.com/pool-1/dev-1 is already allocated in the parent snapshot",
	}, {
		name: "another device of the same pool does not conflict",
		base: gpus, fork: gets("mine", exact("req", "any", 1)), parent: holds("theirs", result(driverA, "pool-1", "dev-2")),
	}, {
		name: "a claim the parent allocated meanwhile conflicts, whatever devices it got",
		base: gpus, fork: gets("c", exact("req", "any", 1)), parent: holds("c", result(driverA, "pool-1", "dev-2")),
		wantClaim: "c", wantReason: "changed in the parent snapshot since the fork",
	}, {
		name:      "a claim the parent deleted meanwhile conflicts",
		base:      holds("c", result(driverA, "pool-1", "dev-1")),
		fork:      func(s *allocator.Snapshot) error { return s.AddOrUpdateClaim(claim("c", exact("req", "any", 1))) },
		parent:    func(s *allocator.Snapshot) error { return s.DeleteClaim("default", "c") },
		wantClaim: "c", wantReason: "deleted in the parent snapshot since the fork",
	}, {
		name: "a device whose slice the parent deleted meanwhile conflicts",
		base: gpus, fork: gets("mine", exact("req", "any", 1)),
		parent:    func(s *allocator.Snapshot) error { return s.DeleteSlice("s1") },
		wantClaim: "mine", wantDevices: []allocator.DeviceID{dev("dev-1")}, wantReason: "no longer published",
	}, {
		name: "a device the fork allocated from a slice it deleted afterwards is the fork's doing",
		base: gpus, fork: both(gets("mine", exact("req", "any", 1)), func(s *allocator.Snapshot) error { return s.DeleteSlice("s1") }),
		parent: holds("theirs", result(driverA, "pool-1", "dev-2")),
	}, {
		name: "shares that fit the device's capacity next to the parent's do not conflict",
		base: shared, fork: nicShare("mine", "4Gi"), parent: nicShare("theirs", "4Gi"),
	}, {
		name: "shares beyond the device's capacity conflict",
		base: shared, fork: nicShare("mine", "4Gi"), parent: nicShare("theirs", "6Gi"),
		wantClaim: "mine", wantDevices: []allocator.DeviceID{dev("nic")}, wantReason: "has too little capacity left",
	}, {
		name: "a share the fork enlarged beyond what the parent left conflicts",
		base: both(shared, holds("mine", sharedResult("nic", "00000000-0000-4000-8000-00000000000a", "2Gi"))),
		fork: holds("mine", sharedResult("nic", "00000000-0000-4000-8000-00000000000b", "6Gi")), parent: holds("theirs", sharedResult("nic", "00000000-0000-4000-8000-00000000000c", "4Gi")),
		wantClaim: "mine", wantDevices: []allocator.DeviceID{dev("nic")}, wantReason: "has too little capacity left",
	}, {
		name:   "a share the fork kept as it was does not conflict",
		base:   both(shared, holds("mine", sharedResult("nic", "00000000-0000-4000-8000-00000000000a", "2Gi"))),
		fork:   holds("mine", sharedResult("nic", "00000000-0000-4000-8000-00000000000a", "2Gi")),
		parent: holds("theirs", sharedResult("nic", "00000000-0000-4000-8000-00000000000c", "6Gi")),
	}, {
		name: "a share of a device the parent allocated exclusively conflicts",
		base: shared, fork: nicShare("mine", "4Gi"), parent: holds("theirs", result(driverA, "pool-1", "nic")),
		wantClaim: "mine", wantDevices: []allocator.DeviceID{dev("nic")}, wantReason: "already allocated exclusively",
	}, {
		name: "shared counters the parent consumed meanwhile conflict",
		base: parts, fork: gets("mine", exact("req", "half", 1)), parent: gets("theirs", exact("req", "whole", 1)),
		wantClaim: "mine", wantDevices: []allocator.DeviceID{dev("p-a")}, wantCounter: []string{driverA + "/pool-1/gpu-0"},
		wantReason: "needs more of counter sets",
	}, {
		name: "shared counters with room for both do not conflict",
		base: parts, fork: gets("mine", exact("req", "half", 1)), parent: holds("theirs", result(driverA, "pool-1", "p-b")),
	}, {
		name: "an allocation the fork was given on a device that was never free is not the parent's doing",
		base: both(gpus, holds("old", result(driverA, "pool-1", "dev-1"))),
		fork: holds("mine", result(driverA, "pool-1", "dev-1")), parent: holds("theirs", result(driverA, "pool-1", "dev-2")),
	}, {
		name: "a taint the parent added meanwhile leaves the fork's allocation standing",
		base: gpus, fork: gets("mine", exact("req", "any", 1)),
		parent: func(s *allocator.Snapshot) error {
			return s.AddOrUpdateTaintRule(taintRule("broken", "dev-1", resourceapi.DeviceTaint{Key: "k", Effect: resourceapi.DeviceTaintEffectNoSchedule}))
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s := allocator.NewSnapshot(allocator.Options{ShareIDs: sequentialShareIDs()})
			must(t, s.AddOrUpdateClass(anyClass))
			must(t, tc.base(s))
			f := s.Fork()
			must(t, tc.fork(f))
			// A change to another object travels with the fork's claims, or is refused with them.
			must(t, f.AddOrUpdateClass(class("extra")))
			must(t, tc.parent(s))
			before := claimNames(s)
			_, beforeClasses, _, _ := allocator.SnapshotObjects(s)
			err := f.Commit()
			if tc.wantClaim == "" {
				must(t, err)
				if _, classes, _, _ := allocator.SnapshotObjects(s); len(classes) != len(beforeClasses)+1 {
					t.Errorf("the fork's class did not reach the parent")
				}
				return
			}
			var ce *allocator.ConflictError
			if !errors.Is(err, allocator.ErrConflict) || !errors.As(err, &ce) {
				t.Fatalf("got %v, want a conflict", err)
			}
			if want := (types.NamespacedName{Namespace: "default", Name: tc.wantClaim}); ce.Claim != want {
				t.Errorf("conflict names claim %v, want %v", ce.Claim, want)
			}
			if !reflect.DeepEqual(ce.Devices, tc.wantDevices) || !reflect.DeepEqual(ce.CounterSets, tc.wantCounter) {
				t.Errorf("conflict names devices %v and counter sets %v, want %v and %v", ce.Devices, ce.CounterSets, tc.wantDevices, tc.wantCounter)
			}
			if !strings.Contains(err.Error(), tc.wantReason) || !strings.HasPrefix(err.Error(), "commit: ResourceClaim default/"+tc.wantClaim+": ") {
				t.Errorf("message %q, want it to name the claim and say %q", err, tc.wantReason)
			}
			if got := claimNames(s); !reflect.DeepEqual(got, before) {
				t.Errorf("parent changed by a refused commit: %q, was %q", got, before)
			}
			if _, classes, _, _ := allocator.SnapshotObjects(s); !reflect.DeepEqual(classes, beforeClasses) {
				t.Errorf("a refused commit applied the fork's other changes")
			}
		})
	}
}

// A fork of a fork commits into its parent fork; a conflict found there is reported the same way, and the
// claims the inner fork changed count as the outer fork's when it commits in turn.
func TestNestedForksConflict(t *testing.T) {
	s := allocator.NewSnapshot(allocator.Options{})
	must(t, s.AddOrUpdateClass(anyClass))
	must(t, s.AddOrUpdateSlice(attrSlice(devices("dev-1", "dev-2")...)[0]))
	outer := s.Fork()
	inner := outer.Fork()
	must(t, allocateIn(inner, claim("inner", exact("req", "any", 1))))
	must(t, allocateIn(outer, claim("outer", exact("req", "any", 1))))
	if err := inner.Commit(); !errors.Is(err, allocator.ErrConflict) {
		t.Fatalf("inner commit onto a fork that took the same device: got %v", err)
	}
	must(t, inner.Discard())
	again := outer.Fork()
	must(t, allocateIn(again, claim("again", exact("req", "any", 1))))
	must(t, again.Commit())
	must(t, s.AddOrUpdateClaim(allocatedClaim("again", result(driverA, "pool-1", "dev-1"))))
	err := outer.Commit()
	var ce *allocator.ConflictError
	if !errors.As(err, &ce) || ce.Claim.Name != "again" {
		t.Fatalf("outer commit of the claim the inner fork changed, changed in the root too: got %v", err)
	}
}

// Forks committed concurrently, each retrying on a conflict with a new fork as a scheduler retries a pod,
// leave a root whose claims the verifier accepts: no device is allocated twice.
func TestPropConcurrentForkCommits(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nGPUs := rapid.IntRange(1, 6).Draw(t, "gpus")
		nForks := rapid.IntRange(2, 8).Draw(t, "forks")
		count := rapid.IntRange(1, 3).Draw(t, "count")
		withShares := rapid.Bool().Draw(t, "shares")
		s := allocator.NewSnapshot(allocator.Options{})
		if err := s.AddOrUpdateClass(anyClass); err != nil {
			t.Fatal(err)
		}
		names := make([]string, nGPUs)
		for i := range names {
			names[i] = fmt.Sprintf("gpu-%d", i)
		}
		devs := devices(names...)
		if withShares {
			devs = append(devs, shareable("nic", "8Gi", nil))
		}
		if err := s.AddOrUpdateSlice(attrSlice(devs...)[0]); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, nForks)
		committed := make([]bool, nForks)
		for i := range nForks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := exact("req", "any", int64(count), `!device.allowMultipleAllocations`)
				if withShares && i%2 == 1 {
					req = withCapacity(exact("req", "any", 1, `device.allowMultipleAllocations`), "3Gi")
				}
				c := claim(fmt.Sprintf("c-%d", i), req)
				for {
					f := s.Fork()
					r, err := f.Allocate(context.Background(), node(node1, nil), []*resourceapi.ResourceClaim{c})
					if errors.Is(err, allocator.ErrUnsatisfiable) {
						errs[i] = f.Discard()
						return
					}
					if err == nil {
						placed := c.DeepCopy()
						placed.Status.Allocation = &r[0]
						if err = f.AddOrUpdateClaim(placed); err == nil {
							err = f.Commit()
						}
					}
					if errors.Is(err, allocator.ErrConflict) {
						if err := f.Discard(); err != nil {
							errs[i] = err
							return
						}
						continue
					}
					errs[i], committed[i] = err, err == nil
					return
				}
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("fork %d: %v", i, err)
			}
		}
		intact(t, s)
		// Every fork that gave up found no room left: the root is full for its claim.
		_, _, _, claims := allocator.SnapshotObjects(s)
		if len(claims) != countTrue(committed) {
			t.Fatalf("root holds %d claims, %d commits succeeded", len(claims), countTrue(committed))
		}
	})
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// forkStepBudget bounds every search of the fork properties: a generated claim can make the search
// exponential (a clean CI run once spent ten minutes in one), and a search that gives up allocates nothing,
// like a claim that does not fit.
const forkStepBudget = 20000

// Forks of a generated cluster (shares, counters, network-attached pools, taints, allocated claims), all
// made before any commit, allocate copies of its pending claims, one each, and commit concurrently; a fork
// that conflicts retries with a new fork. The verifier accepts every committed claim against the root's
// final state.
func TestPropForkCommitsOfGeneratedClusters(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := fuzz.ClusterGen(fuzz.AllOptions()).Draw(t, "cluster")
		copies := rapid.IntRange(2, 4).Draw(t, "copies")
		s, err := c.Snapshot(allocator.Options{StepBudget: forkStepBudget})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		var todo []*resourceapi.ResourceClaim
		for _, claim := range c.Claims {
			for j := range copies {
				cp := claim.DeepCopy()
				cp.Name = fmt.Sprintf("%s-copy-%d", claim.Name, j)
				todo = append(todo, cp)
			}
		}
		forks := make([]*allocator.Snapshot, len(todo))
		for i := range forks {
			forks[i] = s.Fork()
		}
		errs := make([]error, len(todo))
		// The committed claims in the order of their commits (commitMu keeps the order exact; the forks
		// still allocate concurrently, from states made before any commit).
		var commitMu sync.Mutex
		var committed []*resourceapi.ResourceClaim
		var wg sync.WaitGroup
		for i, claim := range todo {
			wg.Add(1)
			go func() {
				defer wg.Done()
				f := forks[i]
				for range len(todo) + 1 {
					r, err := f.Allocate(ctx, c.Node, []*resourceapi.ResourceClaim{claim})
					if err != nil {
						// Not fitting, or input the allocator refuses: nothing to commit.
						errs[i] = f.Discard()
						return
					}
					placed := claim.DeepCopy()
					placed.Status.Allocation = &r[0]
					if err = f.AddOrUpdateClaim(placed); err == nil {
						commitMu.Lock()
						if err = f.Commit(); err == nil {
							committed = append(committed, placed)
						}
						commitMu.Unlock()
					}
					if !errors.Is(err, allocator.ErrConflict) {
						errs[i] = err
						return
					}
					if err := f.Discard(); err != nil {
						errs[i] = err
						return
					}
					f = s.Fork()
				}
				errs[i] = errors.New("still conflicting after every other claim committed")
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("claim %d: %v", i, err)
			}
		}
		// Each committed claim was allocated by a call of its own, so each is checked on its own against
		// the state its commit entered: the cluster's allocated claims and those committed before it.
		// Checked together, the verifier would hold them to the rules of one call, where shares with
		// admin access count against a device's capacity too; and against the final state, a claim's
		// own admin-access share would be counted with shares committed after it, which did not see it
		// (kube-scheduler's allocated state leaves admin access out).
		_, _, _, claims := allocator.SnapshotObjects(s)
		if len(claims) != len(c.Allocated)+len(committed) {
			t.Fatalf("root holds %d claims, %d allocated and %d committed", len(claims), len(c.Allocated), len(committed))
		}
		in := c.Input()
		for k, held := range committed {
			in.Claims = append(slices.Clone(c.Allocated), committed[:k]...)
			violations, err := verify.Check(ctx, in, []*resourceapi.ResourceClaim{held}, []resourceapi.AllocationResult{*held.Status.Allocation})
			if err != nil {
				t.Fatal(err)
			}
			if len(violations) > 0 {
				t.Fatalf("committed claim %s (commit %d) breaks the rules: %v", held.Name, k, violations)
			}
		}
	})
}

// Forks of a generated cluster allocate copies of its pending claims and commit in an order rapid draws
// (the concurrent property above leaves the order to the scheduler, so a failing interleaving could not be
// replayed). Every step is one of: fork anew, allocate on the fork, commit it; a fork that conflicts starts
// again from a new fork. After every commit the root's allocated claims, counted device by device by
// fuzz.CheckUsage, overdraw nothing: no device with two exclusive users, no share or counter set overdrawn.
//
// Besides every feature, a run focuses on what forks contend for most: shareable devices with consumable
// capacity (network-attached NICs among them), shares with admin access, shared counters, claims of
// several requests.
func TestPropForkCommitsInterleaved(t *testing.T) {
	contended := fuzz.Options{MaxClaims: 3, MaxRequests: 3, NetworkAttached: true, ConsumableCapacity: true,
		AdminAccess: true, Partitionable: true, Allocated: true}
	t.Run("every feature", func(t *testing.T) { forkCommitsInterleaved(t, fuzz.AllOptions()) })
	t.Run("contended", func(t *testing.T) { forkCommitsInterleaved(t, contended) })
}

func forkCommitsInterleaved(t *testing.T, opts fuzz.Options) {
	rapid.Check(t, func(t *rapid.T) {
		c := fuzz.ClusterGen(opts).Draw(t, "cluster")
		copies := rapid.IntRange(2, 6).Draw(t, "copies")
		s, err := c.Snapshot(allocator.Options{StepBudget: forkStepBudget})
		if err != nil {
			t.Fatal(err)
		}
		features := c.Gates()
		if bad := fuzz.CheckUsage(c.Slices, c.Allocated, features); len(bad) > 0 {
			t.Fatalf("generated allocated state overdrawn: %v", bad)
		}
		ctx := context.Background()
		type agent struct {
			claim  *resourceapi.ResourceClaim
			fork   *allocator.Snapshot
			placed bool
			done   bool
		}
		var agents []*agent
		for _, claim := range c.Claims {
			for j := range copies {
				cp := claim.DeepCopy()
				cp.Name = fmt.Sprintf("%s-copy-%d", claim.Name, j)
				a := &agent{claim: cp}
				if rapid.Bool().Draw(t, "fork early") {
					a.fork = s.Fork()
				}
				agents = append(agents, a)
			}
		}
		for step := 0; step < 8*len(agents)*len(agents)+8; step++ {
			var open []int
			for i, a := range agents {
				if !a.done {
					open = append(open, i)
				}
			}
			if len(open) == 0 {
				break
			}
			a := agents[rapid.SampledFrom(open).Draw(t, "agent")]
			switch {
			case a.fork == nil:
				a.fork = s.Fork()
			case !a.placed:
				r, err := a.fork.Allocate(ctx, c.Node, []*resourceapi.ResourceClaim{a.claim})
				if err != nil {
					a.done = true
					if err := a.fork.Discard(); err != nil {
						t.Fatal(err)
					}
					continue
				}
				placed := a.claim.DeepCopy()
				placed.Status.Allocation = &r[0]
				if err := a.fork.AddOrUpdateClaim(placed); err != nil {
					t.Fatal(err)
				}
				a.placed = true
			default:
				err := a.fork.Commit()
				switch {
				case err == nil:
					a.done = true
					// The claim must be one the allocator could have made on the state it entered.
					_, _, _, claims := allocator.SnapshotObjects(s)
					in := c.Input()
					in.Claims = claims
					placed, _ := s.Claim(a.claim.Namespace, a.claim.Name)
					violations, err := verify.Check(ctx, in, []*resourceapi.ResourceClaim{placed}, []resourceapi.AllocationResult{*placed.Status.Allocation})
					if err != nil {
						t.Fatal(err)
					}
					if len(violations) > 0 {
						t.Fatalf("committed claim %s breaks the rules: %v", a.claim.Name, violations)
					}
				case errors.Is(err, allocator.ErrConflict):
					if err := a.fork.Discard(); err != nil {
						t.Fatal(err)
					}
					a.fork, a.placed = nil, false
				default:
					t.Fatal(err)
				}
				slicesNow, _, _, claims := allocator.SnapshotObjects(s)
				if bad := fuzz.CheckUsage(slicesNow, claims, features); len(bad) > 0 {
					t.Fatalf("after commit of %s: %v", a.claim.Name, bad)
				}
			}
		}
	})
}

// A share taken with admin access holds nothing once allocated, but in the call that allocates it, it
// counts against the device's capacity next to the claim's other shares (as the verifier and the
// Kubernetes allocator count a call's consumption). A fork's claim whose admin-access share fitted
// only beside the shares the fork saw conflicts when the parent allocated more shares since the fork:
// on the parent, the allocation could not have been made.
func TestCommitCountsAdminAccessSharesOfTheForksClaims(t *testing.T) {
	s := allocator.NewSnapshot(allocator.Options{})
	must(t, s.AddOrUpdateClass(anyClass))
	must(t, s.AddOrUpdateSlice(attrSlice(shareable("nic", "100Gi", nil))[0]))
	admin := withCapacity(exact("watch", "any", 1), "60Gi")
	admin.Exactly.AdminAccess = ptr(true)
	f1 := s.Fork()
	must(t, allocateIn(f1, claim("x", admin, withCapacity(exact("use", "any", 1), "40Gi"))))
	f2 := s.Fork()
	must(t, allocateIn(f2, claim("y", withCapacity(exact("use", "any", 1), "40Gi"))))
	must(t, f2.Commit())
	err := f1.Commit()
	var ce *allocator.ConflictError
	if !errors.As(err, &ce) || ce.Claim.Name != "x" {
		t.Fatalf("commit of x after y: got %v, want a conflict for x (60Gi with admin access + 40Gi + y's 40Gi > 100Gi)", err)
	}
	intact(t, s)
}
