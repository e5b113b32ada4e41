package manifest

import (
	"errors"
	"strings"
)

var (
	// ErrUnknownField reports a field the object's type does not have.
	ErrUnknownField = errors.New("unknown field")
	// ErrDuplicateField reports a field given twice in one object.
	ErrDuplicateField = errors.New("duplicate field")
	// ErrUnknownKind reports a document of a kind the loader does not read (Options.SkipUnknown
	// skips those instead).
	ErrUnknownKind = errors.New("unknown kind")
	// ErrDecode reports input that is not YAML or JSON of an object: a syntax error, a missing
	// apiVersion or kind, a value of the wrong type.
	ErrDecode = errors.New("cannot decode")
	// ErrInvalid reports an object that kube-apiserver would refuse on create (its validation, or
	// the admission of a pod) or that Options.Validate refused.
	ErrInvalid = errors.New("invalid object")
	// ErrTooLarge reports a file, stream or document larger than Options.MaxBytes.
	ErrTooLarge = errors.New("too large")
	// ErrNameConflict reports a pod whose name another pod of the input has: a StatefulSet's pod
	// (its name is fixed), or a pod with generateName whose draws all gave taken names.
	ErrNameConflict = errors.New("name already taken")
	// ErrTooManyPods reports workloads that together ask for more pods than Options.MaxPods.
	ErrTooManyPods = errors.New("too many pods")
)

// Error is an error in one object of a manifest: where it is, which object, which field and why.
type Error struct {
	// Source is where the object was read.
	Source Source
	// Object is the kind and name of the object, like "ResourceClaim default/train"; empty when the
	// document could not be decoded far enough to tell.
	Object string
	// Field is the field path, like "spec.devices.requests[0].exactly.count"; empty when the error is
	// not about one field.
	Field string
	// Err is the reason; it wraps one of the package's sentinels.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Source.String())
	if e.Object != "" {
		b.WriteString(": ")
		b.WriteString(e.Object)
	}
	if e.Field != "" {
		b.WriteString(": ")
		b.WriteString(e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns the reason, for errors.Is and errors.As.
func (e *Error) Unwrap() error { return e.Err }
