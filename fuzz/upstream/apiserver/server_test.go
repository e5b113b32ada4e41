package apiserver_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/dralloc/dralloc/fuzz/controlplane"
	"github.com/dralloc/dralloc/fuzz/upstream/internal/livetest"
)

// server is the kube-apiserver this test binary runs, or why it does not run one.
var server = &livetest.Plane{Name: "kube-apiserver", Options: controlplane.Options{Build: true, DirPrefix: "dralloc-apiserver-"}}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(server.Run(m))
}

// client returns the server's clientset, or skips the test when there is no server.
func client(t *testing.T) kubernetes.Interface {
	t.Helper()
	return server.Client(t)
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
