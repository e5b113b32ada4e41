package apiserver_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/dralloc/dralloc/fuzz/controlplane"
)

// server is the kube-apiserver this test binary runs, or why it does not run one.
var server struct {
	client kubernetes.Interface
	skip   string
}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runWithServer(m))
}

// runWithServer builds and starts kube-apiserver, runs the tests and stops it. A build that is impossible makes
// every test skip; a server that is built but does not start is a failure.
func runWithServer(m *testing.M) int {
	plane, err := controlplane.Start(controlplane.Options{Build: true, DirPrefix: "dralloc-apiserver-"})
	if errors.Is(err, controlplane.ErrUnavailable) {
		server.skip = err.Error()
		fmt.Fprintln(os.Stderr, "apiserver tests skip:", server.skip)
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
	return m.Run()
}

// client returns the server's clientset, or skips the test when there is no server.
func client(t *testing.T) kubernetes.Interface {
	t.Helper()
	if server.client == nil {
		t.Skip("no kube-apiserver: " + server.skip)
	}
	return server.client
}

var unique atomic.Int64

// uniqueName returns a fresh DNS label starting with base.
func uniqueName(base string) string {
	return fmt.Sprintf("%s-%d", base, unique.Add(1))
}

// adminAccessLabel is the namespace label without which the API server rejects claims that ask for admin
// access (as kube-apiserver's ResourceClaim strategy: DRAAdminAccess requires it on the claim's namespace).
const adminAccessLabel = "resource.kubernetes.io/admin-access"

// fataler is what the helpers need of a *testing.T or a *rapid.T.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// namespace creates a fresh namespace, labelled for admin access.
func namespace(t fataler, c kubernetes.Interface) string {
	t.Helper()
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: uniqueName("t"), Labels: map[string]string{adminAccessLabel: "true"}}}
	if _, err := c.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", ns.Name, err)
	}
	return ns.Name
}

// podNamespace is namespace with the ServiceAccount "default" that kube-apiserver's ServiceAccount admission
// plugin gives every pod (the controller manager that creates it in a cluster does not run here).
func podNamespace(t fataler, c kubernetes.Interface) string {
	t.Helper()
	ns := namespace(t, c)
	sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	if _, err := c.CoreV1().ServiceAccounts(ns).Create(context.Background(), sa, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ServiceAccount %s/default: %v", ns, err)
	}
	return ns
}
