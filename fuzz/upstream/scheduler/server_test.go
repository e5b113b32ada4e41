package scheduler_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// server is the control plane this test binary runs, or why it does not run one.
var server struct {
	client kubernetes.Interface
	dir    string // the logs of every component
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
	if os.Getenv("DRALLOC_APISERVER") == "skip" {
		server.skip = "DRALLOC_APISERVER=skip"
		return m.Run()
	}
	script, err := findScript()
	if err != nil {
		server.skip = err.Error()
		return m.Run()
	}
	if out, err := runScript(buildTimeout(), script, nil, "build"); err != nil {
		server.skip = fmt.Sprintf("%s build failed (%v); its output ends:\n%s", script, err, tail(out, 20))
		fmt.Fprintln(os.Stderr, "scheduler tests skip:", server.skip)
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "dralloc-scheduler-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	server.dir = dir
	defer func() {
		if out, err := runScript(time.Minute, script, nil, "stop", dir); err != nil {
			fmt.Fprintf(os.Stderr, "%s stop: %v\n%s", script, err, out)
		}
	}()
	// No kubelet lifts the node.kubernetes.io/not-ready taint this admission plugin puts on every new Node.
	env := []string{"DRALLOC_APISERVER_DISABLE_ADMISSION=TaintNodesByCondition"}
	if out, err := runScript(5*time.Minute, script, env, "start", dir); err != nil {
		fmt.Fprintf(os.Stderr, "%s start: %v\n%s", script, err, out)
		return 1
	}
	if out, err := runScript(5*time.Minute, script, nil, "start-scheduler", dir); err != nil {
		fmt.Fprintf(os.Stderr, "%s start-scheduler: %v\n%s", script, err, out)
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
	code := m.Run()
	if code != 0 {
		for _, name := range []string{"kube-scheduler.log", "kube-controller-manager.log"} {
			out, _ := os.ReadFile(filepath.Join(dir, name))
			fmt.Fprintf(os.Stderr, "last lines of %s:\n%s\n", name, tail(out, 30))
		}
	}
	return code
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

// buildTimeout leaves the build three minutes less than the test binary's timeout, so that a cold build that
// does not finish in time is a skip with its reason rather than a panic; the Go build cache keeps what was
// compiled, and `scripts/kube-apiserver build` run beforehand (as CI does) finishes it.
func buildTimeout() time.Duration {
	const spare = 3 * time.Minute
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

func runScript(timeout time.Duration, script string, env []string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, script, args...)
	cmd.Env = append(os.Environ(), "DRALLOC_APISERVER_OWNER="+strconv.Itoa(os.Getpid()))
	cmd.Env = append(cmd.Env, env...)
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

// client returns the control plane's clientset, or skips the test when there is none.
func client(t *testing.T) kubernetes.Interface {
	t.Helper()
	if server.client == nil {
		t.Skip("no control plane: " + server.skip)
	}
	return server.client
}
