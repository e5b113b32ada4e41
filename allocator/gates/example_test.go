package gates_test

import (
	"fmt"

	"github.com/dralloc/dralloc/allocator/gates"
)

// Start from the gates of a Kubernetes 1.37 cluster and opt into an alpha gate.
func ExampleDefault() {
	f := gates.Default()
	f.DRAListTypeAttributes = true
	fmt.Println(f.DRAPrioritizedList, f.DRAListTypeAttributes, f.DRADerivedAttributes)
	// Output: true true false
}

func ExampleAll() {
	f := gates.All()
	fmt.Println(f.DRADerivedAttributes, f.DRADeviceCompatibilityGroups, f.DRAAdminAccess)
	// Output: true true true
}

// A nil *Features means the default gates; a pointer to the zero Features switches every gate off.
func ExampleOr() {
	var off gates.Features
	fmt.Println(gates.Or(nil).DRAConsumableCapacity, gates.Or(&off).DRAConsumableCapacity)
	// Output: true false
}

// The default gates of 1.37 need the incubating implementation (consumable capacity is beta and on); an
// alpha gate selects the experimental one; with every gate off the stable one runs.
func ExampleFeatures_Implementation() {
	alpha := gates.Default()
	alpha.DRADerivedAttributes = true
	fmt.Println(gates.Default().Implementation() == gates.Incubating, alpha.Implementation() == gates.Experimental,
		gates.Features{}.Implementation() == gates.Stable)
	// Output: true true true
}

// Binding conditions need both of their gates.
func ExampleFeatures_BindingConditions() {
	f := gates.Default()
	f.DRAResourceClaimDeviceStatus = false
	fmt.Println(gates.Default().BindingConditions(), f.BindingConditions())
	// Output: true false
}
