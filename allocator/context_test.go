package allocator_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator"
)

// expiring is a context that ends after its Err method has been asked a given number of times: a deadline
// reached at a chosen point of a call, without a clock.
type expiring struct {
	context.Context
	left atomic.Int64
	done chan struct{}
}

func expireAfter(n int64) *expiring {
	c := &expiring{Context: context.Background(), done: make(chan struct{})}
	c.left.Store(n)
	return c
}

func (c *expiring) Done() <-chan struct{} { return c.done }

func (c *expiring) Err() error {
	if c.left.Add(-1) < 0 {
		return context.DeadlineExceeded
	}
	return nil
}

func (c *expiring) Deadline() (time.Time, bool) { return time.Time{}, false }

// A context that ends at any point of a call (before the search, during a selector's or a derived
// attribute's evaluation, between search steps) gives the context's error, never invalid input: the
// caller may retry. Each point is reached by letting the context end after n checks, n = 0, 1, 2, …; the
// selectors compile anew for each snapshot, so every call evaluates them.
func TestContextEndingDuringCallIsTheContextsError(t *testing.T) {
	for _, tc := range []struct {
		name   string
		claims []*resourceapi.ResourceClaim
	}{
		{"selectors", []*resourceapi.ResourceClaim{
			claim("a", exact("req", "gpu", 2, `device.attributes["`+driverA+`"].model == "a100"`)),
			claim("b", exact("req", "gpu", 3)),
		}},
		{"derived attributes", []*resourceapi.ResourceClaim{
			withConstraints(claim("a", withDerived(exact("req", "gpu", 2), "example.com/family", `device.attributes["`+driverA+`"].model`)),
				matchAttr("example.com/family")),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var devs []resourceapi.Device
			for i := range 4 {
				devs = append(devs, device(fmt.Sprintf("gpu-%d", i), map[string]any{"model": "a100", "serial": i}))
			}
			reached := 0
			for n := int64(0); n < 200; n++ {
				f := allocator.DefaultFeatures()
				f.DRADerivedAttributes = true
				s := allocator.NewSnapshot(allocator.Options{Features: &f})
				must(t, s.AddOrUpdateSlice(nodeSlice("s", node1, driverA, "pool-1", devs...)))
				must(t, s.AddOrUpdateClass(class("gpu", `device.driver == "`+driverA+`"`)))
				_, err := s.Allocate(expireAfter(n), node(node1, nil), tc.claims)
				if err == nil || errors.Is(err, allocator.ErrUnsatisfiable) {
					break // the call ended before the context did
				}
				reached++
				if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, allocator.ErrInvalidInput) {
					t.Fatalf("context ending after %d checks: got %v, want the context's error and not invalid input", n, err)
				}
			}
			if reached < 2 {
				t.Fatalf("the context ended in %d calls only: the test reaches no point inside the search", reached)
			}
		})
	}
}

// A cause given to the cancellation is kept next to context.Canceled.
func TestContextCancelledWithCause(t *testing.T) {
	s := allocator.NewSnapshot(allocator.Options{})
	must(t, s.AddOrUpdateSlice(nodeSlice("s", node1, driverA, "pool-1", devices("gpu-0")...)))
	must(t, s.AddOrUpdateClass(anyClass))
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("scheduler shutting down")
	cancel(stop)
	_, err := s.Allocate(ctx, node(node1, nil), []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))})
	if !errors.Is(err, context.Canceled) || !errors.Is(err, stop) || errors.Is(err, allocator.ErrInvalidInput) {
		t.Fatalf("got %v, want context.Canceled and its cause", err)
	}
}

// A nil context is invalid input naming the argument, not a panic, for every entry point that takes one.
func TestNilContextIsInvalidInput(t *testing.T) {
	s := allocator.NewSnapshot(allocator.Options{})
	must(t, s.AddOrUpdateSlice(nodeSlice("s", node1, driverA, "pool-1", devices("gpu-0")...)))
	must(t, s.AddOrUpdateClass(anyClass))
	must(t, s.AddOrUpdateNode(node(node1, nil)))
	claims := []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))}
	var nilCtx context.Context
	_, errAllocate := s.Allocate(nilCtx, node(node1, nil), claims)
	_, errFits := s.Fits(nilCtx, node(node1, nil), claims)
	_, errOnNode := s.AllocateOnNode(nilCtx, node1, claims)
	for name, err := range map[string]error{"Allocate": errAllocate, "Fits": errFits, "AllocateOnNode": errOnNode} {
		if !errors.Is(err, allocator.ErrInvalidInput) || err.Error() != "argument ctx: nil context" {
			t.Errorf("%s: got %v, want invalid input %q", name, err, "argument ctx: nil context")
		}
	}
}
