// Command scaledump writes the dump of the issue "Scale" as one List to stdout, in JSON or (-o yaml) in
// YAML as kubectl get -o yaml writes it: nodes nodes with
// 8 GPUs each (a real node's allocatable), one DeviceClass whose extendedResourceName is
// example.com/gpu, a ResourceClaimTemplate asking 2 GPUs of at least 40Gi (a CEL selector on memory),
// and pods pending pods, the even ones through the template and the odd ones asking example.com/gpu: 2
// (limits and requests equal). It lives under testdata so that only whoever measures builds it:
//
//	go run ./examples/dractl/internal/cli/testdata/scaledump -nodes 5000 -pods 10000 > dump.json
//	go run ./examples/dractl/internal/cli/testdata/scaledump -o yaml > dump.yaml
//	/usr/bin/time -v go run ./examples/dractl place -f dump.json -o text
//
// With -full the nodes and pods carry what kube-apiserver returns for them (as kubectl get -o json
// writes them): UIDs, creation times, resource versions, labels, owner references, managed fields, the
// fields the API server defaults (restart and DNS policy, scheduler, service account and its projected
// token volume, the default tolerations), container resource requests, the pods' Pending status with
// its PodScheduled condition, and the nodes' addresses, conditions, node info and images.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

const driver = "gpu.example.com"

func main() {
	nodes := flag.Int("nodes", 5000, "nodes, 8 GPUs each")
	pods := flag.Int("pods", 10000, "pending pods, half through the template, half through the extended resource")
	format := flag.String("o", "json", "json or yaml")
	full := flag.Bool("full", false, "objects as kube-apiserver returns them (metadata, defaults, status)")
	flag.Parse()
	if *format != "json" && *format != "yaml" {
		fmt.Fprintln(os.Stderr, "scaledump: -o must be json or yaml")
		os.Exit(2)
	}
	if *nodes < 0 || *nodes > 1_000_000 || *pods < 0 || *pods > 1_000_000 {
		fmt.Fprintln(os.Stderr, "scaledump: -nodes and -pods must be between 0 and 1,000,000")
		os.Exit(2)
	}
	w := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(w)
	if *format == "yaml" {
		fmt.Fprint(w, "apiVersion: v1\nitems:\n")
	} else {
		fmt.Fprint(w, `{"apiVersion":"v1","kind":"List","items":[`)
	}
	first := true
	item := func(obj any) {
		if *format == "yaml" {
			data, err := yaml.Marshal(obj)
			if err != nil {
				fmt.Fprintln(os.Stderr, "scaledump:", err)
				os.Exit(1)
			}
			// An item of the List: "- " before its first line, two spaces before the others.
			for i, line := range strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n") {
				if i == 0 {
					w.WriteString("- ")
				} else {
					w.WriteString("  ")
				}
				w.WriteString(line)
			}
			w.WriteString("\n")
			return
		}
		if !first {
			w.WriteString(",")
		}
		first = false
		if err := enc.Encode(obj); err != nil {
			fmt.Fprintln(os.Stderr, "scaledump:", err)
			os.Exit(1)
		}
	}
	ext := "example.com/gpu"
	item(&resourceapi.DeviceClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "DeviceClass"},
		ObjectMeta: metav1.ObjectMeta{Name: "gpu.example.com"},
		Spec: resourceapi.DeviceClassSpec{
			Selectors:            []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "` + driver + `"`}}},
			ExtendedResourceName: &ext,
		},
	})
	item(&resourceapi.ResourceClaimTemplate{
		TypeMeta:   metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "ResourceClaimTemplate"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "two-gpus"},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "gpus",
			Exactly: &resourceapi.ExactDeviceRequest{
				DeviceClassName: "gpu.example.com", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 2,
				Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
					Expression: `device.capacity["` + driver + `"].memory.compareTo(quantity("40Gi")) >= 0`}}},
			},
		}}}}},
	})
	allocatable := corev1.ResourceList{
		corev1.ResourcePods:             resource.MustParse("110"),
		corev1.ResourceCPU:              resource.MustParse("96"),
		corev1.ResourceMemory:           resource.MustParse("1Ti"),
		corev1.ResourceEphemeralStorage: resource.MustParse("1Ti"),
	}
	memory := resource.MustParse("80Gi")
	for i := range *nodes {
		name := fmt.Sprintf("node-%05d", i)
		n := &corev1.Node{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
			Status:     corev1.NodeStatus{Capacity: allocatable, Allocatable: allocatable},
		}
		if *full {
			fullNode(n, i)
		}
		item(n)
		s := &resourceapi.ResourceSlice{
			TypeMeta:   metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "ResourceSlice"},
			ObjectMeta: metav1.ObjectMeta{Name: name + "-gpus"},
			Spec: resourceapi.ResourceSliceSpec{
				Driver: driver, NodeName: &name,
				Pool: resourceapi.ResourcePool{Name: name, Generation: 1, ResourceSliceCount: 1},
			},
		}
		for d := range 8 {
			model := "H100"
			index := int64(d)
			s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{
				Name: fmt.Sprintf("gpu-%d", d),
				Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
					"model": {StringValue: &model}, "index": {IntValue: &index},
				},
				Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: memory}},
			})
		}
		item(s)
	}
	two := resource.MustParse("2")
	for i := range *pods {
		p := &corev1.Pod{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("pod-%05d", i)},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "trainer"}}},
		}
		if i%2 == 0 {
			tmpl := "two-gpus"
			p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimTemplateName: &tmpl}}
			p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpus"}}
		} else {
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{"example.com/gpu": two},
				Requests: corev1.ResourceList{"example.com/gpu": two},
			}
		}
		if *full {
			fullPod(p, i)
		}
		item(p)
	}
	if *format == "yaml" {
		fmt.Fprint(w, "kind: List\nmetadata:\n  resourceVersion: \"\"\n")
	} else {
		fmt.Fprintln(w, "]}")
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "scaledump:", err)
		os.Exit(1)
	}
}
