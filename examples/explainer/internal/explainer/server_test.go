package explainer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/dralloc/dralloc/fuzz/controlplane"
)

// The tests against a real kube-apiserver (scripts/kube-apiserver, built by `scripts/kube-apiserver
// build`, as CI does before the tests) share one server, started by the first test that asks for it
// and stopped by TestMain. A server that is not built makes them skip with the script's reason.
var server = &livePlane{opts: controlplane.Options{DirPrefix: "dralloc-explainer-", StartTimeout: 4 * time.Minute}}

func TestMain(m *testing.M) {
	code := m.Run()
	server.stop()
	schedServer.stop()
	rbacServer.stop()
	os.Exit(code)
}

// livePlane is a control plane started on first use: the client of its kube-apiserver, why the tests
// that ask for it skip (none can run here) or fail (one was built and does not start).
type livePlane struct {
	opts   controlplane.Options
	once   sync.Once
	plane  *controlplane.Plane
	client kubernetes.Interface
	skip   string
	failed string
}

func (l *livePlane) start() {
	plane, err := controlplane.Start(l.opts)
	if errors.Is(err, controlplane.ErrUnavailable) {
		l.skip = err.Error()
		return
	}
	if err != nil {
		l.failed = err.Error()
		return
	}
	l.plane = plane
	cfg, err := clientcmd.BuildConfigFromFlags("", plane.Kubeconfig)
	if err != nil {
		l.failed = err.Error()
		return
	}
	cfg.QPS, cfg.Burst = 500, 1000
	if l.client, err = kubernetes.NewForConfig(cfg); err != nil {
		l.failed = err.Error()
	}
}

func (l *livePlane) stop() {
	if l.plane == nil {
		return
	}
	if err := l.plane.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
}

// clientOrNil starts the plane once and returns its client, nil when none can run here; a plane that
// does not start fails the test. A failing test logs whether each component still runs and what it
// logged last.
func (l *livePlane) clientOrNil(t *testing.T, components ...string) kubernetes.Interface {
	t.Helper()
	l.once.Do(l.start)
	if l.failed != "" {
		t.Fatal(l.failed)
	}
	if l.client == nil {
		return nil
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, name := range components {
			pid, running := l.plane.Running(name)
			t.Logf("%s (pid %s) running: %v; its log ends:\n%s", name, pid, running, l.plane.LogTail(name, 15))
		}
	})
	return l.client
}

// liveClient returns a client of the shared kube-apiserver, or skips the test.
func liveClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	c := server.clientOrNil(t, "kube-apiserver", "etcd")
	if c == nil {
		t.Skip("no kube-apiserver: " + server.skip)
	}
	return c
}

var unique atomic.Int64

// uniqueName returns a fresh DNS label starting with base.
func uniqueName(base string) string {
	return fmt.Sprintf("%s-%d-%d", base, os.Getpid()%10000, unique.Add(1))
}

// podNamespace creates a fresh namespace with the ServiceAccount "default" that the ServiceAccount
// admission plugin requires of pods (no controller manager creates it here).
func podNamespace(t *testing.T, c kubernetes.Interface) string {
	t.Helper()
	ctx := context.Background()
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: uniqueName("t")}}
	if _, err := c.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", ns.Name, err)
	}
	sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	if _, err := c.CoreV1().ServiceAccounts(ns.Name).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ServiceAccount %s/default: %v", ns.Name, err)
	}
	return ns.Name
}

// eventually polls cond every 100ms until it returns nil or timeout passes; then it fails with the
// last error.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %v", what, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
