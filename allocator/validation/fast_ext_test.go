package validation_test

import (
	"testing"

	"github.com/dralloc/dralloc/allocator/validation"
	"github.com/dralloc/dralloc/inventory"
)

// Every device the shipped node profiles publish takes the fast check: what
// drivers publish most is validated without building field paths.
func TestShippedProfilesTakeTheFastCheck(t *testing.T) {
	for _, name := range inventory.ProfileNames() {
		tmpl, err := inventory.Profile(name)
		if err != nil {
			t.Fatal(err)
		}
		slices, err := tmpl.Slices("node-0", 1)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, s := range slices {
			for i := range s.Spec.Devices {
				n++
				if !validation.DeviceOK(&s.Spec.Devices[i]) {
					t.Errorf("%s: slice %s: device %s does not take the fast check", name, s.Name, s.Spec.Devices[i].Name)
				}
			}
		}
		if n == 0 {
			t.Errorf("%s: no devices", name)
		}
	}
}
