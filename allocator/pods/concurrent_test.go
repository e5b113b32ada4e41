package pods_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
)

// Goroutines place, assume and remove pods on one Cluster at once, as the Cluster's doc allows: a
// placement whose chosen node changed between filtering and allocating is decided again (never a raw
// allocator.ErrUnsatisfiable), Assume refuses stale placements with a conflict, and no device ever has
// two claims.
func TestConcurrentPlaceAssumeRemove(t *testing.T) {
	ctx := context.Background()
	c := cluster(t, pods.Options{Workers: 2, NameSuffix: uniqueSuffixes()}, 2, node("node-1", nil), node("node-2", nil), node("node-3", nil))
	must(t, c.AddOrUpdateTemplate(template("one", 1)))
	const workers, rounds = 6, 60
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				p := pod(fmt.Sprintf("w%d-p%d", w, i), "gpu=template:one")
				pl, err := c.Place(ctx, p)
				switch {
				case errors.Is(err, pods.ErrNoNode):
					continue
				case err != nil:
					errs <- fmt.Errorf("place %s: %w", p.Name, err)
					return
				}
				if err := c.Assume(pl); err != nil {
					if errors.Is(err, allocator.ErrConflict) {
						continue
					}
					errs <- fmt.Errorf("assume %s: %w", p.Name, err)
					return
				}
				if i%2 == 0 {
					if err := c.Remove(p); err != nil {
						errs <- fmt.Errorf("remove %s: %w", p.Name, err)
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
	for dev, holders := range heldDevices(c) {
		if len(holders) > 1 {
			t.Errorf("device %s held by %v", dev, holders)
		}
	}
}

// Goroutines place and assume pods while others remove them and add and forget bound pods, so that
// the indexes of full nodes and ranks are updated by removals while placements read them; the removals
// go on for a while after the placements end. Then pods placed one after the other until the fleet is
// full go where a fork of the Cluster (whose indexes start empty) places them: no removal left a freed
// node known full.
func TestConcurrentRemovalsKeepIndexesTrue(t *testing.T) {
	ctx := context.Background()
	for _, choice := range []pods.Choice{pods.FirstFit, pods.BestFit, pods.Spread} {
		t.Run(choice.String(), func(t *testing.T) {
			c := cluster(t, pods.Options{Choice: choice, Workers: 2, NameSuffix: uniqueSuffixes()}, 2,
				node("node-1", nil), node("node-2", nil), node("node-3", nil), node("node-4", nil))
			must(t, c.AddOrUpdateTemplate(template("one", 1)))
			one := func(name string) *v1.Pod { return withExtended(pod(name, "gpu=template:one"), "cpu", 1) }
			var mu sync.Mutex
			var placed []string
			var placers, others sync.WaitGroup
			var placing atomic.Bool
			placing.Store(true)
			errs := make(chan error, 8)
			const rounds = 40
			for w := range 2 {
				placers.Add(1)
				go func() {
					defer placers.Done()
					for i := range rounds {
						p := one(fmt.Sprintf("w%d-p%d", w, i))
						pl, err := c.Place(ctx, p)
						if errors.Is(err, pods.ErrNoNode) {
							continue
						}
						if err == nil {
							err = c.Assume(pl)
						}
						if errors.Is(err, allocator.ErrConflict) {
							continue
						}
						if err != nil {
							errs <- fmt.Errorf("place %s: %w", p.Name, err)
							return
						}
						mu.Lock()
						placed = append(placed, p.Name)
						mu.Unlock()
					}
				}()
			}
			others.Add(2)
			go func() { // removes the oldest pod placed; four more once the placements are done
				defer others.Done()
				for after := 0; after < 4; {
					if !placing.Load() {
						after++
					}
					mu.Lock()
					var name string
					if len(placed) > 0 {
						name, placed = placed[0], placed[1:]
					}
					mu.Unlock()
					if name == "" {
						runtime.Gosched()
						continue
					}
					if err := c.Remove(one(name)); err != nil {
						errs <- fmt.Errorf("remove %s: %w", name, err)
						return
					}
				}
			}()
			go func() { // a bound pod takes and gives back the CPUs of a node
				defer others.Done()
				for i := range rounds {
					b := withExtended(pod("bound"), "cpu", 32)
					b.Spec.NodeName = fmt.Sprintf("node-%d", 1+i%4)
					if err := c.AddOrUpdatePod(b); err != nil {
						errs <- err
						return
					}
					c.DeletePod(b.Namespace, b.Name)
				}
			}()
			placers.Wait()
			placing.Store(false)
			others.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			for i := 0; ; i++ {
				p := one(fmt.Sprintf("after-%d", i))
				pl, err := c.Place(ctx, p)
				f := c.Fork()
				want, wantErr := f.Place(ctx, p)
				must(t, f.Snapshot().Discard())
				if fmt.Sprint(err) != fmt.Sprint(wantErr) {
					t.Fatalf("%s: %v, on a fork %v", p.Name, err, wantErr)
				}
				if err != nil {
					if i == 0 {
						t.Fatal("the removals freed no GPU")
					}
					break
				}
				if pl.Node != want.Node {
					t.Fatalf("%s on %s, on a fork on %s", p.Name, pl.Node, want.Node)
				}
				must(t, c.Assume(pl))
			}
		})
	}
}

// uniqueSuffixes returns distinct suffixes, safe for concurrent use.
func uniqueSuffixes() func() string {
	var mu sync.Mutex
	n := 0
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		n++
		return fmt.Sprintf("%05d", n)
	}
}
