package watchdog_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/dralloc/dralloc/fuzz/watchdog"
)

// A fuzz target runs its body through Run; the body passes the context on to what it calls.
func ExampleRun() {
	var t testing.T // in a fuzz target: the *testing.T of f.Fuzz's function
	watchdog.Run(&t, "1Gi", func(ctx context.Context) {
		fmt.Println(ctx.Err() == nil)
	})
	fmt.Println(t.Failed())
	// Output:
	// true
	// false
}

func ExampleDescribe() {
	fmt.Println(watchdog.Describe("0E100000000"), watchdog.Describe([]byte("a\x00")), watchdog.Describe(7))
	// Output: "0E100000000" "a\x00" 7
}

// Limit is DefaultLimit unless the environment sets a positive duration.
func ExampleLimit() {
	old, had := os.LookupEnv(watchdog.LimitEnv)
	defer func() {
		if had {
			os.Setenv(watchdog.LimitEnv, old)
		} else {
			os.Unsetenv(watchdog.LimitEnv)
		}
	}()
	os.Setenv(watchdog.LimitEnv, "2m")
	fmt.Println(watchdog.Limit())
	os.Setenv(watchdog.LimitEnv, "soon") // not a duration
	fmt.Println(watchdog.Limit() == watchdog.DefaultLimit)
	// Output:
	// 2m0s
	// true
}

// Inputs whose parse alone takes apimachinery minutes are skipped; huge values that parse quickly are not.
func ExampleSlowToParse() {
	fmt.Println(watchdog.SlowToParse("1E-100000000"), watchdog.SlowToParse("1E100000000"), watchdog.SlowToParse("40Gi"))
	// Output: true false false
}
