package celenv

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
)

// Selector is a compiled device selector. It is immutable and safe for
// concurrent use.
type Selector struct {
	program *program
}

// Expression returns the expression the selector was compiled from.
func (s *Selector) Expression() string { return s.program.expression }

// MaxCost returns the worst-case cost of one evaluation, as the API server
// estimates it when it validates an object: math.MaxUint64 when no bound is
// known. Kubernetes rejects new selectors whose estimate exceeds
// resourceapi.CELSelectorExpressionMaxCost.
func (s *Selector) MaxCost() uint64 { return s.program.maxCost }

// Matches evaluates the selector against a prepared device. On a device
// within the API's limits and a selector whose worst case stays far below
// the cost limit (nearly all of them) it does not allocate, unless the
// selector loops (exists, all, map...) and ctx can be cancelled: then the
// evaluation is interruptible, which costs a few allocations.
//
// Errors are *EvalError wrapping ErrCostLimit or ErrRuntime. A context that
// has already ended fails the evaluation up front; one that ends during a
// loop interrupts it (checked every 100 iterations, as in Kubernetes). Both
// errors also wrap context.Cause(ctx). A nil ctx is an ErrRuntime error, not a
// panic.
func (s *Selector) Matches(ctx context.Context, d *Device) (bool, error) {
	out, err := s.program.eval(ctx, d)
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, s.program.evalError(d, ErrRuntime, fmt.Errorf("CEL result of type %s could not be converted to bool: %w", out.Type().TypeName(), errNotBool))
	}
	return bool(b), nil
}

// eval runs the program. It picks the program without cost tracking when
// the estimate proves the limit unreachable, and the tracked one otherwise.
func (p *program) eval(ctx context.Context, d *Device) (ref.Val, error) {
	if d == nil {
		return nil, &EvalError{Expression: p.expression, Kind: ErrRuntime, Err: errNoDevice}
	}
	if ctx == nil {
		return nil, p.evalError(d, ErrRuntime, errNilContext)
	}
	if d.err != nil {
		return nil, p.evalError(d, ErrRuntime, d.err)
	}
	if err := ctx.Err(); err != nil {
		return nil, p.evalError(d, ErrRuntime, fmt.Errorf("%w: %w", interpreter.InterruptError{}, context.Cause(ctx)))
	}
	var (
		out ref.Val
		err error
	)
	switch {
	case p.fast == nil || !d.withinLimits:
		out, _, err = p.tracked.ContextEval(ctx, d.act)
	case p.comprehensions && ctx.Done() != nil:
		// Only loops check for interruption; binding the context to the
		// evaluation costs a few allocations, so do it only for them.
		out, _, err = p.fast.ContextEval(ctx, d.act)
	default:
		out, _, err = p.fast.Eval(d.act)
	}
	if err != nil {
		return nil, p.classify(d, err)
	}
	return out, nil
}

var (
	errNoDevice = errors.New("no device")
	// errNilContext is the cause when the context argument is nil.
	errNilContext = errors.New("nil context")
	// errNotBool is the cause when a selector yields something else than a
	// bool.
	errNotBool = errors.New("not a bool")
)

func (p *program) classify(d *Device, err error) error {
	var cancelled interpreter.EvalCancelledError
	if errors.As(err, &cancelled) && cancelled.Cause == interpreter.CostLimitExceeded || errors.Is(err, errResultTooLarge) {
		return p.evalError(d, ErrCostLimit, err)
	}
	ev := p.evalError(d, ErrRuntime, err)
	ev.MissingKey = strings.Contains(err.Error(), "no such key:")
	return ev
}

func (p *program) evalError(d *Device, kind, err error) *EvalError {
	return &EvalError{Expression: p.expression, Device: d.name, Kind: kind, Err: err}
}
