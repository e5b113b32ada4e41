package pods_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

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
