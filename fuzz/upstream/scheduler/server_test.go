package scheduler_test

import (
	"flag"
	"os"
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/dralloc/dralloc/fuzz/controlplane"
	"github.com/dralloc/dralloc/fuzz/upstream/internal/livetest"
)

// server is the control plane this test binary runs (etcd, kube-apiserver, kube-scheduler and
// kube-controller-manager), or why it does not run one.
var server = &livetest.Plane{
	Name: "control plane",
	Options: controlplane.Options{
		Build: true, Scheduler: true, DirPrefix: "dralloc-scheduler-",
		// No kubelet lifts the node.kubernetes.io/not-ready taint this admission plugin puts on every new Node.
		DisableAdmission: []string{"TaintNodesByCondition"},
	},
	LogsOnFailure: []string{"kube-scheduler", "kube-controller-manager"},
}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(server.Run(m))
}

// client returns the control plane's clientset, or skips the test when there is none.
func client(t *testing.T) kubernetes.Interface {
	t.Helper()
	return server.Client(t)
}
