package allocator_test

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
)

// A driver republished its pool as generation 2 and the slice of generation 1 is still there: the
// allocator reads generation 2 only. Generation 3 is being published, 1 slice of 2 so far: until the
// second one comes, the pool is incomplete and the allocator gives none of its devices.
func ExampleSnapshot_PoolStatus() {
	node := "node-a"
	slice := func(name string, gen, count int64) *resourceapi.ResourceSlice {
		return &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: resourceapi.ResourceSliceSpec{
			Driver: "gpu.example.com", NodeName: &node, Pool: resourceapi.ResourcePool{Name: node, Generation: gen, ResourceSliceCount: count},
			Devices: []resourceapi.Device{{Name: "gpu-0"}}}}
	}
	snap := allocator.NewSnapshot(allocator.Options{})
	old, current := slice("gen-1", 1, 1), slice("gen-2", 2, 1)
	for _, s := range []*resourceapi.ResourceSlice{old, current} {
		if err := snap.AddOrUpdateSlice(s); err != nil {
			fmt.Println(err)
			return
		}
	}
	p, _ := snap.PoolStatus(allocator.PoolID{Driver: "gpu.example.com", Pool: node})
	fmt.Println(p.Generation, p.Complete(), p.Reads(old), p.Reads(current))
	if err := snap.AddOrUpdateSlice(slice("gen-3a", 3, 2)); err != nil {
		fmt.Println(err)
		return
	}
	p, _ = snap.PoolStatus(allocator.PoolID{Driver: "gpu.example.com", Pool: node})
	fmt.Printf("%d: %d of %d slices, complete %v\n", p.Generation, p.Slices, p.ResourceSliceCount, p.Complete())
	// Output:
	// 2 true false true
	// 3: 1 of 2 slices, complete false
}
