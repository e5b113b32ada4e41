package scheduler_test

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/dralloc/dralloc/fuzz/controlplane"
)

// server is the control plane this test binary runs, or why it does not run one.
var server struct {
	client kubernetes.Interface
	skip   string
}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runWithControlPlane(m))
}

// runWithControlPlane builds and starts etcd, kube-apiserver, kube-scheduler and kube-controller-manager,
// runs the tests and stops them. A build that is impossible makes every test skip; a control plane that is
// built but does not start is a failure.
func runWithControlPlane(m *testing.M) int {
	plane, err := controlplane.Start(controlplane.Options{
		Build: true, Scheduler: true, DirPrefix: "dralloc-scheduler-",
		// No kubelet lifts the node.kubernetes.io/not-ready taint this admission plugin puts on every new Node.
		DisableAdmission: []string{"TaintNodesByCondition"},
	})
	if errors.Is(err, controlplane.ErrUnavailable) {
		server.skip = err.Error()
		fmt.Fprintln(os.Stderr, "scheduler tests skip:", server.skip)
		return m.Run()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := plane.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	cfg, err := clientcmd.BuildConfigFromFlags("", plane.Kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg.QPS, cfg.Burst = 500, 1000
	if server.client, err = kubernetes.NewForConfig(cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if code != 0 {
		for _, name := range []string{"kube-scheduler", "kube-controller-manager"} {
			fmt.Fprintf(os.Stderr, "last lines of %s.log:\n%s\n", name, plane.LogTail(name, 30))
		}
	}
	return code
}

// client returns the control plane's clientset, or skips the test when there is none.
func client(t *testing.T) kubernetes.Interface {
	t.Helper()
	if server.client == nil {
		t.Skip("no control plane: " + server.skip)
	}
	return server.client
}
