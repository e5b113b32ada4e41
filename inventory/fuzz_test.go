package inventory_test

import (
	"context"
	"errors"
	"testing"

	"github.com/dralloc/dralloc/fuzz/watchdog"
	"github.com/dralloc/dralloc/inventory"
)

// FuzzTemplateSlices feeds arbitrary templates to ParseTemplate and Slices:
// neither may panic, and whatever Slices returns must be valid.
func FuzzTemplateSlices(f *testing.F) {
	// Small seeds keep the fuzzer fast; the shipped profiles are covered by
	// the tests.
	f.Add([]byte(`name: toy
mode: DynamicMIG
node:
  driverVersion: 580.95.05
  cudaDriverVersion: "13.0"
  gpus:
  - minor: 0
    uuid: GPU-0
    productName: Toy
    cudaComputeCapability: "9.0"
    memoryBytes: 21474836480
    migCapable: true
    migProfiles:
    - {name: 1g.5gb, giProfileID: 0, instanceCount: 4, multiprocessors: 10, memoryBytes: 5368709120, placements: [{start: 0, size: 1}, {start: 3, size: 1}]}
    - {name: 2g.10gb+me, giProfileID: 7, instanceCount: 1, jpegEngines: 1, memoryBytes: 10737418240, placements: [{start: 0, size: 2}, {start: 2, size: 2}]}
`))
	f.Add([]byte(`{"name":"x","mode":"DynamicMIG","node":{"gpus":[{"minor":0,"migCapable":true,"migProfiles":[{"name":"1g","giProfileID":0,"placements":[{"start":9223372036854775807,"size":1}]}]}]}}`))
	f.Add([]byte(`{"name":"x","node":{"driverVersion":"1.2.3.4","gpus":[{"minor":-1}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		watchdog.Run(t, data, func(context.Context) {
			tmpl, err := inventory.ParseTemplate(data)
			if err != nil {
				return
			}
			slices, err := tmpl.Slices("node", 0)
			if err != nil {
				if !errors.Is(err, inventory.ErrInvalidNode) {
					t.Fatalf("error does not wrap ErrInvalidNode: %v", err)
				}
				return
			}
			for _, s := range slices {
				if errs := inventory.ValidateSlice(s); len(errs) > 0 {
					t.Fatal(errs)
				}
			}
		})
	})
}
