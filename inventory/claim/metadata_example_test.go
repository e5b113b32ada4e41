package claim_test

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dralloc/dralloc/inventory/claim"
)

// A claim from a template allocated one GPU for the subrequest "gpu/large";
// the driver writes one file for request "gpu".
func ExampleBuildDeviceMetadata() {
	slice := &resourceapi.ResourceSlice{Spec: resourceapi.ResourceSliceSpec{
		Driver: "gpu.example.com", Pool: resourceapi.ResourcePool{Name: "node-a", ResourceSliceCount: 1},
		Devices: []resourceapi.Device{{Name: "gpu-0", Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"model":                           {StringValue: ptr.To("h200")},
			"resource.kubernetes.io/pciBusID": {StringValue: ptr.To("0000:3b:00.0")},
			"memory":                          {IntValue: ptr.To[int64](141)},
		}}},
	}}
	c := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "train-gpu-x7k2p", UID: "6f1d",
			Annotations: map[string]string{resourceapi.PodResourceClaimAnnotation: "gpu"}},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
			Results: []resourceapi.DeviceRequestAllocationResult{
				{Request: "gpu/large", Driver: "gpu.example.com", Pool: "node-a", Device: "gpu-0"},
				{Request: "nic", Driver: "nic.example.com", Pool: "node-a", Device: "eth1"},
			}}}},
	}
	files, err := claim.BuildDeviceMetadata(c, []*resourceapi.ResourceSlice{slice}, "gpu.example.com")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range files {
		data, _ := claim.EncodeDeviceMetadata(&f.Metadata)
		fmt.Println(f.HostPath)
		fmt.Println(f.ContainerPath)
		fmt.Print(string(data))
	}
	// Output:
	// dra-device-metadata/default_train-gpu-x7k2p/gpu/metadata.json
	// /var/run/kubernetes.io/dra-device-attributes/resourceclaimtemplates/gpu/gpu/gpu.example.com-metadata.json
	// {
	//   "kind": "DeviceMetadata",
	//   "apiVersion": "metadata.resource.k8s.io/v1beta1",
	//   "metadata": {
	//     "name": "train-gpu-x7k2p",
	//     "namespace": "default",
	//     "uid": "6f1d",
	//     "generation": 1
	//   },
	//   "podClaimName": "gpu",
	//   "requests": [
	//     {
	//       "name": "gpu/large",
	//       "devices": [
	//         {
	//           "driver": "gpu.example.com",
	//           "pool": "node-a",
	//           "name": "gpu-0",
	//           "attributes": {
	//             "memory": {
	//               "int": 141
	//             },
	//             "model": {
	//               "string": "h200"
	//             },
	//             "resource.kubernetes.io/pciBusID": {
	//               "string": "0000:3b:00.0"
	//             }
	//           }
	//         }
	//       ]
	//     }
	//   ]
	// }
}

// A file for consumers of both versions holds the document twice, newest
// first; network data comes from the claim's status.devices.
func ExampleEncodeDeviceMetadata() {
	dm := &claim.DeviceMetadata{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "net", UID: "a1", Generation: 2},
		Requests: []claim.DeviceMetadataRequest{{Name: "nic", Devices: []claim.MetadataDevice{{
			Driver: "nic.example.com", Pool: "node-a", Name: "vf-3",
			NetworkData: &resourceapi.NetworkDeviceData{InterfaceName: "net1", IPs: []string{"10.1.0.7/24"}},
		}}}},
	}
	data, err := claim.EncodeDeviceMetadata(dm, claim.MetadataV1Beta1, claim.MetadataV1Alpha1)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(string(data))
	// Output:
	// {
	//   "kind": "DeviceMetadata",
	//   "apiVersion": "metadata.resource.k8s.io/v1beta1",
	//   "metadata": {
	//     "name": "net",
	//     "namespace": "default",
	//     "uid": "a1",
	//     "generation": 2
	//   },
	//   "requests": [
	//     {
	//       "name": "nic",
	//       "devices": [
	//         {
	//           "driver": "nic.example.com",
	//           "pool": "node-a",
	//           "name": "vf-3",
	//           "networkData": {
	//             "interfaceName": "net1",
	//             "ips": [
	//               "10.1.0.7/24"
	//             ]
	//           }
	//         }
	//       ]
	//     }
	//   ]
	// }
	// {
	//   "kind": "DeviceMetadata",
	//   "apiVersion": "metadata.resource.k8s.io/v1alpha1",
	//   "metadata": {
	//     "name": "net",
	//     "namespace": "default",
	//     "uid": "a1",
	//     "generation": 2
	//   },
	//   "requests": [
	//     {
	//       "name": "nic",
	//       "devices": [
	//         {
	//           "driver": "nic.example.com",
	//           "pool": "node-a",
	//           "name": "vf-3",
	//           "networkData": {
	//             "interfaceName": "net1",
	//             "ips": [
	//               "10.1.0.7/24"
	//             ]
	//           }
	//         }
	//       ]
	//     }
	//   ]
	// }
}

// A workload reads the first version it knows and rejects what it does not.
func ExampleParseDeviceMetadata() {
	stream := `{"kind":"DeviceMetadata","apiVersion":"metadata.resource.k8s.io/v2","metadata":{}}
{"kind":"DeviceMetadata","apiVersion":"metadata.resource.k8s.io/v1beta1","metadata":{"name":"c"},
 "requests":[{"name":"gpu","devices":[{"driver":"gpu.example.com","pool":"node-a","name":"gpu-0",
 "attributes":{"model":{"string":"h200"}}}]}]}
`
	dm, err := claim.ParseDeviceMetadata([]byte(stream))
	if err != nil {
		fmt.Println(err)
		return
	}
	d := dm.Requests[0].Devices[0]
	fmt.Println(dm.APIVersion, dm.Requests[0].Name, d.Pool, d.Name, *d.Attributes["model"].StringValue)

	_, err = claim.ParseDeviceMetadata([]byte(`{"kind":"DeviceMetadata","apiVersion":"metadata.resource.k8s.io/v1beta1",
 "requests":[{"name":"gpu","devices":[{"driver":"gpu.example.com","name":"gpu-0"}]}]}`))
	fmt.Println(err)
	// Output:
	// metadata.resource.k8s.io/v1beta1 gpu node-a gpu-0 h200
	// invalid device metadata: metadata.resource.k8s.io/v1beta1: requests[0].devices[0].pool: Required value
}
