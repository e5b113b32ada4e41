package nvml_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/dralloc/dralloc/inventory"
	"github.com/dralloc/dralloc/inventory/nvml"
	"github.com/dralloc/dralloc/inventory/nvml/nvmlmock"
)

var update = flag.Bool("update", false, "rewrite the shipped node profiles in inventory/profiles from the mock servers")

// recordProfile discovers a mock server and records it as a dynamic-MIG
// template, the way the shipped profiles were made.
func recordProfile(t *testing.T, name string) inventory.Template {
	t.Helper()
	s, err := nvmlmock.New(name)
	if err != nil {
		t.Fatal(err)
	}
	how := "dynamic MIG"
	if name == "dgxa100" {
		// An Ampere GPU switches MIG mode only with a reset, so a node
		// meant for dynamic MIG runs with MIG enabled; with MIG off it
		// would publish whole GPUs only.
		for _, dev := range s.Devices {
			dev.SetMigMode(gonvml.DEVICE_MIG_ENABLE)
		}
		how = "dynamic MIG with MIG enabled"
	}
	d, err := nvml.Discover(s, nvml.Options{PCIeRoot: func(string) (string, error) { return "", nil }, NUMANode: func(string) (int, error) { return -1, nil }})
	if err != nil {
		t.Fatal(err)
	}
	// go-nvml's A100 mock names its product "Mock NVIDIA A100-SXM4-40GB";
	// a real DGX A100 reports "NVIDIA A100-SXM4-40GB", which is what the
	// classes and node selectors of a real cluster read.
	for i := range d.Node.GPUs {
		d.Node.GPUs[i].ProductName = strings.TrimPrefix(d.Node.GPUs[i].ProductName, "Mock ")
	}
	g := d.Node.GPUs[0]
	desc := fmt.Sprintf("%dx %s, %s (recorded from go-nvml v0.13.4-1 mock %s)", len(d.Node.GPUs), g.ProductName, how, name)
	tmpl := inventory.NewTemplate(name, desc, inventory.ModeDynamicMIG, d.Node)
	tmpl.GPUFeatureDiscovery = true // DGX nodes run NVIDIA's GPU operator, which deploys GFD
	return tmpl
}

func TestShippedProfilesAreTheRecordedMocks(t *testing.T) {
	for _, name := range nvmlmock.Names() {
		t.Run(name, func(t *testing.T) {
			want, err := recordProfile(t, name).MarshalYAML()
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join("..", "profiles", name+".yaml")
			if *update {
				if err := os.WriteFile(file, want, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from what the mock records now; rerun with -update if the change is intended", file)
			}
			shipped, err := inventory.Profile(name)
			if err != nil {
				t.Fatal(err)
			}
			if shipped.Name != name || len(shipped.Node.GPUs) != 8 {
				t.Errorf("Profile(%q) = %q with %d GPUs, want the 8-GPU recording", name, shipped.Name, len(shipped.Node.GPUs))
			}
		})
	}
}

func discoverMock(t *testing.T, name string) nvml.Discovery {
	t.Helper()
	s, err := nvmlmock.New(name)
	if err != nil {
		t.Fatal(err)
	}
	// The mocks have no sysfs entries; a PCIe root is unknown rather than
	// invented.
	d, err := nvml.Discover(s, nvml.Options{PCIeRoot: func(string) (string, error) { return "", nil }, NUMANode: func(string) (int, error) { return -1, nil }})
	if err != nil {
		t.Fatal(err)
	}
	return d
}
