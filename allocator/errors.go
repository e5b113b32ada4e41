package allocator

import (
	"errors"
	"strings"
)

var (
	// ErrUnsatisfiable reports that the claims do not fit on the node with the devices that are free
	// there now. Another node, or the same node later, may fit. The error is an *UnsatisfiableError.
	ErrUnsatisfiable = errors.New("claims cannot be allocated")
	// ErrSearchBudget reports that the search gave up after Options.StepBudget steps without deciding.
	ErrSearchBudget = errors.New("allocation search budget exhausted")
	// ErrInvalidInput reports input that Kubernetes refuses to allocate on any node: a claim that uses a
	// disabled feature, a missing DeviceClass, a CEL expression that does not compile or fails on a
	// device, a malformed object. The error is an *InputError naming the object and field.
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

// Unwrap makes errors.Is(err, ErrUnsatisfiable) true, and errors.Is(err, ErrPoolIncomplete) or
// errors.Is(err, ErrPoolInvalid) for the pools.
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

// Unwrap makes errors.Is(err, ErrInvalidInput) true and exposes the cause.
func (e *InputError) Unwrap() []error { return []error{ErrInvalidInput, e.Err} }

func inputError(object, field string, err error) error {
	return &InputError{Object: object, Field: field, Err: err}
}
