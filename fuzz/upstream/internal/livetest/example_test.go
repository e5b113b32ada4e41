package livetest_test

import (
	"github.com/dralloc/dralloc/fuzz/controlplane"
	"github.com/dralloc/dralloc/fuzz/upstream/internal/livetest"
)

// A test package declares its plane once; its TestMain runs the tests with it,
// os.Exit(server.Run(m)), and each test takes server.Client(t), which skips where no plane runs.
func ExamplePlane() {
	server := &livetest.Plane{
		Name:          "control plane",
		Options:       controlplane.Options{Build: true, Scheduler: true, DirPrefix: "dralloc-example-"},
		LogsOnFailure: []string{"kube-scheduler"},
	}
	_ = server
}
