package allocator

import (
	"fmt"
	"reflect"
	"sync"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/randfill"
)

// randomSlices are ResourceSlices with every field filled at random (randfill), quantities as int64
// values, as inf.Dec values and zeros at an exponent, and devices repeating each other's maps.
func randomSlices(t *testing.T, n int) []*resourceapi.ResourceSlice {
	t.Helper()
	var out []*resourceapi.ResourceSlice
	for seed := range int64(n) {
		f := randfill.NewWithSeed(seed).NilChance(0.2).NumElements(0, 3).Funcs(
			func(q *resource.Quantity, c randfill.Continue) {
				switch c.Intn(3) {
				case 0:
					*q = *resource.NewQuantity(c.Int63n(1<<40), resource.BinarySI)
				case 1:
					*q = resource.MustParse("1.5") // held as an inf.Dec
				default:
					*q = resource.MustParse("0e3")
				}
			},
			func(m *metav1.ObjectMeta, c randfill.Continue) {
				c.FillNoCustom(m)
				m.CreationTimestamp, m.DeletionTimestamp, m.ManagedFields = metav1.Time{}, nil, nil
			},
		)
		s := &resourceapi.ResourceSlice{}
		f.Fill(s)
		// Devices that repeat one another's maps, as the devices of a fleet do.
		if len(s.Spec.Devices) > 0 {
			d := s.Spec.Devices[0]
			s.Spec.Devices = append(s.Spec.Devices, d, *d.DeepCopy())
		}
		out = append(out, s)
	}
	return append(out, gpuSlice("node-a", 8), gpuSlice("node-b", 8), &resourceapi.ResourceSlice{})
}

// addresses collects the address of everything a caller could modify in place through v: what pointers
// point to, maps, and the elements of slices. Strings are immutable and not collected.
func addresses(v reflect.Value, into map[uintptr]string, path string) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			into[v.Pointer()] = path
			addresses(v.Elem(), into, path)
		}
	case reflect.Map:
		if !v.IsNil() {
			into[v.Pointer()] = path
			for it := v.MapRange(); it.Next(); {
				addresses(it.Value(), into, path+"[]")
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			into[v.Index(i).UnsafeAddr()] = path + "[i]"
			addresses(v.Index(i), into, path+"[i]")
		}
	case reflect.Struct:
		for i := range v.NumField() {
			addresses(v.Field(i), into, path+"."+v.Type().Field(i).Name)
		}
	}
}

// The copy of a slice equals it and shares nothing the caller could modify, however its devices repeat
// maps and values (shared only between the copies), and copying more slices leaves earlier copies as they
// were.
func TestSliceCopyIsPrivate(t *testing.T) {
	c := newSliceCopier()
	in := randomSlices(t, 200)
	var copies []*resourceapi.ResourceSlice
	for _, s := range in {
		before := s.DeepCopy()
		cp := c.slice(s)
		if !reflect.DeepEqual(cp, s) {
			t.Fatalf("copy of %s differs from it:\n%+v\n%+v", s.Name, cp, s)
		}
		if !reflect.DeepEqual(s, before) {
			t.Fatalf("copying %s modified it", s.Name)
		}
		copies = append(copies, cp)
	}
	inputs := map[uintptr]string{}
	for _, s := range in {
		addresses(reflect.ValueOf(s), inputs, "slice")
	}
	for i, cp := range copies {
		if !reflect.DeepEqual(cp, in[i]) {
			t.Fatalf("copy of %s changed by later copies", in[i].Name)
		}
		got := map[uintptr]string{}
		addresses(reflect.ValueOf(cp), got, "slice")
		for a, path := range got {
			if p, ok := inputs[a]; ok {
				t.Fatalf("copy of %s shares %s with the input's %s", in[i].Name, path, p)
			}
		}
	}
}

// The copier shares an attribute, capacity or counter map between devices and slices only when it is
// identical, quantities included in their representation, so that the copy reads back as its input did.
func TestSliceCopySharesIdenticalMapsOnly(t *testing.T) {
	c := newSliceCopier()
	a, b := gpuSlice("node-a", 2), gpuSlice("node-b", 2)
	b.Spec.Devices[1].Capacity["memory"] = resourceapi.DeviceCapacity{Value: *resource.NewQuantity(80<<30, resource.DecimalSI)} // = 80Gi
	ca, cb := c.slice(a), c.slice(b)
	if reflect.ValueOf(ca.Spec.Devices[0].Capacity).Pointer() != reflect.ValueOf(cb.Spec.Devices[0].Capacity).Pointer() {
		t.Errorf("identical capacity maps of two slices are not shared")
	}
	if got := cb.Spec.Devices[1].Capacity["memory"].Value; got.String() != "85899345920" {
		t.Errorf("an equal quantity of another representation was shared: reads %s, want 85899345920", got.String())
	}
	if !reflect.DeepEqual(cb, b) || !reflect.DeepEqual(ca, a) {
		t.Errorf("copies differ from their inputs")
	}
	// Equal attribute maps are shared across slices too (a fleet without uuids publishes the same ones
	// on every node), and different ones are not.
	if reflect.ValueOf(ca.Spec.Devices[1].Attributes).Pointer() != reflect.ValueOf(cb.Spec.Devices[1].Attributes).Pointer() {
		t.Errorf("identical attribute maps of two slices are not shared")
	}
	if reflect.ValueOf(ca.Spec.Devices[0].Attributes).Pointer() == reflect.ValueOf(cb.Spec.Devices[1].Attributes).Pointer() {
		t.Errorf("attribute maps that differ (uuid, index) are shared")
	}
	d := gpuSlice("node-c", 1)
	d.Spec.Devices = append(d.Spec.Devices, *d.Spec.Devices[0].DeepCopy())
	d.Spec.Devices[1].Name = "gpu-1"
	cd := c.slice(d)
	if reflect.ValueOf(cd.Spec.Devices[0].Attributes).Pointer() != reflect.ValueOf(cd.Spec.Devices[1].Attributes).Pointer() {
		t.Errorf("identical attribute maps of one slice are not shared")
	}
	d.Spec.Devices[1].Attributes["index"] = resourceapi.DeviceAttribute{IntValue: ptr.To[int64](7)}
	if got := *cd.Spec.Devices[1].Attributes["index"].IntValue; got != 0 {
		t.Errorf("changing the input changed the copy: index %d", got)
	}
}

// The copier handles the fields of Device, DeviceAttribute and DeviceCounterConsumption it knows of by
// hand and leaves the others to DeepCopy; sharing attribute maps compares the value fields it knows of.
// A field added to these types by a newer k8s.io/api must be looked at here: shared only if compared.
func TestSliceCopyKnowsTheFields(t *testing.T) {
	for _, tc := range []struct {
		typ    reflect.Type
		fields []string
	}{
		{reflect.TypeFor[resourceapi.Device](), []string{"Name", "Attributes", "Capacity", "ConsumesCounters", "NodeName", "NodeSelector", "AllNodes", "Taints", "BindsToNode", "BindingConditions", "BindingFailureConditions", "AllowMultipleAllocations", "NodeAllocatableResources"}},
		{reflect.TypeFor[resourceapi.DeviceAttribute](), []string{"IntValue", "BoolValue", "StringValue", "VersionValue", "IntValues", "BoolValues", "StringValues", "VersionValues"}},
		{reflect.TypeFor[resourceapi.DeviceCounterConsumption](), []string{"CounterSet", "Counters", "CompatibilityGroups"}},
		{reflect.TypeFor[resourceapi.Counter](), []string{"Value"}},
		{reflect.TypeFor[resourceapi.DeviceCapacity](), []string{"Value", "RequestPolicy"}},
	} {
		var got []string
		for i := range tc.typ.NumField() {
			got = append(got, tc.typ.Field(i).Name)
		}
		if !reflect.DeepEqual(got, tc.fields) {
			t.Errorf("%s has fields %v, the copier knows %v: check sliceCopier and sameAttribute", tc.typ, got, tc.fields)
		}
	}
}

// Slices added from many goroutines, to a snapshot and to its fork (which share the copier and its
// Memo), are each kept equal to their input.
func TestSliceCopyConcurrentAdds(t *testing.T) {
	snap := NewSnapshot(Options{})
	fork := snap.Fork()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := snap
			if g%2 == 1 {
				s = fork
			}
			for i := range 20 {
				if err := s.AddOrUpdateSlice(gpuSlice(fmt.Sprintf("node-%d-%d", g, i), 4)); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	for g := range 4 {
		s := snap
		if g%2 == 1 {
			s = fork
		}
		for i := range 20 {
			node := fmt.Sprintf("node-%d-%d", g, i)
			want := gpuSlice(node, 4)
			for j := range want.Spec.Devices {
				got, ok := s.Device(DeviceID{Driver: "gpu.example.com", Pool: node, Device: want.Spec.Devices[j].Name})
				if !ok || !reflect.DeepEqual(got, &want.Spec.Devices[j]) {
					t.Fatalf("%s/%s: got %+v, want %+v", node, want.Spec.Devices[j].Name, got, want.Spec.Devices[j])
				}
			}
		}
	}
}
