package controlplane_test

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dralloc/dralloc/fuzz/controlplane"
)

// fakeScript puts scripts/kube-apiserver (the shell script body) in a fresh directory and makes it the
// working directory, so that Start finds it there. The script logs its arguments to calls.log.
func fakeScript(t *testing.T, body string) string {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\necho \"$@\" >>" + filepath.Join(root, "calls.log") + "\n" + body + "\n"
	if err := os.WriteFile(filepath.Join(root, "scripts", "kube-apiserver"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join(root, "scripts"))
	t.Setenv("DRALLOC_APISERVER", "")
	return root
}

func calls(t *testing.T, root string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "calls.log"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		out = append(out, strings.Fields(l)[0]) // the step; its directory differs per run
	}
	return out
}

func TestStartRunsTheStepsAskedAndStopRemovesTheDirectory(t *testing.T) {
	root := fakeScript(t, `case "$1" in start) echo apiVersion: v1 >"$2/kubeconfig";; esac; exit 0`)
	p, err := controlplane.Start(controlplane.Options{Build: true, Scheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p.Kubeconfig); err != nil {
		t.Errorf("kubeconfig: %v", err)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p.Dir); !os.IsNotExist(err) {
		t.Errorf("directory %s left after Stop (%v)", p.Dir, err)
	}
	if got, want := strings.Join(calls(t, root), " "), "build start start-scheduler stop"; got != want {
		t.Errorf("steps %q, want %q", got, want)
	}
}

func TestStartUnavailable(t *testing.T) {
	for _, tc := range []struct{ name, body string }{
		{"not built", `echo "/x/bin/kube-apiserver is not built: run it build" >&2; exit 1`},
		{"no etcd", `echo "etcd is not installed: run it build" >&2; exit 1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := fakeScript(t, tc.body)
			_, err := controlplane.Start(controlplane.Options{})
			if !errors.Is(err, controlplane.ErrUnavailable) {
				t.Fatalf("error %v, want one wrapping ErrUnavailable", err)
			}
			// What start may have left is stopped.
			if got, want := strings.Join(calls(t, root), " "), "start stop"; got != want {
				t.Errorf("steps %q, want %q", got, want)
			}
		})
	}
	t.Run("build fails", func(t *testing.T) {
		fakeScript(t, `[ "$1" = build ] && { echo no compiler; exit 1; }; exit 0`)
		_, err := controlplane.Start(controlplane.Options{Build: true})
		if !errors.Is(err, controlplane.ErrUnavailable) || !strings.Contains(err.Error(), "no compiler") {
			t.Fatalf("error %v, want ErrUnavailable with the build's output", err)
		}
	})
	t.Run("no script", func(t *testing.T) {
		t.Chdir(t.TempDir())
		t.Setenv("DRALLOC_APISERVER", "")
		if _, err := controlplane.Start(controlplane.Options{}); !errors.Is(err, controlplane.ErrUnavailable) {
			t.Fatalf("error %v, want ErrUnavailable", err)
		}
	})
}

// A control plane that is built but does not start is a failure, not a skip.
func TestStartFailureIsNotUnavailable(t *testing.T) {
	root := fakeScript(t, `[ "$1" = start-scheduler ] && { echo scheduler crashed; exit 1; }; exit 0`)
	_, err := controlplane.Start(controlplane.Options{Scheduler: true, DisableAdmission: []string{"TaintNodesByCondition"}})
	if err == nil || errors.Is(err, controlplane.ErrUnavailable) || !strings.Contains(err.Error(), "scheduler crashed") {
		t.Fatalf("error %v, want a failure with the script's output", err)
	}
	if got, want := strings.Join(calls(t, root), " "), "start start-scheduler stop"; got != want {
		t.Errorf("steps %q, want %q", got, want)
	}
}

func TestDisableAdmissionReachesTheScript(t *testing.T) {
	fakeScript(t, `[ "$1" = start ] && [ "$DRALLOC_APISERVER_DISABLE_ADMISSION" != "A,B" ] && { echo "got '$DRALLOC_APISERVER_DISABLE_ADMISSION'"; exit 1; }; exit 0`)
	p, err := controlplane.Start(controlplane.Options{DisableAdmission: []string{"A", "B"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
}

func TestAuthorizationModeReachesTheScript(t *testing.T) {
	fakeScript(t, `[ "$1" = start ] && [ "$DRALLOC_APISERVER_AUTHORIZATION_MODE" != "Node,RBAC" ] && { echo "got '$DRALLOC_APISERVER_AUTHORIZATION_MODE'"; exit 1; }; exit 0`)
	p, err := controlplane.Start(controlplane.Options{AuthorizationMode: "Node,RBAC"})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
}

func TestAuditReachesTheScript(t *testing.T) {
	fakeScript(t, `[ "$1" = start ] && { [ "$DRALLOC_APISERVER_AUDIT" = 1 ] || { echo "got '$DRALLOC_APISERVER_AUDIT'"; exit 1; }; echo '{}' >"$2/audit.log"; }; exit 0`)
	p, err := controlplane.Start(controlplane.Options{Audit: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if want := filepath.Join(p.Dir, "audit.log"); p.AuditLog != want {
		t.Errorf("AuditLog %q, want %q", p.AuditLog, want)
	}
	if _, err := os.Stat(p.AuditLog); err != nil {
		t.Errorf("the script's audit log: %v", err)
	}
}

// A port that another process takes between the script's check and the bind (tests start planes side by side)
// is retried on fresh ports: the first port each step hands out here is one this test listens on, so without
// the retry both start and start-scheduler fail.
func TestStartRetriesAPortTakenBeforeTheBind(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	t.Setenv("DRALLOC_APISERVER_FIRST_PORT", strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	p, err := controlplane.Start(controlplane.Options{Scheduler: true, DisableAdmission: []string{"TaintNodesByCondition"}})
	if errors.Is(err, controlplane.ErrUnavailable) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := p.Stop(); err != nil {
			t.Error(err)
		}
	}()
	for _, c := range []string{"etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager"} {
		if pid, ok := p.Running(c); !ok {
			t.Errorf("%s (pid %q) is not running after the retried start", c, pid)
		}
	}
}
