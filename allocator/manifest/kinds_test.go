package manifest

import (
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"
)

// TestDecodeKinds reads one object of every kind and version and checks where it lands and that
// it arrives in the version the loader hands out, with its content.
func TestDecodeKinds(t *testing.T) {
	cases := []struct {
		name  string
		input string
		check func(t *testing.T, o *Objects)
	}{
		{"Pod v1", `
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ns}
spec:
  containers: [{name: c, image: i}]
  resourceClaims: [{name: gpu, resourceClaimTemplateName: t}]`,
			func(t *testing.T, o *Objects) {
				one(t, o.Pods)
				equal(t, o.Pods[0].Spec.ResourceClaims[0].ResourceClaimTemplateName, ptr.To("t"))
			}},
		{"Node v1", `
apiVersion: v1
kind: Node
metadata: {name: node-1, labels: {zone: a}}`,
			func(t *testing.T, o *Objects) {
				one(t, o.Nodes)
				equal(t, o.Nodes[0].Labels["zone"], "a")
			}},
		{"ResourceSlice v1", `
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: s}
spec:
  driver: d
  nodeName: node-1
  pool: {name: p, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    capacity: {memory: {value: 80Gi}}`,
			func(t *testing.T, o *Objects) {
				one(t, o.Slices)
				s := o.Slices[0]
				equal(t, s.APIVersion, "resource.k8s.io/v1")
				equal(t, s.Spec.NodeName, ptr.To("node-1"))
				q := s.Spec.Devices[0].Capacity["memory"].Value
				equal(t, q.String(), "80Gi")
			}},
		{"ResourceSlice v1beta2", `
apiVersion: resource.k8s.io/v1beta2
kind: ResourceSlice
metadata: {name: s}
spec:
  driver: d
  allNodes: true
  pool: {name: p, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    attributes: {model: {string: h200}}`,
			func(t *testing.T, o *Objects) {
				one(t, o.Slices)
				s := o.Slices[0]
				equal(t, s.APIVersion, "resource.k8s.io/v1")
				equal(t, s.Spec.AllNodes, ptr.To(true))
				equal(t, s.Spec.Devices[0].Attributes["model"].StringValue, ptr.To("h200"))
			}},
		{"ResourceSlice v1beta1: basic fields move into the device, nodeName becomes a pointer", `
apiVersion: resource.k8s.io/v1beta1
kind: ResourceSlice
metadata: {name: s}
spec:
  driver: d
  nodeName: node-1
  pool: {name: p, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    basic:
      attributes: {model: {string: h200}}
      capacity: {memory: {value: 80Gi}}`,
			func(t *testing.T, o *Objects) {
				one(t, o.Slices)
				s := o.Slices[0]
				equal(t, s.APIVersion, "resource.k8s.io/v1")
				equal(t, s.Spec.NodeName, ptr.To("node-1"))
				equal(t, s.Spec.AllNodes, (*bool)(nil))
				equal(t, s.Spec.Devices[0].Name, "gpu-0")
				equal(t, s.Spec.Devices[0].Attributes["model"].StringValue, ptr.To("h200"))
				q := s.Spec.Devices[0].Capacity["memory"].Value
				equal(t, q.String(), "80Gi")
			}},
		{"ResourceSlice v1beta1: allNodes true stays, an empty nodeName becomes unset", `
apiVersion: resource.k8s.io/v1beta1
kind: ResourceSlice
metadata: {name: s}
spec:
  driver: d
  allNodes: true
  nodeName: ""
  pool: {name: p, generation: 1, resourceSliceCount: 1}`,
			func(t *testing.T, o *Objects) {
				one(t, o.Slices)
				equal(t, o.Slices[0].Spec.AllNodes, ptr.To(true))
				equal(t, o.Slices[0].Spec.NodeName, (*string)(nil))
			}},
		{"DeviceClass v1", `
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors: [{cel: {expression: "device.driver == 'd'"}}]`,
			func(t *testing.T, o *Objects) {
				one(t, o.Classes)
				equal(t, o.Classes[0].Spec.Selectors[0].CEL.Expression, "device.driver == 'd'")
			}},
		{"DeviceClass v1beta2", `
apiVersion: resource.k8s.io/v1beta2
kind: DeviceClass
metadata: {name: gpu}
spec:
  extendedResourceName: example.com/gpu`,
			func(t *testing.T, o *Objects) {
				one(t, o.Classes)
				equal(t, o.Classes[0].APIVersion, "resource.k8s.io/v1")
				equal(t, o.Classes[0].Spec.ExtendedResourceName, ptr.To("example.com/gpu"))
			}},
		{"DeviceClass v1beta1", `
apiVersion: resource.k8s.io/v1beta1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors: [{cel: {expression: "true"}}]`,
			func(t *testing.T, o *Objects) {
				one(t, o.Classes)
				equal(t, o.Classes[0].APIVersion, "resource.k8s.io/v1")
				equal(t, o.Classes[0].Spec.Selectors[0].CEL.Expression, "true")
			}},
		{"ResourceClaim v1", `
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: c, namespace: ns}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu, count: 2}`,
			func(t *testing.T, o *Objects) {
				one(t, o.Claims)
				equal(t, o.Claims[0].Spec.Devices.Requests[0].Exactly.Count, int64(2))
			}},
		{"ResourceClaim v1beta2", `
apiVersion: resource.k8s.io/v1beta2
kind: ResourceClaim
metadata: {name: c, namespace: ns}
spec:
  devices:
    requests:
    - name: gpu
      firstAvailable: [{name: big, deviceClassName: big}, {name: small, deviceClassName: small}]`,
			func(t *testing.T, o *Objects) {
				one(t, o.Claims)
				c := o.Claims[0]
				equal(t, c.APIVersion, "resource.k8s.io/v1")
				equal(t, c.Spec.Devices.Requests[0].FirstAvailable[1].DeviceClassName, "small")
			}},
		{"ResourceClaim v1beta1: the inline fields of a request become exactly", `
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaim
metadata: {name: c, namespace: ns}
spec:
  devices:
    requests:
    - name: gpu
      deviceClassName: gpu
      selectors: [{cel: {expression: "true"}}]
      allocationMode: ExactCount
      count: 3
      adminAccess: false
      tolerations: [{key: k, operator: Exists}]
    - name: alt
      firstAvailable: [{name: a, deviceClassName: a}]
    constraints: [{matchAttribute: example.com/numa}]
    config: [{opaque: {driver: d, parameters: {a: 1}}}]`,
			func(t *testing.T, o *Objects) {
				one(t, o.Claims)
				c := o.Claims[0]
				equal(t, c.APIVersion, "resource.k8s.io/v1")
				want := resourceapi.ExactDeviceRequest{
					DeviceClassName: "gpu",
					Selectors:       []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: "true"}}},
					AllocationMode:  resourceapi.DeviceAllocationModeExactCount,
					Count:           3,
					AdminAccess:     ptr.To(false),
					Tolerations:     []resourceapi.DeviceToleration{{Key: "k", Operator: resourceapi.DeviceTolerationOpExists}},
				}
				equal(t, *c.Spec.Devices.Requests[0].Exactly, want)
				equal(t, c.Spec.Devices.Requests[0].FirstAvailable, []resourceapi.DeviceSubRequest(nil))
				equal(t, c.Spec.Devices.Requests[1].Exactly, (*resourceapi.ExactDeviceRequest)(nil))
				equal(t, c.Spec.Devices.Requests[1].FirstAvailable[0].Name, "a")
				equal(t, *c.Spec.Devices.Constraints[0].MatchAttribute, resourceapi.FullyQualifiedName("example.com/numa"))
				equal(t, string(c.Spec.Devices.Config[0].Opaque.Parameters.Raw), `{"a":1}`)
			}},
		{"ResourceClaimTemplate v1", `
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: t, namespace: ns}
spec:
  metadata: {labels: {a: b}}
  spec:
    devices:
      requests: [{name: gpu, exactly: {deviceClassName: gpu}}]`,
			func(t *testing.T, o *Objects) {
				one(t, o.Templates)
				equal(t, o.Templates[0].Spec.Labels["a"], "b")
			}},
		{"ResourceClaimTemplate v1beta2", `
apiVersion: resource.k8s.io/v1beta2
kind: ResourceClaimTemplate
metadata: {name: t, namespace: ns}
spec:
  spec:
    devices:
      requests: [{name: gpu, exactly: {deviceClassName: gpu}}]`,
			func(t *testing.T, o *Objects) {
				one(t, o.Templates)
				equal(t, o.Templates[0].APIVersion, "resource.k8s.io/v1")
				equal(t, o.Templates[0].Spec.Spec.Devices.Requests[0].Exactly.DeviceClassName, "gpu")
			}},
		{"ResourceClaimTemplate v1beta1", `
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaimTemplate
metadata: {name: t, namespace: ns}
spec:
  metadata: {annotations: {a: b}}
  spec:
    devices:
      requests: [{name: gpu, deviceClassName: gpu}]`,
			func(t *testing.T, o *Objects) {
				one(t, o.Templates)
				tmpl := o.Templates[0]
				equal(t, tmpl.APIVersion, "resource.k8s.io/v1")
				equal(t, tmpl.Spec.Annotations["a"], "b")
				equal(t, tmpl.Spec.Spec.Devices.Requests[0].Exactly.DeviceClassName, "gpu")
			}},
		{"DeviceTaintRule v1", `
apiVersion: resource.k8s.io/v1
kind: DeviceTaintRule
metadata: {name: r}
spec:
  deviceSelector: {driver: d}
  taint: {key: k, effect: NoExecute}`,
			func(t *testing.T, o *Objects) {
				one(t, o.TaintRules)
				equal(t, o.TaintRules[0].Spec.Taint.Effect, resourceapi.DeviceTaintEffectNoExecute)
			}},
		{"DeviceTaintRule v1beta2", `
apiVersion: resource.k8s.io/v1beta2
kind: DeviceTaintRule
metadata: {name: r}
spec:
  deviceSelector: {pool: p}
  taint: {key: k, effect: NoSchedule}`,
			func(t *testing.T, o *Objects) {
				one(t, o.TaintRules)
				equal(t, o.TaintRules[0].APIVersion, "resource.k8s.io/v1")
				equal(t, o.TaintRules[0].Spec.DeviceSelector.Pool, ptr.To("p"))
			}},
		{"DeviceTaintRule v1alpha3", `
apiVersion: resource.k8s.io/v1alpha3
kind: DeviceTaintRule
metadata: {name: r}
spec:
  deviceSelector: {device: gpu-0}
  taint: {key: k, value: v, effect: None}`,
			func(t *testing.T, o *Objects) {
				one(t, o.TaintRules)
				equal(t, o.TaintRules[0].APIVersion, "resource.k8s.io/v1")
				equal(t, o.TaintRules[0].Spec.Taint.Value, "v")
			}},
		{"PodGroup v1beta1", `
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: g, namespace: ns}
spec:
  schedulingPolicy: {gang: {minCount: 4}}
  resourceClaims: [{name: gpu, resourceClaimTemplateName: t}]`,
			func(t *testing.T, o *Objects) {
				one(t, o.PodGroups)
				equal(t, o.PodGroups[0].Spec.SchedulingPolicy.Gang.MinCount, int32(4))
			}},
		{"PodGroup v1alpha3", `
apiVersion: scheduling.k8s.io/v1alpha3
kind: PodGroup
metadata: {name: g, namespace: ns}
spec:
  schedulingPolicy: {gang: {minCount: 2}}`,
			func(t *testing.T, o *Objects) {
				one(t, o.PodGroups)
				equal(t, o.PodGroups[0].APIVersion, "scheduling.k8s.io/v1beta1")
				equal(t, o.PodGroups[0].Spec.SchedulingPolicy.Gang.MinCount, int32(2))
			}},
		{"Workload v1beta1", `
apiVersion: scheduling.k8s.io/v1beta1
kind: Workload
metadata: {name: w, namespace: ns}
spec:
  podGroupTemplates: [{name: workers, schedulingPolicy: {basic: {}}}]`,
			func(t *testing.T, o *Objects) {
				one(t, o.Workloads)
				equal(t, o.Workloads[0].Spec.PodGroupTemplates[0].Name, "workers")
			}},
		{"Workload v1alpha3", `
apiVersion: scheduling.k8s.io/v1alpha3
kind: Workload
metadata: {name: w, namespace: ns}
spec:
  podGroupTemplates: [{name: workers, schedulingPolicy: {gang: {minCount: 8}}}]`,
			func(t *testing.T, o *Objects) {
				one(t, o.Workloads)
				equal(t, o.Workloads[0].APIVersion, "scheduling.k8s.io/v1beta1")
				equal(t, o.Workloads[0].Spec.PodGroupTemplates[0].SchedulingPolicy.Gang.MinCount, int32(8))
			}},
		{"Deployment becomes its pods", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ns}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: i}]}`,
			func(t *testing.T, o *Objects) {
				equal(t, len(o.Pods), 3)
				src, _ := o.Source(o.Pods[0])
				equal(t, src.Owner, "Deployment ns/web")
			}},
		{"Job becomes its pods", `
apiVersion: batch/v1
kind: Job
metadata: {name: train, namespace: ns}
spec:
  parallelism: 2
  template:
    spec: {restartPolicy: Never, containers: [{name: c, image: i}]}`,
			func(t *testing.T, o *Objects) { equal(t, len(o.Pods), 2) }},
		{"StatefulSet becomes its pods", `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: ns}
spec:
  replicas: 2
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: c, image: i}]}`,
			func(t *testing.T, o *Objects) {
				equal(t, len(o.Pods), 2)
				equal(t, o.Pods[1].Name, "db-1")
			}},
		{"ReplicaSet becomes its pods", `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: rs, namespace: ns}
spec:
  selector: {matchLabels: {app: x}}
  template:
    metadata: {labels: {app: x}}
    spec: {containers: [{name: c, image: i}]}`,
			func(t *testing.T, o *Objects) { equal(t, len(o.Pods), 1) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs := decodeString(t, tc.input, Options{NoDefaults: true})
			tc.check(t, objs)
			if objs.Len() != max(1, len(objs.Pods)) {
				t.Errorf("got %d objects, want only the one of the kind", objs.Len())
			}
		})
	}
}
