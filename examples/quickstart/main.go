// Command quickstart tells the dralloc story on a small in-memory fleet: what the nodes publish, which devices
// each DeviceClass selects, and why a selector is rejected.
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
	if err := maintenance(slices); err != nil {
		return err
	}
	if err := classes(slices); err != nil {
		return err
	}
	return nil
}
