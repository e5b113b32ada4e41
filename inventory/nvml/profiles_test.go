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
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

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
	tmpl.Allocatable = machines[name]
	return tmpl
}

// machines is what a kubelet with its default reservations reports as allocatable for each DGX machine,
// rounded, and the kubelet's default of 110 pods: kube-scheduler's NodeResourcesFit fits no pod on a
// node without it. DGX A100: 2x AMD EPYC 7742 (256 threads), 1 TiB, 15 TB of NVMe; DGX H100, H200 (2x
// Intel Xeon Platinum 8480C) and B200 (2x Xeon Platinum 8570): 224 threads, 2 TiB, 30 TB of NVMe.
var machines = map[string]v1.ResourceList{
	"dgxa100": allocatable("254", "1000Gi", "14Ti"),
	"dgxh100": allocatable("222", "2000Gi", "28Ti"),
	"dgxh200": allocatable("222", "2000Gi", "28Ti"),
	"dgxb200": allocatable("222", "2000Gi", "28Ti"),
}

func allocatable(cpu, memory, storage string) v1.ResourceList {
	return v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(memory),
		v1.ResourceEphemeralStorage: resource.MustParse(storage), v1.ResourcePods: resource.MustParse("110")}
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
