package celenv

import (
	"context"
	"errors"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"
)

func lintDevices() []*Device {
	a := testGPU()
	b := testGPU()
	b.Name = "gpu-1"
	delete(b.Attributes, "mig")
	b.Attributes["architecture"] = resourceapi.DeviceAttribute{StringValue: ptr.To("Ampere")}
	return []*Device{NewDevice("gpu.nvidia.com", a), NewDevice("gpu.nvidia.com", b)}
}

func TestLintFindings(t *testing.T) {
	for _, tc := range []struct {
		name string
		expr string
		want []string // "<kind> <name> <message fragment>"; empty: no findings
	}{
		{"clean selector", `device.attributes["gpu.nvidia.com"].architecture == "Hopper"`, nil},
		{"misspelled attribute", `device.attributes["gpu.nvidia.com"].architecure == "Hopper"`,
			[]string{"UnknownName gpu.nvidia.com/architecure is not published by any of the 2 devices (did you mean gpu.nvidia.com/architecture?); the lookup fails"}},
		{"wrong domain", `device.attributes["nvidia.com"].architecture == "Hopper"`,
			[]string{"UnknownName nvidia.com/architecture is not published by any of the 2 devices (did you mean gpu.nvidia.com/architecture?)"}},
		{"guarded unknown name does not claim a failure", `device.attributes["gpu.nvidia.com"].?nosuch.orValue(false)`,
			[]string{"UnknownName gpu.nvidia.com/nosuch is not published by any of the 2 devices"}},
		{"capacity read as an attribute", `device.attributes["gpu.nvidia.com"].memory.isGreaterThan(quantity("1Gi"))`,
			[]string{`UnknownName gpu.nvidia.com/memory it is a capacity: use device.capacity["gpu.nvidia.com"].memory`}},
		{"version ordered against a string", `device.attributes["gpu.nvidia.com"].cudaComputeCapability >= "9.0.0"`,
			[]string{`TypeMismatch gpu.nvidia.com/cudaComputeCapability it is compared (>=) with the string "9.0.0"`}},
		{"version equal to a string", `device.attributes["gpu.nvidia.com"].cudaComputeCapability == "9.0.0"`,
			[]string{`TypeMismatch gpu.nvidia.com/cudaComputeCapability published as version on 2 of the 2 devices, but it is compared (==) with the string "9.0.0"; compare versions with semver`}},
		{"string used as a version", `device.attributes["gpu.nvidia.com"].architecture.isGreaterThan(semver("1.0.0"))`,
			[]string{"TypeMismatch gpu.nvidia.com/architecture published as string on 2 of the 2 devices, but isGreaterThan() needs a version or quantity"}},
		{"int used as a condition", `device.attributes["gpu.nvidia.com"].index && true`,
			[]string{"TypeMismatch gpu.nvidia.com/index published as int on 2 of the 2 devices, but it is used as a condition"}},
		{"string as the result", `device.attributes["gpu.nvidia.com"].architecture`,
			[]string{"TypeMismatch gpu.nvidia.com/architecture published as string on 2 of the 2 devices, but the expression must yield a bool"}},
		{"through cel.bind", `cel.bind(g, device.attributes["gpu.nvidia.com"], g.index == "3")`,
			[]string{`TypeMismatch gpu.nvidia.com/index published as int on 2 of the 2 devices, but it is compared (==) with the string "3"`}},
		{"optional value compared", `device.attributes["gpu.nvidia.com"].?index.orValue(0) == "1"`,
			[]string{`TypeMismatch gpu.nvidia.com/index published as int`}},
		{"has on a name some devices publish", `has(device.attributes["gpu.nvidia.com"].mig)`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			report, err := testEnv.Lint(context.Background(), tc.expr, lintDevices())
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range report.Findings {
				got = append(got, string(f.Kind)+" "+f.Name+" "+f.Message)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("findings %q, want %d", got, len(tc.want))
			}
			for i, w := range tc.want {
				kind, rest, _ := strings.Cut(w, " ")
				name, frag, _ := strings.Cut(rest, " ")
				f := report.Findings[i]
				if string(f.Kind) != kind || f.Name != name || !strings.Contains(f.Message, frag) {
					t.Errorf("finding %q, want kind %s name %s containing %q", got[i], kind, name, frag)
				}
			}
		})
	}
}

func TestLintOutcomes(t *testing.T) {
	report, err := testEnv.Lint(context.Background(), `device.attributes["gpu.nvidia.com"].mig == false`, lintDevices())
	if err != nil {
		t.Fatal(err)
	}
	if len(report.Outcomes) != 2 {
		t.Fatalf("outcomes %+v", report.Outcomes)
	}
	first, second := report.Outcomes[0], report.Outcomes[1]
	if first.Device != "gpu.nvidia.com/gpu-0" || !first.Matched || first.Err != nil {
		t.Errorf("first outcome %+v, want a match", first)
	}
	if second.Device != "gpu.nvidia.com/gpu-1" || second.Matched || !errors.Is(second.Err, ErrRuntime) {
		t.Errorf("second outcome %+v, want a runtime error (mig is missing)", second)
	}
}

func TestLintCompileError(t *testing.T) {
	if _, err := testEnv.Lint(context.Background(), `device.`, lintDevices()); !errors.Is(err, ErrCompile) {
		t.Fatalf("got %v, want ErrCompile", err)
	}
}

func TestLintNilDevice(t *testing.T) {
	report, err := testEnv.Lint(context.Background(), `device.attributes["gpu.nvidia.com"].index == 3`, []*Device{nil, NewDevice("gpu.nvidia.com", testGPU())})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(report.Outcomes[0].Err, ErrRuntime) || !report.Outcomes[1].Matched || len(report.Findings) != 0 {
		t.Fatalf("got %+v", report)
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"architecture", "architecture", 0},
		{"architecure", "architecture", 1},
		{"index", "idnex", 2},
		{"memory", "mem", 3},
		{"", "ab", 2},
		{"abc", "xyz", 3},
	} {
		if got := editDistance(tc.a, tc.b, 3); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
