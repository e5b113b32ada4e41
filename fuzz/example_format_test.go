package fuzz_test

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator/verify"
	"github.com/dralloc/dralloc/fuzz"
)

// A cluster prints as the YAML stream kubectl would write for its objects, so that a failing case reads, and
// replays, as objects instead of pointers. The gates of a hand-built cluster with nil Features are the
// defaults; here every gate is off.
func ExampleCluster_String() {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-0"}}
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: fuzz.Namespace}}
	claim.Spec.Devices.Requests = []resourceapi.DeviceRequest{{Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: fuzz.ClassGPU, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1,
	}}}
	c := &fuzz.Cluster{Nodes: []*v1.Node{node}, Node: node, Claims: []*resourceapi.ResourceClaim{claim}, Features: &verify.Features{}}
	fmt.Print(c)
	// Output:
	// # node: node-0
	// # features: none
	// ---
	// # node
	// apiVersion: v1
	// kind: Node
	// metadata:
	//   name: node-0
	// spec: {}
	// ---
	// # pending claim
	// apiVersion: resource.k8s.io/v1
	// kind: ResourceClaim
	// metadata:
	//   name: c
	//   namespace: default
	// spec:
	//   devices:
	//     requests:
	//     - exactly:
	//         allocationMode: ExactCount
	//         count: 1
	//         deviceClassName: gpu
	//       name: gpu
	// status: {}
}
