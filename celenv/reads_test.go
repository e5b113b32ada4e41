package celenv_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/celenv"
)

func ExampleSelector_Reads() {
	env, _ := celenv.NewEnv(celenv.Options{})
	for _, expr := range []string{
		`device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100" && device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0`,
		`"productName" in device.attributes["gpu.nvidia.com"]`,
	} {
		sel, _ := env.Compile(expr)
		fmt.Println(sel.Reads())
	}
	// Output:
	// {[{gpu.nvidia.com productName}] [{gpu.nvidia.com memory}]} true
	// {[] []} false
}

// TestReads: what each expression reads, or that it reads attributes or capacity in a way the
// analysis does not follow.
func TestReads(t *testing.T) {
	env, err := celenv.NewEnv(celenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	type ref = celenv.Ref
	for _, tc := range []struct {
		expr       string
		attrs, cap []ref
		ok         bool
	}{
		{`device.driver == "x"`, nil, nil, true},
		{`device.allowMultipleAllocations`, nil, nil, true},
		{`device.capacity["d"].memory.compareTo(quantity("1Gi")) >= 0`, nil, []ref{{"d", "memory"}}, true},
		{`device.attributes["d"].model == "a"`, []ref{{"d", "model"}}, nil, true},
		{`device.attributes["d"]["model"] == "a" || device.attributes["c"].n > 1 || device.attributes["d"].model == "b"`, []ref{{"c", "n"}, {"d", "model"}}, nil, true},
		{`has(device.attributes["d"].model) && device.attributes["d"].model == "a" && has(device.capacity["d"].cores)`, []ref{{"d", "model"}}, []ref{{"d", "cores"}}, true},
		{`device.attributes["d"].?model.orValue("") == "a"`, []ref{{"d", "model"}}, nil, true},
		{`device.attributes["d"][?"model"].orValue("") == "a"`, []ref{{"d", "model"}}, nil, true},
		{`device.attributes["d"].list.exists(x, x == 1)`, []ref{{"d", "list"}}, nil, true},
		{`"model" in device.attributes["d"]`, nil, nil, false},
		{`size(device.attributes["d"]) > 0`, nil, nil, false},
		{`size(device.capacity) > 0`, nil, nil, false},
		{`device.capacity["d"].exists(k, k == "memory")`, nil, nil, false},
		{`device.attributes["d"].exists(k, k == "model")`, nil, nil, false},
		{`device.attributes[device.driver].model == "a"`, nil, nil, false},
		{`device.attributes["d"][device.driver] == "a"`, nil, nil, false},
		{`has(device.attributes)`, nil, nil, false},
		{`size(device.attributes) > 0`, nil, nil, false},
		{`[1].all(device, device > 0)`, nil, nil, false},
		{`device.attributes[?"d"].orValue({"model": "a"}).model == "a"`, nil, nil, false},
	} {
		sel, err := env.Compile(tc.expr)
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		reads, ok := sel.Reads()
		if ok != tc.ok || !slices.Equal(reads.Attributes, tc.attrs) || !slices.Equal(reads.Capacity, tc.cap) {
			t.Errorf("%s: reads %v, %v; want %v %v, %v", tc.expr, reads, ok, tc.attrs, tc.cap, tc.ok)
		}
	}
}

// TestPropReadsDecide: two devices that agree on the attributes and capacities a selector reads (and
// on the driver) get the same verdict from it, and the same kind of error, whatever else
// their attributes hold. Attributes are drawn from a few names, kinds and values, present or not,
// under the driver's domain or without one.
func TestPropReadsDecide(t *testing.T) {
	env, err := celenv.NewEnv(celenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const driver = "d"
	exprs := []string{
		`device.attributes["d"].model == "a"`,
		`device.attributes["d"]["n"] > 1 || device.attributes["c"].n > 1`,
		`has(device.attributes["d"].model) && device.attributes["d"].model == "b"`,
		`device.attributes["d"].?n.orValue(0) >= 1`,
		`device.attributes["d"][?"model"].orValue("") == "a" && device.capacity["d"].memory.compareTo(quantity("1Gi")) >= 0`,
		`device.attributes["c"].model == device.attributes["d"].model`,
		`device.capacity["d"].memory.compareTo(quantity("1Gi")) >= 0`,
		`has(device.capacity["d"].cores) || device.attributes["d"].n == 2`,
	}
	var sels []*celenv.Selector
	for _, e := range exprs {
		s, err := env.Compile(e)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := s.Reads(); !ok {
			t.Fatalf("%s: reads not known", e)
		}
		sels = append(sels, s)
	}
	attrNames := []resourceapi.QualifiedName{"model", "n", "d/model", "d/n", "c/model", "c/n", "other", "d/other"}
	drawAttr := func(t *rapid.T, label string) resourceapi.DeviceAttribute {
		switch rapid.IntRange(0, 2).Draw(t, label) {
		case 0:
			return resourceapi.DeviceAttribute{StringValue: ptr.To(rapid.SampledFrom([]string{"a", "b"}).Draw(t, label+"s"))}
		case 1:
			return resourceapi.DeviceAttribute{IntValue: ptr.To(int64(rapid.IntRange(0, 2).Draw(t, label+"i")))}
		}
		return resourceapi.DeviceAttribute{BoolValue: ptr.To(rapid.Bool().Draw(t, label+"b"))}
	}
	rapid.Check(t, func(t *rapid.T) {
		si := rapid.IntRange(0, len(sels)-1).Draw(t, "selector")
		sel := sels[si]
		reads, _ := sel.Reads()
		names := func(refs []celenv.Ref) map[resourceapi.QualifiedName]bool {
			m := map[resourceapi.QualifiedName]bool{}
			for _, r := range refs {
				m[resourceapi.QualifiedName(r.Domain+"/"+r.Name)] = true
				if r.Domain == driver {
					m[resourceapi.QualifiedName(r.Name)] = true
				}
			}
			return m
		}
		read, readCap := names(reads.Attributes), names(reads.Capacity)
		a := &resourceapi.Device{Name: "a", Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{},
			Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{}}
		b := a.DeepCopy()
		b.Name = "b"
		for _, n := range []resourceapi.QualifiedName{"memory", "d/memory", "cores"} {
			inA := rapid.Bool().Draw(t, "capacity in a "+string(n))
			if inA {
				a.Capacity[n] = resourceapi.DeviceCapacity{Value: resource.MustParse(rapid.SampledFrom([]string{"512Mi", "2Gi"}).Draw(t, "a "+string(n)))}
			}
			switch {
			case readCap[n]:
				if inA {
					b.Capacity[n] = a.Capacity[n]
				}
			case rapid.Bool().Draw(t, "capacity in b "+string(n)):
				b.Capacity[n] = resourceapi.DeviceCapacity{Value: resource.MustParse(rapid.SampledFrom([]string{"512Mi", "2Gi"}).Draw(t, "b "+string(n)))}
			}
		}
		for _, n := range attrNames {
			inA := rapid.Bool().Draw(t, "in a "+string(n))
			if inA {
				a.Attributes[n] = drawAttr(t, "a "+string(n))
			}
			switch {
			case read[n]:
				if inA {
					b.Attributes[n] = a.Attributes[n]
				}
			case rapid.Bool().Draw(t, "in b "+string(n)):
				b.Attributes[n] = drawAttr(t, "b "+string(n))
			}
		}
		ctx := context.Background()
		va, ea := sel.Matches(ctx, celenv.NewDevice(driver, a))
		vb, eb := sel.Matches(ctx, celenv.NewDevice(driver, b))
		if va != vb || (ea == nil) != (eb == nil) {
			t.Fatalf("%s reads %v: %v, %v on %v %v; %v, %v on %v %v", exprs[si], reads, va, ea, a.Attributes, a.Capacity, vb, eb, b.Attributes, b.Capacity)
		}
	})
}
