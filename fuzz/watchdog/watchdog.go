package watchdog

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// DefaultLimit is how long one fuzz input may take unless DRALLOC_FUZZ_INPUT_LIMIT says otherwise. Inputs
// take milliseconds; the margin is for loaded machines and the race detector.
const DefaultLimit = 10 * time.Second

// LimitEnv names the environment variable that overrides DefaultLimit (a time.ParseDuration string).
const LimitEnv = "DRALLOC_FUZZ_INPUT_LIMIT"

// Limit returns the time one input may take: $DRALLOC_FUZZ_INPUT_LIMIT when it is a positive duration,
// DefaultLimit otherwise.
func Limit() time.Duration {
	if d, err := time.ParseDuration(os.Getenv(LimitEnv)); err == nil && d > 0 {
		return d
	}
	return DefaultLimit
}

// Run runs body for one fuzz input with a context that ends after Limit(). It fails t, naming input, when
// body returns after the limit, and panics with input when body has not returned after twice the limit.
// input is what the fuzz target received (strings and byte slices are quoted, up to 4096 bytes).
func Run(t testing.TB, input any, body func(ctx context.Context)) {
	t.Helper()
	limit := Limit()
	hung := time.NewTimer(2 * limit)
	defer hung.Stop()
	run(t, input, limit, hung.C, func(msg string) { panic(msg) }, body)
}

// run is Run with the hang detector's clock and its crash given: crash is called with the message once
// hung delivers while body is still running. Tests pass a channel they fire themselves, so that whether
// body counts as hung never depends on how soon a goroutine is scheduled.
func run(t testing.TB, input any, limit time.Duration, hung <-chan time.Time, crash func(msg string), body func(ctx context.Context)) {
	t.Helper()
	// start is taken before the context's deadline is set, so that an input whose context has ended has
	// taken at least the limit however late this goroutine runs again.
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-done:
		case <-hung:
			crash(fmt.Sprintf("fuzz input still running after %v: %s", 2*limit, Describe(input)))
		}
	}()
	body(ctx)
	// A body that returns once its context has ended took the limit, even when the clock read below lags
	// the context's timer.
	if took := time.Since(start); took > limit || ctx.Err() != nil {
		t.Fatalf("fuzz input took %v, more than %v: %s", took.Round(time.Millisecond), limit, Describe(input))
	}
}

// Describe prints a fuzz input for a failure message: strings and byte slices quoted and cut to 4096
// bytes, anything else with %v.
func Describe(input any) string {
	const maxShown = 4096
	quote := func(s string) string {
		if len(s) > maxShown {
			return fmt.Sprintf("%q... (%d bytes)", s[:maxShown], len(s))
		}
		return fmt.Sprintf("%q", s)
	}
	switch v := input.(type) {
	case string:
		return quote(v)
	case []byte:
		return quote(string(v))
	}
	return fmt.Sprintf("%v", input)
}
