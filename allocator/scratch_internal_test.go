package allocator

import (
	"fmt"
	"testing"
)

// TestRecentNamesJoin: join answers parent + "/" + name whether the pair is remembered, evicted or new,
// and pairs that differ in either name, or only in where the slash falls, never share an answer.
func TestRecentNamesJoin(t *testing.T) {
	var r recentNames
	pairs := [][2]string{{"gpu", "whole"}, {"gpu", "mig"}, {"gpu/whole", "x"}, {"gpu", "whole/x"}, {"nic", "whole"}, {"a", "b"}}
	for round := range 3 {
		for i, p := range pairs {
			// Fresh strings with the same bytes: a remembered pair must match by value, not only by pointer.
			parent, name := fmt.Sprint(p[0]), fmt.Sprint(p[1])
			if round == 1 && i%2 == 0 {
				parent, name = p[0], p[1]
			}
			if got, want := r.join(parent, name), p[0]+"/"+p[1]; got != want {
				t.Fatalf("round %d: join(%q, %q) = %q, want %q", round, parent, name, got, want)
			}
			// Asked again at once, the pair is remembered.
			if got, want := r.join(parent, name), p[0]+"/"+p[1]; got != want {
				t.Fatalf("round %d, again: join(%q, %q) = %q, want %q", round, parent, name, got, want)
			}
		}
	}
	if got := r.join("", ""); got != "/" {
		t.Fatalf(`join("", "") = %q, want "/"`, got)
	}
}
