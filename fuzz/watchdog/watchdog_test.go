package watchdog

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// recorder captures a Fatalf without ending the calling goroutine's test.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Fatalf(format string, args ...any) { r.msg = fmt.Sprintf(format, args...) }

// never is a hang detector that does not fire: these tests decide themselves when an input counts as hung.
var never <-chan time.Time

// noCrash fails the test if the hang detector fires.
func noCrash(t *testing.T) func(string) {
	return func(msg string) { t.Errorf("crashed: %s", msg) }
}

func TestRunFailsAnInputThatTakesLongerThanTheLimit(t *testing.T) {
	r := &recorder{TB: t}
	run(r, "slow input", 20*time.Millisecond, never, noCrash(t), func(ctx context.Context) {
		<-ctx.Done() // the context ends at the limit; the body returns after it
	})
	if !strings.Contains(r.msg, `"slow input"`) {
		t.Fatalf("got %q, want a failure naming the input", r.msg)
	}
}

func TestRunPassesAnInputThatEndsInTime(t *testing.T) {
	r := &recorder{TB: t}
	run(r, "fast input", time.Hour, never, noCrash(t), func(ctx context.Context) {})
	if r.msg != "" {
		t.Fatalf("got failure %q", r.msg)
	}
}

// An input still running when the hang detector fires crashes with the input named; the body here
// returns only once the crash has been reported, as a loop that ignores its context would never return.
func TestRunCrashesAnInputStillRunningAtTwiceTheLimit(t *testing.T) {
	hung := make(chan time.Time)
	crashed := make(chan string, 1)
	r := &recorder{TB: t}
	run(r, "endless input", 20*time.Millisecond, hung, func(msg string) { crashed <- msg }, func(ctx context.Context) {
		// A minute is a hang of the test, never a slow machine: the detector waits on hung alone.
		select {
		case hung <- time.Time{}: // twice the limit has passed while the body runs
		case <-time.After(time.Minute):
			t.Fatal("the hang detector does not watch the input")
		}
		var msg string
		select {
		case msg = <-crashed:
		case <-time.After(time.Minute):
			t.Fatal("the hang detector fired but did not crash")
		}
		if !strings.Contains(msg, "still running after 40ms") || !strings.Contains(msg, `"endless input"`) {
			t.Errorf("crash %q, want one naming twice the limit and the input", msg)
		}
	})
}

// Run itself passes a quick input with the limit of the environment and its own hang detector.
func TestRunWithTheEnvironmentsLimit(t *testing.T) {
	t.Setenv(LimitEnv, "1h")
	r := &recorder{TB: t}
	Run(r, "fast input", func(ctx context.Context) {
		if d, ok := ctx.Deadline(); !ok || time.Until(d) < 59*time.Minute {
			t.Errorf("context deadline %v, %v; want an hour from now", d, ok)
		}
	})
	if r.msg != "" {
		t.Fatalf("got failure %q", r.msg)
	}
}

func TestLimit(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want time.Duration
	}{{"", DefaultLimit}, {"3s", 3 * time.Second}, {"-1s", DefaultLimit}, {"soon", DefaultLimit}} {
		t.Setenv(LimitEnv, tc.env)
		if got := Limit(); got != tc.want {
			t.Errorf("%s=%q: got %v, want %v", LimitEnv, tc.env, got, tc.want)
		}
	}
}

func TestDescribeCutsLongInputs(t *testing.T) {
	got := Describe(strings.Repeat("x", 5000))
	if !strings.HasSuffix(got, "... (5000 bytes)") || len(got) > 4200 {
		t.Fatalf("got %d bytes ending %q", len(got), got[len(got)-20:])
	}
}

func TestSlowToParse(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{"1Gi", false},
		{"9223372036854775807Ei", false},
		{"1E100000000", false},
		{"0E100000000", false},
		{"-1", false},
		{"1E-1000", false},
		{"1E-1001", true},
		{"1E-100000000", true},
		{strings.Repeat("9", 65) + "E1001", true},
		{strings.Repeat("9", 64) + "E1001", false},
		{"1E99999999999999999999", true},
		{strings.Repeat("1", 65<<10), true},
	} {
		if got := SlowToParse(tc.s); got != tc.want {
			t.Errorf("SlowToParse(%.30q): got %v, want %v", tc.s, got, tc.want)
		}
	}
}
