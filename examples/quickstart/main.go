// Command quickstart tells the dralloc story on a small in-memory fleet: what the nodes publish, which devices
// each DeviceClass selects and why a selector is rejected, where a claim fits and with which devices (checked
// by an independent verifier), what-if questions on a fork, and a maintenance taint that evicts some claims.
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run() error {
	slices := fleet()
	fmt.Println("== the fleet")
	for _, s := range slices {
		attrs := s.Spec.Devices[0].Attributes
		fmt.Printf("%-12s %d× %s (%s)\n", *s.Spec.NodeName, len(s.Spec.Devices), *attrs["productName"].StringValue,
			*attrs["architecture"].StringValue)
	}
	if err := classes(slices); err != nil {
		return err
	}
	if err := schedule(slices); err != nil {
		return err
	}
	return maintenance(slices)
}
