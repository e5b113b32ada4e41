package upstream

import (
	"testing"

	_ "k8s.io/dynamic-resource-allocation/cel"
	_ "k8s.io/dynamic-resource-allocation/resourceclaim"
	_ "k8s.io/dynamic-resource-allocation/structured"
)

func TestDeps(t *testing.T) {}
