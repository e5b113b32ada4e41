package livetest

import (
	"errors"
	"fmt"
	"io"
	"os"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/dralloc/dralloc/fuzz/controlplane"
)

// Plane is one test binary's control plane: the clientset of its kube-apiserver, or why there is none.
type Plane struct {
	// Name says what the plane is in a skip message ("kube-apiserver", "control plane").
	Name string
	// Options start the plane.
	Options controlplane.Options
	// LogsOnFailure names the components whose last log lines are printed when a test fails.
	LogsOnFailure []string

	client kubernetes.Interface
	skip   string
}

// Run starts the plane, runs the tests and stops it, and returns the exit code for os.Exit.
func (p *Plane) Run(m *testing.M) int {
	return p.run(m, os.Stderr)
}

func (p *Plane) run(m interface{ Run() int }, log io.Writer) int {
	plane, err := controlplane.Start(p.Options)
	if errors.Is(err, controlplane.ErrUnavailable) {
		p.skip = err.Error()
		fmt.Fprintf(log, "%s tests skip: %s\n", p.Name, p.skip)
		return m.Run()
	}
	if err != nil {
		fmt.Fprintln(log, err)
		return 1
	}
	defer func() {
		if err := plane.Stop(); err != nil {
			fmt.Fprintln(log, err)
		}
	}()
	cfg, err := clientcmd.BuildConfigFromFlags("", plane.Kubeconfig)
	if err != nil {
		fmt.Fprintln(log, err)
		return 1
	}
	// The tests create objects in bursts; client-go's default of 5 per second would make them wait.
	cfg.QPS, cfg.Burst = 500, 1000
	if p.client, err = kubernetes.NewForConfig(cfg); err != nil {
		fmt.Fprintln(log, err)
		return 1
	}
	code := m.Run()
	if code != 0 {
		for _, name := range p.LogsOnFailure {
			fmt.Fprintf(log, "last lines of %s.log:\n%s\n", name, plane.LogTail(name, 30))
		}
	}
	return code
}

// Client returns the plane's clientset, or skips the test when there is no plane here.
func (p *Plane) Client(t testing.TB) kubernetes.Interface {
	t.Helper()
	if p.client == nil {
		t.Skip("no " + p.Name + ": " + p.skip)
	}
	return p.client
}
