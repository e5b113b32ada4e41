package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"sigs.k8s.io/yaml"

	"github.com/dralloc/dralloc/inventory"
)

func TestDiscoverPrintsTheMockSlicesAsYAML(t *testing.T) {
	for _, tc := range []struct {
		args            []string
		slices, devices int
	}{
		{[]string{"--mock", "dgxh100", "--node", "dgx-1"}, 1, 8},
		// As NVIDIA's driver: the A100 (MIG off, and Ampere cannot switch
		// it without a reset) is published whole, after the counter slice,
		// one slice per GPU; the H100 as the whole GPU and 28 placements.
		{[]string{"--mock", "dgxa100", "--node", "dgx-1", "--mode", "dynamic-mig"}, 9, 8},
		{[]string{"--mock", "dgxh100", "--node", "dgx-1", "--mode", "dynamic-mig"}, 9, 8 * 29},
		{[]string{"--mock", "dgxb200", "--node", "dgx-1", "--mode", "static-mig"}, 1, 8},
		{[]string{"--mock", "dgxh200", "--node", "dgx-1", "--consumable-shares", "4", "--list-attributes"}, 1, 8},
		{[]string{"--mock", "dgxh100", "--node", "dgx-1", "--mode", "dynamic-mig", "--consumable-shares", "memory"}, 9, 8 * 29},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			if err := run(tc.args, &out, &errOut); err != nil {
				t.Fatal(err)
			}
			docs := strings.Split(out.String(), "\n---\n")
			if len(docs) != tc.slices {
				t.Fatalf("%d YAML documents, want %d", len(docs), tc.slices)
			}
			var slices []*resourceapi.ResourceSlice
			devices := 0
			for _, doc := range docs {
				var s resourceapi.ResourceSlice
				if err := yaml.UnmarshalStrict([]byte(doc), &s); err != nil {
					t.Fatal(err)
				}
				if errs := inventory.ValidateSlice(&s); len(errs) > 0 {
					t.Error(errs)
				}
				if s.Spec.Pool.Name != "dgx-1" {
					t.Errorf("pool %q", s.Spec.Pool.Name)
				}
				devices += len(s.Spec.Devices)
				slices = append(slices, &s)
			}
			shareable := strings.Contains(strings.Join(tc.args, " "), "--consumable-shares")
			for _, s := range slices {
				for _, d := range s.Spec.Devices {
					if (d.AllowMultipleAllocations != nil) != shareable {
						t.Errorf("%s: allowMultipleAllocations %v, want it set: %v", d.Name, d.AllowMultipleAllocations, shareable)
					}
				}
			}
			if devices != tc.devices {
				t.Errorf("%d devices, want %d", devices, tc.devices)
			}
			if errs := inventory.ValidatePool(slices); len(errs) > 0 {
				t.Error(errs)
			}
			// The mock implements every call discovery makes: nothing is unknown.
			if errOut.Len() != 0 {
				t.Errorf("stderr: %q, want nothing", errOut.String())
			}
		})
	}
}

func TestDiscoverHelpExitsZero(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run([]string{"--help"}, &out, &errOut); err != nil {
		t.Fatalf("--help: %v", err)
	}
	if !strings.Contains(errOut.String(), "-mock") || out.Len() != 0 {
		t.Errorf("--help printed %q on stdout and %q on stderr, want the usage on stderr", out.String(), errOut.String())
	}
}

func TestDiscoverRejectsBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--mock", "dgx-nope"}, `unknown mock server "dgx-nope"`},
		{[]string{"--mock", "dgxh100", "--mode", "shared"}, `unknown --mode "shared"`},
		{[]string{"--mock", "dgxh100", "--node", "n", "--consumable-shares", "0"}, `consumableShares: Invalid value: "0"`},
	} {
		var out, errOut bytes.Buffer
		err := run(tc.args, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.want)
		}
	}
}

func TestDiscoverWithoutNVMLSaysSo(t *testing.T) {
	if _, err := os.Stat("/dev/nvidiactl"); err == nil {
		t.Skip("this machine has an NVIDIA driver")
	}
	var out, errOut bytes.Buffer
	err := run([]string{"--node", "n"}, &out, &errOut)
	if err == nil {
		t.Skip("NVML initialised on this machine")
	}
	if !strings.Contains(err.Error(), "NVML is not available on this machine") || !strings.Contains(err.Error(), "--mock") {
		t.Errorf("err = %v", err)
	}
}
