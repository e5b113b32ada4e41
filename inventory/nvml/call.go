package nvml

import (
	"errors"
	"fmt"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// errNotSupported marks a capability NVML says the device does not have.
var errNotSupported = errors.New("not supported")

// errNotImplemented marks a call that panicked, as unset mock methods do.
var errNotImplemented = errors.New("not implemented")

// call runs one NVML call, turning a panic into errNotImplemented,
// ERROR_NOT_SUPPORTED into errNotSupported and other failures into an error
// wrapping the Return (which is itself an error).
func call[T any](f func() (T, gonvml.Return)) (v T, err error) {
	defer func() {
		if r := recover(); r != nil {
			var zero T
			v, err = zero, fmt.Errorf("%w: %v", errNotImplemented, r)
		}
	}()
	v, ret := f()
	switch ret {
	case gonvml.SUCCESS:
		return v, nil
	case gonvml.ERROR_NOT_SUPPORTED:
		return v, errNotSupported
	default:
		return v, ret
	}
}

// call2 is call for NVML functions returning two values.
func call2[A, B any](f func() (A, B, gonvml.Return)) (A, B, error) {
	type pair struct {
		a A
		b B
	}
	p, err := call(func() (pair, gonvml.Return) {
		a, b, ret := f()
		return pair{a, b}, ret
	})
	return p.a, p.b, err
}

// unknowns collects what could not be read, so that Discover can report it
// instead of failing.
type unknowns []string

func (u *unknowns) add(what string, err error) {
	if err == nil || errors.Is(err, errNotSupported) {
		return
	}
	*u = append(*u, fmt.Sprintf("%s: %v", what, err))
}
