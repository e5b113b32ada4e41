package celenv

import (
	"context"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// testGPU is the device most tests evaluate against.
func testGPU() *resourceapi.Device {
	return &resourceapi.Device{
		Name: "gpu-0",
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"productName":             {StringValue: ptr.To("NVIDIA H100 80GB HBM3")},
			"architecture":            {StringValue: ptr.To("Hopper")},
			"cudaComputeCapability":   {VersionValue: ptr.To("9.0.0")},
			"index":                   {IntValue: ptr.To(int64(3))},
			"mig":                     {BoolValue: ptr.To(false)},
			"dra.example.com/zones":   {StringValues: []string{"a", "b"}},
			"dra.example.com/ids":     {IntValues: []int64{4, 7}},
			"dra.example.com/flags":   {BoolValues: []bool{true, true}},
			"dra.example.com/version": {VersionValues: []string{"1.2.3", "2.0.0"}},
		},
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			"memory":                    {Value: resource.MustParse("80Gi")},
			"dra.example.com/bandwidth": {Value: resource.MustParse("1500m")},
		},
	}
}

var testEnv = func() *Env {
	env, err := NewEnv(Options{})
	if err != nil {
		panic(err)
	}
	return env
}()

// eval compiles expr and evaluates it on dev (the test GPU when nil).
func eval(t *testing.T, expr string, dev *resourceapi.Device) (bool, error) {
	t.Helper()
	if dev == nil {
		dev = testGPU()
	}
	sel, err := testEnv.Compile(expr)
	if err != nil {
		return false, err
	}
	return sel.Matches(context.Background(), NewDevice("gpu.nvidia.com", dev))
}

type exprCase struct {
	name string
	expr string
	want bool
	// wantErr, when set, is the sentinel the error must wrap.
	wantErr error
}

func runExprCases(t *testing.T, cases []exprCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := eval(t, tc.expr, nil)
			if tc.wantErr != nil {
				if err == nil || !errorsIs(err, tc.wantErr) {
					t.Fatalf("%s: got (%v, %v), want error wrapping %v", tc.expr, got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: unexpected error %v", tc.expr, err)
			}
			if got != tc.want {
				t.Fatalf("%s: got %v, want %v", tc.expr, got, tc.want)
			}
		})
	}
}
