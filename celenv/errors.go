package celenv

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Every error returned by this package wraps one of
// ErrCompile, ErrCostLimit and ErrRuntime, so callers can classify failures
// with errors.Is.
var (
	// ErrCompile reports an expression that Kubernetes would reject when the
	// object holding it is validated: a syntax or type error, a wrong result
	// type, or an expression longer than the API allows.
	ErrCompile = errors.New("cel compile error")
	// ErrCostLimit reports an evaluation that ran past the runtime cost limit.
	ErrCostLimit = errors.New("cel cost limit exceeded")
	// ErrRuntime reports any other evaluation failure: a missing attribute, a
	// type mismatch only visible at runtime, a bad attribute value on the
	// device, or a cancelled context.
	ErrRuntime = errors.New("cel runtime error")
	// ErrMissingAttribute refines ErrRuntime: the evaluation looked up a
	// key a map does not have, typically an attribute or capacity the
	// device does not publish. Guard such lookups with has() or optional
	// chaining (.?name.orValue(default)).
	ErrMissingAttribute = errors.New("cel missing attribute")
	// ErrQuantityOutOfRange refines ErrRuntime: a quantity function met a
	// quantity whose magnitude lies beyond 10^±1000 (such as
	// quantity("1E100000000") or a capacity of 0E100000000), which
	// Kubernetes takes minutes to parse, compare or add; celenv refuses it.
	ErrQuantityOutOfRange = errors.New("quantity out of range: magnitudes from 1e-1000 to 1e1000 are supported")
)

// CompileError is the error returned by Compile and CompileDerived.
type CompileError struct {
	// Expression is the expression as given.
	Expression string
	// Detail is the reason, as Kubernetes words it. For syntax and type errors
	// it carries the position as "ERROR: <input>:line:column: message" lines
	// followed by the offending line and a caret.
	Detail string
	// Line and Column give the 1-based position of the first issue, or zero
	// when the issue has no position (result type, length).
	Line, Column int
}

func (e *CompileError) Error() string {
	return fmt.Sprintf("compile %s: %s", quoteExpression(e.Expression), e.Detail)
}

// Unwrap makes errors.Is(err, ErrCompile) true.
func (e *CompileError) Unwrap() error { return ErrCompile }

// EvalError is the error returned when evaluating a compiled expression
// against a device fails.
type EvalError struct {
	// Expression is the expression that was evaluated.
	Expression string
	// Device names the device ("<driver>/<name>") when it is known.
	Device string
	// Kind is ErrCostLimit or ErrRuntime.
	Kind error
	// MissingKey is set when the failure is a lookup of a key (typically an
	// attribute or capacity name) the device does not have.
	MissingKey bool
	// Err is the underlying cause (a CEL error, a context cause, or a bad
	// attribute value).
	Err error
}

func (e *EvalError) Error() string {
	var b strings.Builder
	b.WriteString("evaluate ")
	b.WriteString(quoteExpression(e.Expression))
	if e.Device != "" {
		b.WriteString(" on device ")
		b.WriteString(e.Device)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	if e.MissingKey {
		b.WriteString(" (consider using CEL optional chaining (.? followed by orValue()) or guarding the check with has() for optional fields)")
	}
	return b.String()
}

// Is makes errors.Is true for the classification sentinels: ErrRuntime or ErrCostLimit (Kind), and
// ErrMissingAttribute when MissingKey is set. It allocates nothing, so that testing an error for a
// sentinel on every device or node is free.
func (e *EvalError) Is(target error) bool {
	return e.Kind != nil && errors.Is(e.Kind, target) || e.MissingKey && target == ErrMissingAttribute
}

// Unwrap returns the cause, so that errors.Is and errors.As also find a context cause such as
// context.Canceled, or the CEL error.
func (e *EvalError) Unwrap() error { return e.Err }

// quoteExpression shortens long expressions so that error messages stay
// readable; the full text is available in the Expression field.
func quoteExpression(expr string) string {
	const maxShown = 120
	if len(expr) > maxShown {
		return fmt.Sprintf("%q", expr[:maxShown]+"...")
	}
	return fmt.Sprintf("%q", expr)
}
