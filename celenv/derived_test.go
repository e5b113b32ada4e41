package celenv

import (
	"context"
	"errors"
	"reflect"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"
)

func TestDerivedEvaluate(t *testing.T) {
	g := `device.attributes["gpu.nvidia.com"]`
	for _, tc := range []struct {
		name string
		expr string
		want resourceapi.DeviceAttribute
	}{
		{"int", g + `.index * 2`, resourceapi.DeviceAttribute{IntValue: ptr.To(int64(6))}},
		{"bool", g + `.mig`, resourceapi.DeviceAttribute{BoolValue: ptr.To(false)}},
		{"string", g + `.architecture.lowerAscii()`, resourceapi.DeviceAttribute{StringValue: ptr.To("hopper")}},
		{"version", g + `.cudaComputeCapability`, resourceapi.DeviceAttribute{VersionValue: ptr.To("9.0.0")}},
		{"normalized version", `semver("v1.2", true)`, resourceapi.DeviceAttribute{VersionValue: ptr.To("1.2.0")}},
		{"list of ints", `device.attributes["dra.example.com"].ids.map(i, i + 1)`, resourceapi.DeviceAttribute{IntValues: []int64{5, 8}}},
		{"list of strings", `device.attributes["dra.example.com"].zones`, resourceapi.DeviceAttribute{StringValues: []string{"a", "b"}}},
		{"list of bools", `[true, false]`, resourceapi.DeviceAttribute{BoolValues: []bool{true, false}}},
		{"list of versions", `device.attributes["dra.example.com"].version`, resourceapi.DeviceAttribute{VersionValues: []string{"1.2.3", "2.0.0"}}},
		{"empty list is an empty string list", `[1].slice(0, 0)`, resourceapi.DeviceAttribute{StringValues: []string{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := testEnv.CompileDerived(tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			got, err := d.Evaluate(context.Background(), NewDevice("gpu.nvidia.com", testGPU()))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestDerivedErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		expr    string
		wantErr error
	}{
		{"a map is not an attribute type", `{"a": 1}`, ErrCompile},
		{"a double is not an attribute type", `1.5`, ErrCompile},
		{"a quantity is not an attribute type", `quantity("1")`, ErrCompile},
		{"a list of lists is not an attribute type", `[[1]]`, ErrCompile},
		{"a dyn double fails at runtime", `dyn(1.5)`, ErrRuntime},
		{"a mixed dyn list fails at runtime", `[dyn(1), dyn("a")]`, ErrRuntime},
		{"a missing attribute fails at runtime", `device.attributes["gpu.nvidia.com"].nosuch`, ErrRuntime},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := testEnv.CompileDerived(tc.expr)
			if err == nil {
				_, err = d.Evaluate(context.Background(), NewDevice("gpu.nvidia.com", testGPU()))
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("got %v, want %v", err, tc.wantErr)
			}
		})
	}
}

func TestDerivedListsNeedTheGateForNewExpressions(t *testing.T) {
	env, err := NewEnv(Options{Features: &Features{}, NewExpressions: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.CompileDerived(`[1, 2]`); !errors.Is(err, ErrCompile) {
		t.Fatalf("got %v, want a compile error without DRAListTypeAttributes", err)
	}
	if _, err := env.CompileDerived(`1`); err != nil {
		t.Fatal(err)
	}
}
