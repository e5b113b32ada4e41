package controlplane_test

import (
	"errors"
	"fmt"
	"os"

	"github.com/dralloc/dralloc/fuzz/controlplane"
)

// A test's TestMain starts the control plane once and skips the live tests where there can be none;
// here DRALLOC_APISERVER=skip says there is none.
func ExampleStart() {
	os.Setenv("DRALLOC_APISERVER", "skip")
	defer os.Unsetenv("DRALLOC_APISERVER")

	p, err := controlplane.Start(controlplane.Options{Build: true, Scheduler: true})
	switch {
	case errors.Is(err, controlplane.ErrUnavailable):
		fmt.Println("skip:", err)
	case err != nil:
		fmt.Println("fail:", err)
	default:
		defer p.Stop()
		fmt.Println("kubeconfig:", p.Kubeconfig) // build a client-go client from it
	}
	// Output: skip: no control plane available: DRALLOC_APISERVER=skip
}
