//go:build tools

package upstream

// The reference implementation this module compares against; the subpackages import it.
import (
	_ "k8s.io/dynamic-resource-allocation/cel"
	_ "k8s.io/dynamic-resource-allocation/resourceclaim"
	_ "k8s.io/dynamic-resource-allocation/structured"
)
