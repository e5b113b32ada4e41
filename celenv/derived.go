package celenv

import (
	"context"
	"fmt"

	"github.com/blang/semver/v4"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	resourceapi "k8s.io/api/resource/v1"
)

// Derived is a compiled DeviceDerivedAttribute expression. It is immutable
// and safe for concurrent use.
type Derived struct {
	program *program
}

// Expression returns the expression the attribute was compiled from.
func (d *Derived) Expression() string { return d.program.expression }

// MaxCost returns the worst-case cost of one evaluation (see
// Selector.MaxCost).
func (d *Derived) MaxCost() uint64 { return d.program.maxCost }

// Evaluate computes the attribute for a prepared device: a scalar (int,
// bool, string, version) or, for a list result, the matching list field.
// An empty list yields an empty StringValues, as in Kubernetes. Errors are
// as for Selector.Matches.
func (d *Derived) Evaluate(ctx context.Context, dev *Device) (resourceapi.DeviceAttribute, error) {
	out, err := d.program.eval(ctx, dev)
	if err != nil {
		return resourceapi.DeviceAttribute{}, err
	}
	attr, err := toAttribute(out)
	if err != nil {
		return resourceapi.DeviceAttribute{}, d.program.evalError(dev, ErrRuntime, err)
	}
	return attr, nil
}

// toAttribute converts a CEL result into an attribute value the way
// Kubernetes does: the list element type is decided by the first element.
func toAttribute(val ref.Val) (resourceapi.DeviceAttribute, error) {
	switch v := val.Value().(type) {
	case bool:
		return resourceapi.DeviceAttribute{BoolValue: &v}, nil
	case int64:
		return resourceapi.DeviceAttribute{IntValue: &v}, nil
	case string:
		return resourceapi.DeviceAttribute{StringValue: &v}, nil
	case semver.Version:
		s := v.String()
		return resourceapi.DeviceAttribute{VersionValue: &s}, nil
	}
	lister, ok := val.(traits.Lister)
	if !ok {
		return resourceapi.DeviceAttribute{}, fmt.Errorf("unsupported CEL return type: %T", val.Value())
	}
	size, ok := lister.Size().(types.Int)
	if !ok {
		return resourceapi.DeviceAttribute{}, fmt.Errorf("expected list size to be int64, got %T", lister.Size().Value())
	}
	n := int(size)
	if n == 0 {
		return resourceapi.DeviceAttribute{StringValues: []string{}}, nil
	}
	elem := func(i int) any { return lister.Get(types.Int(i)).Value() }
	switch elem(0).(type) {
	case bool:
		vals, err := listOf[bool](n, elem, "bool")
		return resourceapi.DeviceAttribute{BoolValues: vals}, err
	case int64:
		vals, err := listOf[int64](n, elem, "int")
		return resourceapi.DeviceAttribute{IntValues: vals}, err
	case string:
		vals, err := listOf[string](n, elem, "string")
		return resourceapi.DeviceAttribute{StringValues: vals}, err
	case semver.Version:
		versions, err := listOf[semver.Version](n, elem, "semver")
		if err != nil {
			return resourceapi.DeviceAttribute{}, err
		}
		vals := make([]string, n)
		for i, v := range versions {
			vals[i] = v.String()
		}
		return resourceapi.DeviceAttribute{VersionValues: vals}, nil
	default:
		return resourceapi.DeviceAttribute{}, fmt.Errorf("unsupported list element type: %T", elem(0))
	}
}

func listOf[T any](n int, elem func(int) any, name string) ([]T, error) {
	vals := make([]T, n)
	for i := range n {
		v, ok := elem(i).(T)
		if !ok {
			return nil, fmt.Errorf("expected list element at index %d to be %s, got %T", i, name, elem(i))
		}
		vals[i] = v
	}
	return vals, nil
}
