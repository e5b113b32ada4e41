package allocator

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	// ErrUnsatisfiable reports that the claims do not fit on the node with the devices that are free
	// there now. Another node, or the same node later, may fit. The error is an *UnsatisfiableError.
	ErrUnsatisfiable = errors.New("claims cannot be allocated")
	// ErrSearchBudget reports that the search gave up after Options.StepBudget steps without deciding.
	ErrSearchBudget = errors.New("allocation search budget exhausted")
	// ErrInvalidInput reports input that Kubernetes refuses to allocate: a claim that uses a disabled
	// feature, a missing DeviceClass, a CEL expression that does not compile or fails on a device, a
	// malformed object. The error is an *InputError naming the object and field; its NodeDependent field
	// tells a failure on one of the node's devices (another node may succeed) from input that fails on
	// every node.
	ErrInvalidInput = errors.New("invalid input")
	// ErrPoolNotReady reports a request for all devices of a kind while a resource pool on the node is
	// being updated (not all of its slices are published) or is invalid; as in Kubernetes this stops the
	// allocation instead of counting as "does not fit".
	ErrPoolNotReady = errors.New("resource pool not ready")
	// ErrClosed reports use of a fork after Commit or Discard.
	ErrClosed = errors.New("snapshot fork already committed or discarded")
	// ErrConflict reports a Commit refused because the snapshot the fork was forked from moved on in a
	// way the fork's changes conflict with: a device the fork allocated was allocated there meanwhile, or
	// a claim the fork changed was changed there too. The error is a *ConflictError.
	ErrConflict = errors.New("fork conflicts with its parent")
)

// UnsatisfiableError explains why claims do not fit on a node. [Explanation.Err] gives one with the
// whole explanation; Allocate gives one with the explanation where the search itself decided.
type UnsatisfiableError struct {
	// Node is the name of the node; Allocate and Fits refuse a node without a name, so it is empty only
	// in an error built elsewhere.
	Node string
	// Reasons are human-readable reasons, most specific first, naming claims and requests as
	// Kubernetes does (`claim default/train, request "gpus": needs 4 devices, 0 match and are free`).
	Reasons []string
	// Pools are the node's incomplete or invalid resource pools: errors.Is(err, ErrPoolIncomplete)
	// and errors.Is(err, ErrPoolInvalid) test for them.
	Pools []PoolError
	// Steps is how many steps the search took.
	Steps int
	// Explanation is the whole explanation when the error comes from [Explanation.Err], or from
	// Allocate when the search itself found no combination (a constraint, shared counters, requests
	// competing for devices); nil when a request alone has too few candidates, which Reasons says.
	Explanation *Explanation
	// Quota names, when the claims fit the node but not their owners' quota (Options.Quota), the limits
	// the allocation they would get without quota breaks; errors.Is(err, ErrQuotaExceeded) is then true.
	// Reasons lists them too. Empty otherwise.
	Quota []QuotaExceeded
}

func (e *UnsatisfiableError) Error() string {
	var b strings.Builder
	b.WriteString("cannot allocate all claims")
	if e.Node != "" {
		b.WriteString(" on node ")
		b.WriteString(e.Node)
	}
	if len(e.Reasons) > 0 {
		b.WriteString(": ")
		b.WriteString(strings.Join(e.Reasons, "; "))
	}
	return b.String()
}

// Is makes errors.Is(err, ErrUnsatisfiable) true without unwrapping: a filter pass tests every node's
// error for it, and Unwrap allocates.
func (e *UnsatisfiableError) Is(target error) bool {
	return target == ErrUnsatisfiable || target == ErrQuotaExceeded && len(e.Quota) > 0
}

// Unwrap returns ErrUnsatisfiable and the pools' errors, so that errors.Is(err, ErrPoolIncomplete) or
// errors.Is(err, ErrPoolInvalid) is true for the pools and errors.As finds a *PoolError.
func (e *UnsatisfiableError) Unwrap() []error {
	out := make([]error, 0, 1+len(e.Pools))
	out = append(out, ErrUnsatisfiable)
	for i := range e.Pools {
		out = append(out, &e.Pools[i])
	}
	return out
}

// InputError names the object and the field of invalid input.
type InputError struct {
	// Object is the kind and name, like "ResourceClaim default/train" or "DeviceClass gpu".
	Object string
	// Field is the field path, like "spec.devices.requests[0].exactly.selectors[1].cel.expression".
	Field string
	// Err is the reason; it may wrap a celenv error.
	Err error
	// Errors is the complete result when the object failed validation (see Options.TrustAPIServer); Field
	// and Err describe its first entry. nil for other input errors.
	Errors field.ErrorList
	// NodeDependent is true when the error came from a device the node can reach rather than from the
	// claims and classes alone: a CEL selector or derived attribute failing at run time on the device, a
	// capacity check of the device, a node selector of a slice or device that cannot be evaluated, a device
	// that breaks a constraint of a request for all devices. Kubernetes fails the allocation attempt on
	// this node with such an error (the scheduler's filter reports an error for the node); another node
	// may have no such device. An autoscaler can still consider other node types; with NodeDependent false
	// the claims fail on every node.
	NodeDependent bool
}

func (e *InputError) Error() string {
	var b strings.Builder
	b.WriteString(e.Object)
	if e.Field != "" {
		b.WriteString(": ")
		b.WriteString(e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

// Is makes errors.Is(err, ErrInvalidInput) true.
func (e *InputError) Is(target error) bool { return target == ErrInvalidInput }

// Unwrap returns the cause. (ErrInvalidInput is matched by Is, so that testing an input error for
// another sentinel, as a filter pass does on every node, allocates nothing.)
func (e *InputError) Unwrap() error { return e.Err }

func inputError(object, field string, err error) error {
	return &InputError{Object: object, Field: field, Err: err}
}

// nodeInputError is an input error caused by one of the node's devices (see InputError.NodeDependent).
func nodeInputError(object, field string, err error) error {
	return &InputError{Object: object, Field: field, Err: err, NodeDependent: true}
}

// aborted is the error of a call whose context ended: it wraps the context's error (context.Canceled or
// context.DeadlineExceeded) and, when it differs, its cause, so that errors.Is finds both and a caller
// can tell a retry from bad input.
func aborted(ctx context.Context) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if cause == nil || cause == err {
		return fmt.Errorf("allocation aborted: %w", err)
	}
	return fmt.Errorf("allocation aborted: %w (%w)", cause, err)
}

// nilContext is the error for a nil context argument: invalid input rather than a panic.
func nilContext() error {
	return inputError("argument ctx", "", errors.New("nil context"))
}
