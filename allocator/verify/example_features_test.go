package verify_test

import (
	"fmt"

	"github.com/dralloc/dralloc/allocator/verify"
)

// Input.Features nil checks against the gates Kubernetes 1.37 enables by default; start from them to
// check a cluster that runs an alpha gate too.
func ExampleDefaultFeatures() {
	f := verify.DefaultFeatures()
	f.DRADerivedAttributes = true
	in := verify.Input{Features: &f}
	fmt.Println(in.Features.DRAPrioritizedList, in.Features.DRADerivedAttributes, in.Features.DRAListTypeAttributes)
	// Output: true true false
}

func ExampleAllFeatures() {
	f := verify.AllFeatures()
	fmt.Println(f.DRADerivedAttributes, f.DRADeviceCompatibilityGroups, f.DRAOptionalNodeOperations, f.DRAListTypeAttributes)
	// Output: true true true true
}
