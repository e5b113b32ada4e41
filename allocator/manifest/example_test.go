package manifest_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	resourcev1beta1 "k8s.io/api/resource/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/dralloc/dralloc/allocator/manifest"
)

// Decode reads what `kubectl get -o yaml` writes, in any version the API server serves, and hands
// out v1 objects with the API defaults applied.
func ExampleDecode() {
	input := `
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaim
metadata: {name: train, namespace: ml}
spec:
  devices:
    requests:
    - name: gpu
      deviceClassName: gpu.example.com
---
apiVersion: v1
kind: Pod
metadata: {name: trainer, namespace: ml}
spec:
  containers: [{name: main, image: trainer}]
  resourceClaims: [{name: gpu, resourceClaimName: train}]
`
	objs, err := manifest.Decode(strings.NewReader(input), "train.yaml", manifest.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	claim := objs.Claims[0]
	req := claim.Spec.Devices.Requests[0]
	src, _ := objs.Source(claim)
	fmt.Println(claim.APIVersion, claim.Namespace+"/"+claim.Name, "from", src)
	fmt.Println(req.Name, req.Exactly.DeviceClassName, req.Exactly.AllocationMode, req.Exactly.Count)
	fmt.Println("pod", objs.Pods[0].Name, "uses", *objs.Pods[0].Spec.ResourceClaims[0].ResourceClaimName)
	// Output:
	// resource.k8s.io/v1 ml/train from train.yaml: document 1
	// gpu gpu.example.com ExactCount 1
	// pod trainer uses train
}

// A field the type does not have is an error that names the file, the document, the object and
// the field.
func ExampleDecode_strict() {
	input := `
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors:
  - cel: {expresion: "device.driver == 'gpu.example.com'"}
`
	_, err := manifest.Decode(strings.NewReader(input), "classes.yaml", manifest.Options{})
	fmt.Println(err)
	// Output:
	// classes.yaml: document 1: DeviceClass gpu.example.com: spec.selectors[0].cel.expresion: unknown field
}

// Input is bounded: a document whose YAML aliases would expand past Options.MaxBytes, and
// workloads that would expand into more than Options.MaxPods pods together, are errors wrapping
// ErrTooLarge and ErrTooManyPods, found before the memory is spent. Each limit is an option a
// caller can raise.
func ExampleDecode_limits() {
	bomb := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations: {a: &x " + strings.Repeat("x", 1000) +
		"}\nspec:\n  containers: [" + strings.Repeat("*x,", 9999) + "*x]\n"
	_, err := manifest.Decode(strings.NewReader(bomb), "bomb.yaml", manifest.Options{MaxBytes: 1 << 20})
	fmt.Println(err, errors.Is(err, manifest.ErrTooLarge))

	deployment := func(name string) string {
		return "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: " + name + "}\nspec:\n  replicas: 600\n" +
			"  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: c, image: i}]}\n"
	}
	input := deployment("a") + "---\n" + deployment("b")
	_, err = manifest.Decode(strings.NewReader(input), "web.yaml", manifest.Options{MaxPods: 1000})
	fmt.Println(err, errors.Is(err, manifest.ErrTooManyPods))
	objs, err := manifest.Decode(strings.NewReader(input), "web.yaml", manifest.Options{MaxPods: 1200})
	fmt.Println(len(objs.Pods), err)
	// Output:
	// bomb.yaml: document 1: too large: more than 1048576 bytes (Options.MaxBytes) once its YAML aliases are expanded true
	// web.yaml: document 2: Deployment default/b: spec.replicas: too many pods: 600 pods, and 600 expanded before, more than Options.MaxPods (1000) for the whole input true
	// 1200 <nil>
}

// Load reads files and directories; SkipUnknown passes over kinds the loader does not read. The
// Namespaces that demo manifests create first are read, for the admin-access label.
func ExampleLoad() {
	objs, err := manifest.Load([]string{"testdata/demo/dra-example-driver/prioritized-alternatives"},
		manifest.Options{SkipUnknown: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, tmpl := range objs.Templates {
		src, _ := objs.Source(tmpl)
		fmt.Println(tmpl.Name, "from", filepath.Base(src.File), "document", src.Document)
		for _, sub := range tmpl.Spec.Spec.Devices.Requests[0].FirstAvailable {
			fmt.Printf("  %s: %s %d\n", sub.Name, sub.AllocationMode, sub.Count)
		}
	}
	for _, pod := range objs.Pods {
		fmt.Println("pod", pod.Namespace+"/"+pod.Name)
	}
	for _, ns := range objs.Namespaces {
		fmt.Println("namespace", ns.Name)
	}
	for _, s := range objs.Skipped {
		fmt.Println("skipped", s.Kind, "in document", s.Source.Document)
	}
	// Output:
	// prioritized-gpu from prioritized-alternatives.yaml document 2
	//   bleeding-edge-gpu: ExactCount 1
	//   huge-gpu: ExactCount 1
	//   older-gpu: ExactCount 1
	// preferred-gpu from prioritized-alternatives.yaml document 3
	//   latest-gpu: ExactCount 1
	//   older-gpu: ExactCount 1
	// pod prioritized-alternatives/pod0
	// pod prioritized-alternatives/pod1
	// namespace prioritized-alternatives
}

// Convert turns a v1beta1 ResourceSlice into v1: the basic device's fields move into the device.
func ExampleConvert() {
	old := &resourcev1beta1.ResourceSlice{
		TypeMeta:   metav1.TypeMeta{APIVersion: "resource.k8s.io/v1beta1", Kind: "ResourceSlice"},
		ObjectMeta: metav1.ObjectMeta{Name: "node-1-gpu"},
		Spec: resourcev1beta1.ResourceSliceSpec{
			Driver:   "gpu.example.com",
			NodeName: "node-1",
			Pool:     resourcev1beta1.ResourcePool{Name: "node-1", ResourceSliceCount: 1},
			Devices: []resourcev1beta1.Device{{
				Name: "gpu-0",
				Basic: &resourcev1beta1.BasicDevice{Attributes: map[resourcev1beta1.QualifiedName]resourcev1beta1.DeviceAttribute{
					"model": {StringValue: ptr.To("H200")},
				}},
			}},
		},
	}
	obj, err := manifest.Convert(old)
	if err != nil {
		fmt.Println(err)
		return
	}
	slice := obj.(*resourceapi.ResourceSlice)
	fmt.Println(slice.APIVersion, *slice.Spec.NodeName, slice.Spec.Devices[0].Name, *slice.Spec.Devices[0].Attributes["model"].StringValue)
	// Output:
	// resource.k8s.io/v1 node-1 gpu-0 H200
}

// Default returns a defaulted copy and leaves its input alone.
func ExampleDefault() {
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "ml"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "gpu",
			Exactly: &resourceapi.ExactDeviceRequest{
				DeviceClassName: "gpu.example.com",
				Tolerations:     []resourceapi.DeviceToleration{{Key: "maintenance"}},
			},
		}}}},
	}
	rule := &resourceapi.DeviceTaintRule{Spec: resourceapi.DeviceTaintRuleSpec{
		Taint: resourceapi.DeviceTaint{Key: "maintenance", Effect: resourceapi.DeviceTaintEffectNoSchedule},
	}}
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

	defaulted := manifest.Default(claim, now).(*resourceapi.ResourceClaim).Spec.Devices.Requests[0].Exactly
	fmt.Println(defaulted.AllocationMode, defaulted.Count, defaulted.Tolerations[0].Operator)
	fmt.Printf("input: %q %d %q\n", claim.Spec.Devices.Requests[0].Exactly.AllocationMode,
		claim.Spec.Devices.Requests[0].Exactly.Count, claim.Spec.Devices.Requests[0].Exactly.Tolerations[0].Operator)
	fmt.Println(manifest.Default(rule, now).(*resourceapi.DeviceTaintRule).Spec.Taint.TimeAdded.UTC())
	// Output:
	// ExactCount 1 Equal
	// input: "" 0 ""
	// 2026-12-01 10:00:00 +0000 UTC
}

// Expand creates the pods a Deployment's controller creates; the suffix source makes the names
// predictable.
func ExampleExpand() {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
			},
		},
	}
	pods, err := manifest.Expand(d, func(generateName string, i int) string { return fmt.Sprintf("pod%02d", i) })
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, pod := range pods {
		hash := pod.Labels["pod-template-hash"]
		owner := pod.OwnerReferences[0]
		fmt.Println(pod.Namespace, strings.Replace(pod.Name, hash, "<hash>", 1), "owned by", owner.Kind, strings.Replace(owner.Name, hash, "<hash>", 1))
	}
	// Output:
	// shop web-<hash>-pod00 owned by ReplicaSet web-<hash>
	// shop web-<hash>-pod01 owned by ReplicaSet web-<hash>
}

// Objects read from several places add up, each keeping where it was read.
func ExampleObjects_Append() {
	nodes, err := manifest.Decode(strings.NewReader("apiVersion: v1\nkind: Node\nmetadata: {name: node-a}\n"), "nodes.yaml", manifest.Options{})
	if err != nil {
		panic(err)
	}
	classes, err := manifest.Decode(strings.NewReader("apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpu}\n"), "classes.yaml", manifest.Options{})
	if err != nil {
		panic(err)
	}
	nodes.Append(classes)
	fmt.Println(nodes.Len(), "objects")
	for _, obj := range []runtime.Object{nodes.Nodes[0], nodes.Classes[0]} {
		src, _ := nodes.Source(obj)
		fmt.Println(src)
	}
	// Output:
	// 2 objects
	// nodes.yaml: document 1
	// classes.yaml: document 1
}

// Options.TakeSlice hands each ResourceSlice over as soon as it is read, so that a program that
// keeps its own copy (an allocator.Snapshot) never holds all the slices of a large dump as
// decoded objects at once; Objects.Slices stays empty. An error it returns names the slice.
func ExampleOptions_takeSlice() {
	input := `apiVersion: v1
kind: List
items:
- apiVersion: resource.k8s.io/v1
  kind: ResourceSlice
  metadata: {name: node-0-gpus}
  spec: {driver: gpu.example.com, nodeName: node-0, pool: {name: node-0, resourceSliceCount: 1}, devices: [{name: gpu-0}]}
- apiVersion: resource.k8s.io/v1
  kind: ResourceSlice
  metadata: {name: node-1-gpus}
  spec: {driver: gpu.example.com, nodeName: node-1, pool: {name: node-1, resourceSliceCount: 1}, devices: [{name: gpu-0}]}
`
	devices := 0
	take := func(s *resourceapi.ResourceSlice, src manifest.Source) error {
		fmt.Println(s.Name, "from", src)
		devices += len(s.Spec.Devices)
		return nil
	}
	objs, err := manifest.Decode(strings.NewReader(input), "dump.yaml", manifest.Options{TakeSlice: take})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(devices, "devices,", len(objs.Slices), "slices kept")

	refuse := func(s *resourceapi.ResourceSlice, _ manifest.Source) error {
		if s.Spec.NodeName != nil && *s.Spec.NodeName == "node-1" {
			return errors.New("node node-1 is cordoned")
		}
		return nil
	}
	_, err = manifest.Decode(strings.NewReader(input), "dump.yaml", manifest.Options{TakeSlice: refuse})
	fmt.Println(err)
	// Output:
	// node-0-gpus from dump.yaml: document 1, item 1
	// node-1-gpus from dump.yaml: document 1, item 2
	// 2 devices, 0 slices kept
	// dump.yaml: document 1, item 2: ResourceSlice node-1-gpus: invalid object: node node-1 is cordoned
}

// A pod is read as the API server stores it once admitted: its RuntimeClass gives it an overhead, a
// node selector and a toleration, and DefaultTolerationSeconds two more.
func ExampleDecode_runtimeClass() {
	input := `
apiVersion: v1
kind: Pod
metadata: {name: sandboxed}
spec:
  runtimeClassName: kata
  containers: [{name: main, image: app}]
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: kata}
handler: kata
overhead: {podFixed: {cpu: 250m}}
scheduling:
  nodeSelector: {runtime: kata}
  tolerations: [{key: runtime, operator: Exists}]
`
	objs, err := manifest.Decode(strings.NewReader(input), "pod.yaml", manifest.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	spec := objs.Pods[0].Spec
	fmt.Println("overhead:", spec.Overhead.Cpu())
	fmt.Println("node selector:", spec.NodeSelector)
	for _, t := range spec.Tolerations {
		fmt.Println("toleration:", strings.TrimSpace(fmt.Sprintf("%s %s %s", t.Key, t.Operator, t.Effect)))
	}

	_, err = manifest.Decode(strings.NewReader(input[:strings.Index(input, "---")]), "pod.yaml", manifest.Options{})
	fmt.Println(err)
	// Output:
	// overhead: 250m
	// node selector: map[runtime:kata]
	// toleration: node.kubernetes.io/not-ready Exists NoExecute
	// toleration: node.kubernetes.io/unreachable Exists NoExecute
	// toleration: runtime Exists
	// pod.yaml: document 1: Pod default/sandboxed: spec.runtimeClassName: invalid object: spec.runtimeClassName: Forbidden: pod rejected: RuntimeClass "kata" not found
}
