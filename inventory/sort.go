package inventory

import (
	"cmp"
	"maps"
	"slices"
)

// sortedKeys returns a map's keys in order, so that errors and output do not
// depend on map iteration.
func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}
