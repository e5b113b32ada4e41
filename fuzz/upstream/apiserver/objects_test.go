package apiserver_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
)

// create sends obj (a ResourceSlice, DeviceClass, ResourceClaim, ResourceClaimTemplate or DeviceTaintRule) to
// the API server and returns what it stored.
func create(ctx context.Context, c kubernetes.Interface, obj runtime.Object) (runtime.Object, error) {
	r := c.ResourceV1()
	opts := metav1.CreateOptions{}
	switch o := obj.(type) {
	case *resourceapi.ResourceSlice:
		got, err := r.ResourceSlices().Create(ctx, o, opts)
		return orNil(got, err)
	case *resourceapi.DeviceClass:
		got, err := r.DeviceClasses().Create(ctx, o, opts)
		return orNil(got, err)
	case *resourceapi.ResourceClaim:
		got, err := r.ResourceClaims(o.Namespace).Create(ctx, o, opts)
		return orNil(got, err)
	case *resourceapi.ResourceClaimTemplate:
		got, err := r.ResourceClaimTemplates(o.Namespace).Create(ctx, o, opts)
		return orNil(got, err)
	case *resourceapi.DeviceTaintRule:
		got, err := r.DeviceTaintRules().Create(ctx, o, opts)
		return orNil(got, err)
	}
	return nil, fmt.Errorf("create: unsupported type %T", obj)
}

func orNil[T runtime.Object](obj T, err error) (runtime.Object, error) {
	if err != nil {
		return nil, err
	}
	return obj, nil
}

// createAny is create, and also takes Pods and Nodes.
func createAny(ctx context.Context, c kubernetes.Interface, obj runtime.Object) (runtime.Object, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		got, err := c.CoreV1().Pods(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		return orNil(got, err)
	case *corev1.Node:
		got, err := c.CoreV1().Nodes().Create(ctx, o, metav1.CreateOptions{})
		return orNil(got, err)
	}
	return create(ctx, c, obj)
}

// metaOf returns the object metadata of one of the objects createAny takes.
func metaOf(obj runtime.Object) metav1.Object {
	m, err := apimeta.Accessor(obj)
	if err != nil {
		panic(err)
	}
	return m
}

// kindOf names the kind of one of the objects create takes.
func kindOf(obj runtime.Object) string {
	switch obj.(type) {
	case *resourceapi.ResourceSlice:
		return "ResourceSlice"
	case *resourceapi.DeviceClass:
		return "DeviceClass"
	case *resourceapi.ResourceClaim:
		return "ResourceClaim"
	case *resourceapi.ResourceClaimTemplate:
		return "ResourceClaimTemplate"
	case *resourceapi.DeviceTaintRule:
		return "DeviceTaintRule"
	case *corev1.Pod:
		return "Pod"
	case *corev1.Node:
		return "Node"
	}
	return fmt.Sprintf("%T", obj)
}

// verdict is what a validator said of one object: accepted, or rejected naming fields.
type verdict struct {
	rejected bool
	// fields are the field paths the rejection names, sorted.
	fields []string
	// reason is the message, for the report.
	reason string
}

func (v verdict) String() string {
	if !v.rejected {
		return "accepted"
	}
	return "rejected at " + strings.Join(v.fields, ", ")
}

// names reports whether the verdict names field p.
func (v verdict) names(p string) bool { return slices.Contains(v.fields, p) }

// apiVerdict turns the API server's answer to create into a verdict. An error that is not a rejection of the
// object (the server is unreachable) is returned as such.
func apiVerdict(err error) (verdict, error) {
	if err == nil {
		return verdict{}, nil
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || (!apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err)) {
		return verdict{}, err
	}
	v := verdict{rejected: true, reason: status.Status().Message}
	if d := status.Status().Details; d != nil {
		for _, c := range d.Causes {
			if c.Field != "" && !slices.Contains(v.fields, c.Field) {
				v.fields = append(v.fields, c.Field)
			}
		}
	}
	slices.Sort(v.fields)
	return v, nil
}
