package explainer

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// The tests against a real kube-apiserver (scripts/kube-apiserver, built by `scripts/kube-apiserver
// build`, as CI does before the tests) share one server, started by the first test that asks for it
// and stopped by TestMain. A server that is not built makes them skip with the script's reason.
var server struct {
	once   sync.Once
	client kubernetes.Interface
	skip   string // why the tests skip: no server built
	failed string // why they fail: a server built that does not start
	dir    string // the server's directory: its logs and pid files
	stop   func()
}

func TestMain(m *testing.M) {
	code := m.Run()
	if server.stop != nil {
		server.stop()
	}
	if schedServer.stop != nil {
		schedServer.stop()
	}
	os.Exit(code)
}

// liveClient returns a client of the shared kube-apiserver, or skips the test.
func liveClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	server.once.Do(startServer)
	if server.failed != "" {
		t.Fatal(server.failed)
	}
	if server.client == nil {
		t.Skip("no kube-apiserver: " + server.skip)
	}
	// A failing test says whether the server still runs and what it logged last.
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, name := range []string{"kube-apiserver", "etcd"} {
			pid, _ := os.ReadFile(filepath.Join(server.dir, name+".pid"))
			_, err := os.Stat("/proc/" + strings.TrimSpace(string(pid)))
			t.Logf("%s (pid %s) running: %v", name, strings.TrimSpace(string(pid)), err == nil)
			if log, err := os.ReadFile(filepath.Join(server.dir, name+".log")); err == nil {
				lines := strings.Split(strings.TrimRight(string(log), "\n"), "\n")
				t.Logf("%s.log ends:\n%s", name, strings.Join(lines[max(0, len(lines)-15):], "\n"))
			}
		}
	})
	return server.client
}

func startServer() {
	if os.Getenv("DRALLOC_APISERVER") == "skip" {
		server.skip = "DRALLOC_APISERVER=skip"
		return
	}
	script, err := findScript()
	if err != nil {
		server.skip = err.Error()
		return
	}
	dir, err := os.MkdirTemp("", "dralloc-explainer-")
	if err != nil {
		server.skip = err.Error()
		return
	}
	out, err := runScript(4*time.Minute, script, nil, "start", dir)
	stop := func() {
		if out, err := runScript(time.Minute, script, nil, "stop", dir); err != nil {
			fmt.Fprintf(os.Stderr, "%s stop: %v\n%s", script, err, out)
		}
		os.RemoveAll(dir)
	}
	if err != nil {
		stop()
		if strings.Contains(string(out), "is not built") || strings.Contains(string(out), "etcd is not installed") {
			server.skip = fmt.Sprintf("%s start: %s (run `scripts/kube-apiserver build`)", script, strings.TrimSpace(string(out)))
			return
		}
		// Built but not starting is a failure of every live test, with the script's output.
		server.failed = fmt.Sprintf("%s start: %v\n%s", script, err, out)
		return
	}
	server.stop, server.dir = stop, dir
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
	if err != nil {
		server.skip = err.Error()
		return
	}
	cfg.QPS, cfg.Burst = 500, 1000
	if server.client, err = kubernetes.NewForConfig(cfg); err != nil {
		server.skip = err.Error()
	}
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

// runScript runs the script with args; env adds to this process's environment.
func runScript(timeout time.Duration, script string, env []string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, script, args...)
	// The script stops the server once this process exits, should TestMain never get to stop it.
	cmd.Env = append(os.Environ(), "DRALLOC_APISERVER_OWNER="+strconv.Itoa(os.Getpid()))
	cmd.Env = append(cmd.Env, env...)
	cmd.WaitDelay = 10 * time.Second
	return cmd.CombinedOutput()
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
