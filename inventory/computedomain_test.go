package inventory_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/dralloc/dralloc/inventory"
)

func TestComputeDomainSlicesAreNVIDIAs(t *testing.T) {
	sl, err := inventory.ComputeDomainSlices(inventory.Options{NodeName: "gb200-1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(sl) != 1 {
		t.Fatalf("%d slices, want 1", len(sl))
	}
	s := sl[0].Spec
	if s.Driver != "compute-domain.nvidia.com" || *s.NodeName != "gb200-1" || s.Pool.Name != "gb200-1" || s.Pool.ResourceSliceCount != 1 || s.Pool.Generation != 1 {
		t.Errorf("slice spec %+v", s)
	}
	var got []string
	for _, d := range s.Devices {
		got = append(got, fmt.Sprintf("%s type=%s id=%d attrs=%d capacity=%d", d.Name, *d.Attributes["type"].StringValue, *d.Attributes["id"].IntValue, len(d.Attributes), len(d.Capacity)))
	}
	want := []string{"channel-0 type=channel id=0 attrs=2 capacity=0", "daemon-0 type=daemon id=0 attrs=2 capacity=0"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("devices = %v, want %v", got, want)
	}
	if errs := inventory.ValidatePool(sl); len(errs) > 0 {
		t.Error(errs)
	}
	if _, err := inventory.ComputeDomainSlices(inventory.Options{}); !errors.Is(err, inventory.ErrInvalidNode) {
		t.Errorf("no node name: err = %v", err)
	}
}

// In hostManaged IMEX mode the administrator runs the IMEX daemon, so the
// plugin publishes no daemon device (computeDomainPublishedDevices).
func TestComputeDomainSlicesLeaveOutTheDaemonWhenIMEXIsHostManaged(t *testing.T) {
	sl, err := inventory.ComputeDomainSlices(inventory.Options{NodeName: "gb200-1", HostManagedIMEX: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range sl[0].Spec.Devices {
		got = append(got, d.Name)
	}
	if fmt.Sprint(got) != "[channel-0]" {
		t.Errorf("devices = %v, want [channel-0]", got)
	}
	if _, err := inventory.Slices(inventory.Node{}, inventory.Options{NodeName: "n", HostManagedIMEX: true}); !errors.Is(err, inventory.ErrInvalidNode) {
		t.Errorf("HostManagedIMEX on GPU slices: err = %v", err)
	}
}
