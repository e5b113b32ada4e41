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

func TestRunFailsAnInputThatTakesLongerThanTheLimit(t *testing.T) {
	t.Setenv(LimitEnv, "20ms")
	r := &recorder{TB: t}
	Run(r, "slow input", func(ctx context.Context) {
		<-ctx.Done() // the context ends at the limit
		time.Sleep(5 * time.Millisecond)
	})
	if !strings.Contains(r.msg, `"slow input"`) {
		t.Fatalf("got %q, want a failure naming the input", r.msg)
	}
}

func TestRunPassesAnInputThatEndsInTime(t *testing.T) {
	r := &recorder{TB: t}
	Run(r, "fast input", func(ctx context.Context) {})
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
