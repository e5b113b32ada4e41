package watchdog_test

import (
	"context"
	"fmt"
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
