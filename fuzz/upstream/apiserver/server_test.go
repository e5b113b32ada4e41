package apiserver_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
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
	if os.Getenv("DRALLOC_APISERVER") == "skip" {
		server.skip = "DRALLOC_APISERVER=skip"
		return m.Run()
	}
	script, err := findScript()
	if err != nil {
		server.skip = err.Error()
		return m.Run()
	}
	if out, err := runScript(buildTimeout(), script, "build"); err != nil {
		server.skip = fmt.Sprintf("%s build failed (%v); its output ends:\n%s", script, err, tail(out, 20))
		fmt.Fprintln(os.Stderr, "apiserver tests skip:", server.skip)
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "dralloc-apiserver-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	out, err := runScript(5*time.Minute, script, "start", dir)
	defer func() {
		if out, err := runScript(time.Minute, script, "stop", dir); err != nil {
			fmt.Fprintf(os.Stderr, "%s stop: %v\n%s", script, err, out)
		}
	}()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s start: %v\n%s", script, err, out)
		return 1
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
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

// findScript finds scripts/kube-apiserver in the repository above the working directory.
func findScript() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "scripts", "kube-apiserver")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("scripts/kube-apiserver not found above the working directory")
		}
		dir = parent
	}
}

// buildTimeout leaves the build two minutes less than the test binary's timeout, so that a cold build that
// does not finish in time is a skip with its reason rather than a panic; the Go build cache keeps what was
// compiled, and `scripts/kube-apiserver build` run beforehand (as CI does) finishes it.
func buildTimeout() time.Duration {
	const spare = 2 * time.Minute
	f := flag.Lookup("test.timeout")
	if f == nil {
		return time.Hour
	}
	d, err := time.ParseDuration(f.Value.String())
	if err != nil || d <= 0 {
		return time.Hour
	}
	return max(d-spare, time.Minute)
}

func runScript(timeout time.Duration, script string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, script, args...)
	cmd.Env = append(os.Environ(), "DRALLOC_APISERVER_OWNER="+strconv.Itoa(os.Getpid()))
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("%w after %v", ctx.Err(), timeout)
	}
	return out, err
}

func tail(out []byte, lines int) string {
	l := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	return strings.Join(l[max(0, len(l)-lines):], "\n")
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
