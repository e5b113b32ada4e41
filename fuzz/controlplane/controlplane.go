package controlplane

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ErrUnavailable is wrapped by the errors of [Start] that mean no control plane can run here, as
// opposed to one that was built and failed to start.
var ErrUnavailable = errors.New("no control plane available")

// Options say what to start.
type Options struct {
	// Build runs `scripts/kube-apiserver build` first (installs etcd, builds the binaries once per
	// version). Without it, binaries that are not built make Start fail with ErrUnavailable.
	Build bool
	// BuildTimeout bounds the build; 0 means [TestTimeout] less three minutes, so that a cold build that
	// cannot finish in a test binary's time is a skip with its reason rather than a panic.
	BuildTimeout time.Duration
	// StartTimeout bounds each start step; 0 means five minutes.
	StartTimeout time.Duration
	// Scheduler also starts kube-scheduler and kube-controller-manager.
	Scheduler bool
	// DisableAdmission names kube-apiserver admission plugins to turn off (the scheduler tests turn off
	// TaintNodesByCondition: no kubelet ever lifts the not-ready taint it puts on every new Node).
	DisableAdmission []string
	// AuthorizationMode replaces kube-apiserver's --authorization-mode AlwaysAllow ("Node,RBAC" for the
	// tests that check what a user or ServiceAccount may do); the plane's kubeconfig stays in
	// system:masters, which RBAC allows everything, impersonation included.
	AuthorizationMode string
	// Audit makes kube-apiserver write an audit log, [Plane.AuditLog]: every request at level Metadata
	// (user, impersonated user, verb, resource, response code), one JSON event per line, for the tests
	// that check that nothing was denied.
	Audit bool
	// DirPrefix names the directory made for the plane's kubeconfig, logs and process ids; "" means
	// "dralloc-controlplane-".
	DirPrefix string
}

// Plane is a running control plane.
type Plane struct {
	// Dir holds the kubeconfig, each component's log (<component>.log) and process id (<component>.pid).
	Dir string
	// Kubeconfig is the path of the kubeconfig for the kube-apiserver.
	Kubeconfig string
	// AuditLog is the path of kube-apiserver's audit log (audit.k8s.io/v1 Events as JSON lines), "" unless
	// Options.Audit asked for one. Stop removes it with Dir.
	AuditLog string
	script   string
}

// Start starts a control plane as opts say. Its error wraps ErrUnavailable where no control plane can
// run on this machine (see the package documentation).
func Start(opts Options) (*Plane, error) {
	if os.Getenv("DRALLOC_APISERVER") == "skip" {
		return nil, fmt.Errorf("%w: DRALLOC_APISERVER=skip", ErrUnavailable)
	}
	script, err := findScript()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if opts.Build {
		timeout := opts.BuildTimeout
		if timeout <= 0 {
			timeout = max(TestTimeout()-3*time.Minute, time.Minute)
		}
		if out, err := run(timeout, script, nil, "build"); err != nil {
			return nil, fmt.Errorf("%w: %s build failed (%v); its output ends:\n%s", ErrUnavailable, script, err, Tail(out, 20))
		}
	}
	prefix := opts.DirPrefix
	if prefix == "" {
		prefix = "dralloc-controlplane-"
	}
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, err
	}
	p := &Plane{Dir: dir, Kubeconfig: filepath.Join(dir, "kubeconfig"), script: script}
	var env []string
	if len(opts.DisableAdmission) > 0 {
		env = append(env, "DRALLOC_APISERVER_DISABLE_ADMISSION="+strings.Join(opts.DisableAdmission, ","))
	}
	if opts.AuthorizationMode != "" {
		env = append(env, "DRALLOC_APISERVER_AUTHORIZATION_MODE="+opts.AuthorizationMode)
	}
	if opts.Audit {
		env = append(env, "DRALLOC_APISERVER_AUDIT=1")
		p.AuditLog = filepath.Join(dir, "audit.log")
	}
	timeout := opts.StartTimeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	steps := []string{"start"}
	if opts.Scheduler {
		steps = append(steps, "start-scheduler")
	}
	for _, step := range steps {
		out, err := run(timeout, script, env, step, dir)
		if err == nil {
			continue
		}
		if stopErr := p.Stop(); stopErr != nil {
			fmt.Fprintln(os.Stderr, stopErr)
		}
		if s := string(out); strings.Contains(s, "is not built") || strings.Contains(s, "etcd is not installed") {
			return nil, fmt.Errorf("%w: %s %s: %s (run `scripts/kube-apiserver build`)", ErrUnavailable, script, step, strings.TrimSpace(s))
		}
		return nil, fmt.Errorf("%s %s: %v\n%s", script, step, err, out)
	}
	return p, nil
}

// Stop stops the processes the script started in p.Dir and removes the directory.
func (p *Plane) Stop() error {
	out, err := run(time.Minute, p.script, nil, "stop", p.Dir)
	os.RemoveAll(p.Dir)
	if err != nil {
		return fmt.Errorf("%s stop: %v\n%s", p.script, err, out)
	}
	return nil
}

// LogTail returns the last lines of a component's log ("kube-apiserver", "etcd", "kube-scheduler",
// "kube-controller-manager"), or "" when it has none.
func (p *Plane) LogTail(component string, lines int) string {
	out, err := os.ReadFile(filepath.Join(p.Dir, component+".log"))
	if err != nil {
		return ""
	}
	return Tail(out, lines)
}

// Running says whether the component's recorded process is alive, and its id.
func (p *Plane) Running(component string) (pid string, running bool) {
	b, _ := os.ReadFile(filepath.Join(p.Dir, component+".pid"))
	pid = strings.TrimSpace(string(b))
	if pid == "" {
		return "", false
	}
	_, err := os.Stat("/proc/" + pid)
	return pid, err == nil
}

// TestTimeout is the -test.timeout of the running test binary, or an hour where there is none.
func TestTimeout() time.Duration {
	f := flag.Lookup("test.timeout")
	if f == nil {
		return time.Hour
	}
	d, err := time.ParseDuration(f.Value.String())
	if err != nil || d <= 0 {
		return time.Hour
	}
	return d
}

// Tail returns the last lines of out.
func Tail(out []byte, lines int) string {
	l := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	return strings.Join(l[max(0, len(l)-lines):], "\n")
}

// findScript finds scripts/kube-apiserver in the repository above the working directory.
func findScript() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for range 64 { // a path has fewer elements than this
		p := filepath.Join(dir, "scripts", "kube-apiserver")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return "", errors.New("scripts/kube-apiserver not found above the working directory")
}

// run runs the script with args; env adds to this process's environment. The script stops what it
// started once this process exits (DRALLOC_APISERVER_OWNER), should the caller never get to Stop.
func run(timeout time.Duration, script string, env []string, args ...string) ([]byte, error) {
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
