package main

import (
	"fmt"
	"io"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// objects are the API objects the story created, by "kind/name" or "kind/namespace/name" with a short
// kind (node, pod, slice, class, claim, template, rule, podgroup), as the story last wrote them (a claim
// with its allocation once it has one).
type objects map[string]runtime.Object

// add records a copy of obj with its apiVersion and kind set, so that its YAML can be applied as is.
func (o objects) add(obj runtime.Object) {
	obj = obj.DeepCopyObject()
	var kind, group, short string
	resourceGroup := resourceapi.SchemeGroupVersion.String()
	switch obj.(type) {
	case *v1.Node:
		kind, group, short = "Node", "v1", "node"
	case *v1.Pod:
		kind, group, short = "Pod", "v1", "pod"
	case *resourceapi.ResourceSlice:
		kind, group, short = "ResourceSlice", resourceGroup, "slice"
	case *resourceapi.DeviceClass:
		kind, group, short = "DeviceClass", resourceGroup, "class"
	case *resourceapi.ResourceClaim:
		kind, group, short = "ResourceClaim", resourceGroup, "claim"
	case *resourceapi.ResourceClaimTemplate:
		kind, group, short = "ResourceClaimTemplate", resourceGroup, "template"
	case *resourceapi.DeviceTaintRule:
		kind, group, short = "DeviceTaintRule", resourceGroup, "rule"
	case *schedulingapi.PodGroup:
		kind, group, short = "PodGroup", schedulingapi.SchemeGroupVersion.String(), "podgroup"
	default:
		panic(fmt.Sprintf("quickstart: no kind for %T", obj)) // a programming error of this file
	}
	tm := metav1.TypeMeta{APIVersion: group, Kind: kind}
	obj.GetObjectKind().SetGroupVersionKind(tm.GroupVersionKind())
	meta, _ := obj.(metav1.Object)
	key := short + "/"
	if meta.GetNamespace() != "" {
		key += meta.GetNamespace() + "/"
	}
	o[key+meta.GetName()] = obj
}

func (o objects) keys() []string {
	keys := make([]string, 0, len(o))
	for k := range o {
		keys = append(keys, k)
	}
	return keys
}

// print writes the object named key as one YAML document.
func (o objects) print(w io.Writer, key string) error {
	obj, ok := o[strings.ToLower(key)]
	if !ok {
		return fmt.Errorf("-show %s: the story created no such object (-show list lists them)", key)
	}
	data, err := yaml.Marshal(obj)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "---")
	_, err = w.Write(data)
	return err
}
