package celenv_test

import (
	"context"
	"errors"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/celenv"
)

// The zero Env is the scheduler's environment with the default features; a nil *Env is an error, not a
// panic.
func TestZeroEnv(t *testing.T) {
	var env celenv.Env
	sel, err := env.Compile(`device.driver == "gpu.example.com" && device.allowMultipleAllocations == false`)
	if err != nil {
		t.Fatalf("compile on the zero Env: %v", err)
	}
	ok, err := sel.Matches(context.Background(), celenv.NewDevice("gpu.example.com", &resourceapi.Device{Name: "gpu-0"}))
	if !ok || err != nil {
		t.Errorf("matches on the zero Env: %v %v", ok, err)
	}
	if _, err := env.CompileDerived(`device.attributes["gpu.example.com"].model`); err != nil {
		t.Errorf("compile a derived attribute on the zero Env: %v", err)
	}
	var ce *celenv.CompileError
	if _, err := env.Compile(`device.driver ==`); !errors.As(err, &ce) {
		t.Errorf("a syntax error on the zero Env: %v, want a *CompileError", err)
	}

	var none *celenv.Env
	if _, err := none.Compile(`true`); err == nil {
		t.Error("Compile on a nil *Env succeeded")
	}
	if _, err := none.Lint(context.Background(), `true`, nil); err == nil {
		t.Error("Lint on a nil *Env succeeded")
	}
}
