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

func ExampleSelector_AttributeReads() {
	env, _ := celenv.NewEnv(celenv.Options{})
	for _, expr := range []string{
		`device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100" && device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0`,
		`"productName" in device.attributes["gpu.nvidia.com"]`,
	} {
		sel, _ := env.Compile(expr)
		fmt.Println(sel.AttributeReads())
	}
	// Output:
	// [{gpu.nvidia.com productName}] true
	// [] false
}

// TestAttributeReads: the attributes each expression reads, or that it reads them in a way the
// analysis does not follow.
func TestAttributeReads(t *testing.T) {
	env, err := celenv.NewEnv(celenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	type ref = celenv.AttributeRef
	for _, tc := range []struct {
		expr  string
		reads []ref
		ok    bool
	}{
		{`device.driver == "x"`, nil, true},
		{`device.allowMultipleAllocations`, nil, true},
		{`device.capacity["d"].memory.compareTo(quantity("1Gi")) >= 0 && size(device.capacity) > 0`, nil, true},
		{`device.attributes["d"].model == "a"`, []ref{{"d", "model"}}, true},
		{`device.attributes["d"]["model"] == "a" || device.attributes["c"].n > 1`, []ref{{"c", "n"}, {"d", "model"}}, true},
		{`has(device.attributes["d"].model) && device.attributes["d"].model == "a"`, []ref{{"d", "model"}}, true},
		{`device.attributes["d"].?model.orValue("") == "a"`, []ref{{"d", "model"}}, true},
		{`device.attributes["d"][?"model"].orValue("") == "a"`, []ref{{"d", "model"}}, true},
		{`device.attributes["d"].list.exists(x, x == 1)`, []ref{{"d", "list"}}, true},
		{`"model" in device.attributes["d"]`, nil, false},
		{`size(device.attributes["d"]) > 0`, nil, false},
		{`device.attributes["d"].exists(k, k == "model")`, nil, false},
		{`device.attributes[device.driver].model == "a"`, nil, false},
		{`device.attributes["d"][device.driver] == "a"`, nil, false},
		{`has(device.attributes)`, nil, false},
		{`size(device.attributes) > 0`, nil, false},
		{`[1].all(device, device > 0)`, nil, false},
		{`device.attributes[?"d"].orValue({"model": "a"}).model == "a"`, nil, false},
	} {
		sel, err := env.Compile(tc.expr)
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		reads, ok := sel.AttributeReads()
		if ok != tc.ok || !slices.Equal(reads, tc.reads) {
			t.Errorf("%s: reads %v, %v; want %v, %v", tc.expr, reads, ok, tc.reads, tc.ok)
		}
	}
}

// TestPropAttributeReadsDecide: two devices that agree on the attributes a selector reads (and on
// capacity and driver) get the same verdict from it, and the same kind of error, whatever else
// their attributes hold. Attributes are drawn from a few names, kinds and values, present or not,
// under the driver's domain or without one.
func TestPropAttributeReadsDecide(t *testing.T) {
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
	}
	var sels []*celenv.Selector
	for _, e := range exprs {
		s, err := env.Compile(e)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := s.AttributeReads(); !ok {
			t.Fatalf("%s: reads not known", e)
		}
		sels = append(sels, s)
	}
	names := []resourceapi.QualifiedName{"model", "n", "d/model", "d/n", "c/model", "c/n", "other", "d/other"}
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
		reads, _ := sel.AttributeReads()
		read := map[resourceapi.QualifiedName]bool{}
		for _, r := range reads {
			read[resourceapi.QualifiedName(r.Domain+"/"+r.Name)] = true
			if r.Domain == driver {
				read[resourceapi.QualifiedName(r.Name)] = true
			}
		}
		a := &resourceapi.Device{Name: "a", Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{},
			Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: resource.MustParse("2Gi")}}}
		b := a.DeepCopy()
		b.Name = "b"
		for _, n := range names {
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
			t.Fatalf("%s reads %v: %v, %v on %v; %v, %v on %v", exprs[si], reads, va, ea, a.Attributes, vb, eb, b.Attributes)
		}
	})
}
