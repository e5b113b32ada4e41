package allocator

import (
	"sync"
	"testing"
)

// Callers racing to prepare a slice's devices all get the one list published: entries are compared by
// pointer, so two lists for one slice would make one device two.
func TestDeviceListPublishedOnce(t *testing.T) {
	for range 50 {
		var l deviceList
		if _, ok := l.load(); ok {
			t.Fatal("an empty list loads")
		}
		const writers = 8
		got := make([][]*deviceEntry, writers)
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() { got[w] = l.publish([]*deviceEntry{new(deviceEntry)}) })
		}
		wg.Wait()
		loaded, ok := l.load()
		if !ok {
			t.Fatal("a published list does not load")
		}
		for w := range writers {
			if got[w][0] != loaded[0] {
				t.Fatalf("writer %d got its own list, not the published one", w)
			}
		}
	}
}
