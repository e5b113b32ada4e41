package allocator

import (
	"fmt"
	"sync"
	"testing"

	"github.com/dralloc/dralloc/celenv"
)

// Every verdict put is read back as put, from the device's first slots and from the list beyond them,
// also when writers race for the slots.
func TestVerdictsRememberEachSelector(t *testing.T) {
	env, err := celenv.NewEnv(celenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 3*inlineVerdicts + 1
	sels := make([]*celenv.Selector, n)
	for i := range sels {
		if sels[i], err = env.Compile(fmt.Sprintf("%d == %d", i, i)); err != nil {
			t.Fatal(err)
		}
	}
	matches := func(i int) bool { return i%3 != 1 }
	for _, writers := range []int{1, 4} {
		var v verdicts
		if _, ok := v.get(sels[0]); ok {
			t.Fatal("an empty cache answers")
		}
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := w; i < n; i += writers {
					v.put(sels[i], matches(i))
				}
			})
		}
		wg.Wait()
		for i, sel := range sels {
			got, ok := v.get(sel)
			if !ok || got != matches(i) {
				t.Errorf("%d writers, selector %d: got %v (cached %v), want %v", writers, i, got, ok, matches(i))
			}
		}
	}
}
