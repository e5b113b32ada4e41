package celenv

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
)

func TestErrorMessages(t *testing.T) {
	long := strings.Repeat("true && ", 30) + "1"
	_, err := testEnv.Compile(long)
	if err == nil {
		t.Fatal("compiled")
	}
	msg := err.Error()
	// The name of the expression is shortened; the detail (cel's own
	// rendering of the offending line) follows in full.
	if !strings.HasPrefix(msg, "compile "+strconv.Quote(long[:120]+"...")+": ") {
		t.Errorf("long expression not shortened in %q", msg)
	}
	var ce *CompileError
	if !errors.As(err, &ce) || ce.Expression != long {
		t.Errorf("CompileError does not keep the full expression")
	}

	ev := &EvalError{Expression: "x", Kind: ErrCostLimit, Err: errors.New("operation cancelled")}
	if got, want := ev.Error(), `evaluate "x": operation cancelled`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if !errors.Is(ev, ErrCostLimit) || errors.Is(ev, ErrRuntime) || errors.Is(ev, ErrCompile) || errors.Is(ev, ErrMissingAttribute) {
		t.Error("EvalError classification wrong")
	}
}

func TestEvalErrorWrapsContextCause(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	sel, _ := testEnv.Compile(`true`)
	_, err := sel.Matches(ctx, NewDevice("d", testGPU()))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	if !strings.Contains(err.Error(), "on device d/gpu-0") {
		t.Fatalf("error %q does not name the device", err)
	}
}

// A nil context is an evaluation error, not a panic, for selectors and derived attributes alike.
func TestNilContextIsAnError(t *testing.T) {
	var nilCtx context.Context
	sel, err := testEnv.Compile(`true`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sel.Matches(nilCtx, NewDevice("d", testGPU())); !errors.Is(err, ErrRuntime) || !strings.Contains(err.Error(), "nil context") {
		t.Errorf("Matches: got %v, want a runtime error naming the nil context", err)
	}
	d, err := testEnv.CompileDerived(`"x"`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Evaluate(nilCtx, NewDevice("d", testGPU())); !errors.Is(err, ErrRuntime) || !strings.Contains(err.Error(), "nil context") {
		t.Errorf("Evaluate: got %v, want a runtime error naming the nil context", err)
	}
}
