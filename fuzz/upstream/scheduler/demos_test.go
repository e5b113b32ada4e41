package scheduler_test

import (
	"path/filepath"
	"testing"

	"github.com/dralloc/dralloc/allocator/manifest"
)

// The demos of kubernetes-sigs/dra-example-driver (copies in allocator/manifest/testdata/demo) on the
// driver's demo cluster (allocator/pods/testdata/dra-example-driver: its kind nodes, DeviceClass and the
// ResourceSlices for the chart values each demo's README asks for), as allocator/pods/demo_test.go builds
// them, here compared with kube-scheduler pod by pod. Every demo's objects go into the scenario's one
// namespace (labelled for admin access, as the admin-access demo's namespace is).
const (
	demoRoot    = "../../../allocator/manifest/testdata/demo/dra-example-driver"
	demoCluster = "../../../allocator/pods/testdata/dra-example-driver"
)

// exampleDemo is a demo: its files, under demoRoot, applied at once before its pods.
type exampleDemo struct {
	name   string
	slices string // under demoCluster
	// extendedResourceName is the chart's deviceClass.extendedResourceName.
	extendedResourceName string
	files                []string
}

// exampleDemos are the demos that run here. Left out, and why:
//   - binding-conditions: its slices need the driver's binding conditions, which no driver here would ever
//     complete (kube-scheduler would wait in PreBind for its binding timeout);
//   - net-consumable-capacity and native-resource-request: they need the driver's net and cpu profiles,
//     whose ResourceSlices testdata/dra-example-driver does not have;
//   - device-taints-tolerations/device-taint-pod-noschedule, -pod-noexecute and
//     -configurable-pod-eviction-time: each applies its DeviceTaintRule after a first pod runs, and the
//     harness creates a scenario's rules before its first pod (the NoExecute ones are about eviction, which
//     is the device-taint-eviction controller's, not the scheduler's);
//   - podgroup-resourceclaimtemplate: its PodGroups are gangs of minCount 2, which the harness cannot await
//     pod by pod (the first pod waits for the second); TestGangPodGroupDemo runs it as a gang.
func exampleDemos() []exampleDemo {
	const plain = "slices-gpu.yaml"
	return []exampleDemo{
		{name: "basic-resourceclaimtemplate", slices: plain, files: []string{"basic-resourceclaimtemplate"}},
		{name: "basic-multiple-requests", slices: plain, files: []string{"basic-multiple-requests"}},
		{name: "basic-shared-claim-across-containers", slices: plain, files: []string{"basic-shared-claim-across-containers"}},
		{name: "basic-shared-claim-across-pods", slices: plain, files: []string{"basic-shared-claim-across-pods"}},
		{name: "initcontainer-shared-gpu", slices: plain, files: []string{"initcontainer-shared-gpu"}},
		{name: "basic-resourceclaim-opaque-config", slices: plain, files: []string{"basic-resourceclaim-opaque-config"}},
		{name: "cel-selector", slices: plain, files: []string{"cel-selector"}},
		{name: "prioritized-alternatives", slices: plain, files: []string{"prioritized-alternatives"}},
		{name: "admin-access", slices: plain, files: []string{"admin-access"}},
		{name: "extended-resource-request, default chart", slices: plain, files: []string{"extended-resource-request"}},
		{name: "extended-resource-request, extendedResourceName example.com/gpu", slices: plain,
			extendedResourceName: "example.com/gpu", files: []string{"extended-resource-request"}},
		{name: "gpu-allow-multiple-allocations", slices: "slices-gpu-shared.yaml", files: []string{"gpu-allow-multiple-allocations"}},
		{name: "partitionable-devices", slices: "slices-gpu-partitions.yaml", files: []string{"partitionable-devices"}},
		{name: "gpu-allow-multiple-allocations-partitionable", slices: "slices-gpu-shared-partitions.yaml",
			files: []string{"gpu-allow-multiple-allocations-partitionable"}},
		{name: "device-taint-pod-toleration", slices: plain, files: []string{
			"device-taints-tolerations/device-taint-pod-toleration/1-device-taint-rule.yaml",
			"device-taints-tolerations/device-taint-pod-toleration/2-basic-resourceclaimtemplate.yaml"}},
	}
}

// demoScenario loads a demo and its cluster as a scenario: the objects as the files have them, with their
// namespaces dropped (the harness gives them the scenario's).
func demoScenario(t *testing.T, d exampleDemo) *scenario {
	t.Helper()
	base, err := manifest.Load([]string{filepath.Join(demoCluster, "cluster.yaml"), filepath.Join(demoCluster, d.slices)}, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range d.files {
		paths = append(paths, filepath.Join(demoRoot, f))
	}
	objs, err := manifest.Load(paths, manifest.Options{SkipUnknown: true})
	if err != nil {
		t.Fatal(err)
	}
	sc := &scenario{name: d.name, nodes: base.Nodes, slices: base.Slices, rules: objs.TaintRules,
		templates: objs.Templates, claims: objs.Claims, pods: objs.Pods}
	for _, class := range base.Classes {
		if d.extendedResourceName != "" {
			class = class.DeepCopy()
			class.Spec.ExtendedResourceName = &d.extendedResourceName
		}
		sc.classes = append(sc.classes, class)
	}
	if len(sc.pods) == 0 {
		t.Fatalf("demo %s has no pods", d.name)
	}
	return sc
}

// TestExampleDriverDemos compares dralloc with kube-scheduler on the dra-example-driver demos, pod by pod.
func TestExampleDriverDemos(t *testing.T) {
	c := client(t)
	tl := newTally()
	for _, d := range exampleDemos() {
		t.Run(d.name, func(t *testing.T) { runScenario(t, c, demoScenario(t, d), tl) })
	}
	t.Logf("dra-example-driver demos against kube-scheduler:\n%s", tl.summary())
}
