package allocator_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dralloc/dralloc/allocator"
)

// wantInvalid checks that err is an *InputError wrapping ErrInvalidInput for object and field, with the
// validation result attached when validated is true.
func wantInvalid(t *testing.T, err error, object, field string, validated bool) {
	t.Helper()
	if !errors.Is(err, allocator.ErrInvalidInput) {
		t.Fatalf("got %v, want ErrInvalidInput", err)
	}
	var ie *allocator.InputError
	if !errors.As(err, &ie) {
		t.Fatalf("got %T, want *InputError", err)
	}
	if ie.Object != object || ie.Field != field {
		t.Errorf("got object %q field %q, want %q %q (%v)", ie.Object, ie.Field, object, field, err)
	}
	if validated && (len(ie.Errors) == 0 || ie.Errors[0].Field != field) {
		t.Errorf("got validation errors %v, want the list starting at %s", ie.Errors, field)
	}
}

func TestSnapshotValidatesOnAdd(t *testing.T) {
	ctx := context.Background()
	negative := claim("c", exact("req", "any", -1))
	badSlice := nodeSlice("s1", node1, driverA, "pool-1", device("dev-1", nil))
	badSlice.Spec.Devices[0].Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: resource.MustParse("1E100000000")}}
	tooCostly := class("costly", doubling(24))
	badRule := taintRule("r", "dev-1", resourceapi.DeviceTaint{Key: "example.com/t"})

	t.Run("each kind is refused naming the object and the field", func(t *testing.T) {
		s := allocator.NewSnapshot(allocator.Options{})
		wantInvalid(t, s.AddOrUpdateSlice(badSlice), "ResourceSlice s1", "spec.devices[0].capacity[memory].value", true)
		wantInvalid(t, s.AddOrUpdateClass(tooCostly), "DeviceClass costly", "spec.selectors[0].cel.expression", true)
		wantInvalid(t, s.AddOrUpdateClaim(negative), "ResourceClaim default/c", "spec.devices.requests[0].exactly.count", true)
		wantInvalid(t, s.AddOrUpdateTaintRule(badRule), "DeviceTaintRule r", "spec.taint.effect", true)
	})
	t.Run("the message names the object, the field and the reason", func(t *testing.T) {
		err := allocator.NewSnapshot(allocator.Options{}).AddOrUpdateClaim(negative)
		if want := "ResourceClaim default/c: spec.devices.requests[0].exactly.count: Invalid value: -1: must be greater than zero"; err == nil || err.Error() != want {
			t.Errorf("got %v, want %s", err, want)
		}
	})
	t.Run("a refused update leaves the snapshot unchanged", func(t *testing.T) {
		s := allocator.NewSnapshot(allocator.Options{})
		must(t, s.AddOrUpdateSlice(nodeSlice("s1", node1, driverA, "pool-1", devices("dev-1")...)))
		must(t, s.AddOrUpdateClass(anyClass))
		wantInvalid(t, s.AddOrUpdateSlice(badSlice), "ResourceSlice s1", "spec.devices[0].capacity[memory].value", true)
		broken := class("any", "device.driver ==")
		wantInvalid(t, s.AddOrUpdateClass(broken), "DeviceClass any", "spec.selectors[0].cel.expression", true)
		res, err := s.Allocate(ctx, node(node1, nil), []*resourceapi.ResourceClaim{claim("c", exact("req", "any", 1))})
		if err != nil || len(res) != 1 || res[0].Devices.Results[0].Device != "dev-1" {
			t.Errorf("allocate after refused updates: %v, %v", res, err)
		}
	})
	t.Run("objects from an API server are trusted", func(t *testing.T) {
		s := allocator.NewSnapshot(allocator.Options{TrustAPIServer: true})
		must(t, s.AddOrUpdateClass(tooCostly))
		must(t, s.AddOrUpdateClaim(negative))
	})
}

// A negative count used to allocate no device and report success. The allocator refuses it as invalid
// input, also when the snapshot does not validate its objects: pending claims are read where the counts
// are read.
func TestNegativeCountsAreInvalidInput(t *testing.T) {
	for _, trusted := range []bool{false, true} {
		for _, tc := range []struct {
			name  string
			claim *resourceapi.ResourceClaim
			field string
		}{
			{"a request with count -1", claim("c", exact("req", "any", -1)), "spec.devices.requests[0].exactly.count"},
			{"a request with count 0", claim("c", exact("req", "any", 0)), "spec.devices.requests[0].exactly.count"},
			{"a request with the most negative count", claim("c", exact("req", "any", -1<<63)), "spec.devices.requests[0].exactly.count"},
			{"a subrequest with a negative count", claim("c", resourceapi.DeviceRequest{Name: "req", FirstAvailable: []resourceapi.DeviceSubRequest{
				sub("a", "any", 1), sub("b", "any", -3)}}), "spec.devices.requests[0].firstAvailable[1].count"},
		} {
			name := tc.name
			if trusted {
				name += " (objects trusted)"
			}
			t.Run(name, func(t *testing.T) {
				s := allocator.NewSnapshot(allocator.Options{TrustAPIServer: trusted})
				must(t, s.AddOrUpdateSlice(nodeSlice("s1", node1, driverA, "pool-1", devices("dev-1")...)))
				must(t, s.AddOrUpdateClass(anyClass))
				_, err := s.Allocate(context.Background(), node(node1, nil), []*resourceapi.ResourceClaim{tc.claim})
				wantInvalid(t, err, "ResourceClaim default/c", tc.field, false)
			})
		}
	}
}

// doubling is a selector that doubles a string n times; for n = 24 its estimated cost is about 2.1e8.
func doubling(n int) string {
	expr := "device.driver"
	for i := range n {
		v := "s" + strconv.Itoa(i)
		expr = "cel.bind(" + v + ", " + expr + ", " + v + " + " + v + ")"
	}
	return expr + ".size() > 0"
}

// BenchmarkAddOrUpdateSlice measures what validation adds to adding a slice of 64 devices with four
// attributes and a capacity each: validated (the default) and trusted (Options.TrustAPIServer).
func BenchmarkAddOrUpdateSlice(b *testing.B) {
	var devs []resourceapi.Device
	for i := range 64 {
		d := device("gpu-"+strconv.Itoa(i), map[string]any{"model": "h100", "index": i, "healthy": true, "driverVersion": version("580.95.5")})
		d.Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: resource.MustParse("80Gi")}}
		devs = append(devs, d)
	}
	slice := nodeSlice("s1", node1, driverA, "pool-1", devs...)
	for _, trusted := range []bool{false, true} {
		name := "validated"
		if trusted {
			name = "trusted"
		}
		b.Run(name, func(b *testing.B) {
			s := allocator.NewSnapshot(allocator.Options{TrustAPIServer: trusted})
			b.ReportAllocs()
			for b.Loop() {
				if err := s.AddOrUpdateSlice(slice); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
