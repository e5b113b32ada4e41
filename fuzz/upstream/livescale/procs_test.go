package livescale

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dralloc/dralloc/fuzz/controlplane"
)

// buildCommands builds the explainer and kubectl-dra from this repository's go.work into dir.
func buildCommands(dir string) (explainer, kubectlDRA string, err error) {
	root, err := repoRoot()
	if err != nil {
		return "", "", err
	}
	explainer, kubectlDRA = filepath.Join(dir, "explainer"), filepath.Join(dir, "kubectl-dra")
	for out, pkg := range map[string]string{explainer: "./examples/explainer", kubectlDRA: "./examples/dractl/kubectl-dra"} {
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
		}
	}
	return explainer, kubectlDRA, nil
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.work not found above the working directory")
		}
		dir = parent
	}
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// procCPU is a process's user and system time so far, from /proc/PID/stat.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command name (which may hold spaces) start after the last ')'.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	const ticks = 100 // USER_HZ on Linux
	return time.Duration(ut+st) * time.Second / ticks, nil
}

// procMemory is a process's resident memory now and at its peak, in bytes, from /proc/PID/status.
func procMemory(pid int) (rss, peak uint64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseUint(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb << 10
		case "VmHWM:":
			peak = kb << 10
		}
	}
	return rss, peak, nil
}

// scrape reads the explainer's /metrics and sums each metric's samples whose labels contain every
// filter given for it ("" sums all).
func scrape(ctx context.Context, addr string, filters map[string]string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			continue
		}
		series := line[:sp]
		name, labels, _ := strings.Cut(series, "{")
		filter, ok := filters[name]
		if !ok || !strings.Contains(labels, filter) {
			continue
		}
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			continue
		}
		out[name] += v
	}
	return out, sc.Err()
}

// explainerMetrics are the series the harness reads.
var explainerMetrics = map[string]string{
	"dralloc_explainer_pending_pods":          "",
	"dralloc_explainer_records_total":         "",
	"rest_client_requests_total":              "",
	"workqueue_depth":                         `name="dralloc-explainer"`,
	"dralloc_explainer_explain_seconds_sum":   "",
	"dralloc_explainer_explain_seconds_count": "",
}

// explainerResult is what measureExplainer measured.
type explainerResult struct {
	allExplained  time.Duration // from the start to every pending pod explained
	explainedCPU  time.Duration // CPU to get there
	rss, peak     uint64        // resident memory then, and its peak
	idleCPUPerMin time.Duration // CPU per minute with nothing changing
	callsPerMin   float64       // API requests per minute with nothing changing
	changes       []changeResult
	partial       bool          // not every pod was explained within phaseBudget
	explained     float64       // pending pods explained
	initialCalls  float64       // API requests to get every pod explained
	explainMean   time.Duration // the mean time of one explanation
	idleWindow    time.Duration
}

// phaseBudget bounds the explainer's first pass and each kubectl-dra command: on the busy 2-core
// machine a large size would otherwise run for hours; what was done by then is reported.
// DRALLOC_LIVE_SCALE_BUDGET (budgetEnv) sets another.
var phaseBudget = 4 * time.Minute

// change is one change of the cluster made while the explainer is quiet.
type change struct {
	name string
	make func(context.Context) error
}

// changeResult is what the explainer did after a change.
type changeResult struct {
	name    string
	records float64       // pods explained again
	cpu     time.Duration // CPU of the reconciliation, idle CPU subtracted
	window  time.Duration // from the change to the queue quiet again
	cut     bool          // the queue was not quiet within phaseBudget
}

// measureExplainer runs the explainer on the plane until every pending pod is explained, then
// measures it idle, then after one claim changes.
func measureExplainer(ctx context.Context, bin string, plane *controlplane.Plane, s shape, changes []change, logf func(string, ...any)) (explainerResult, error) {
	var r explainerResult
	addr, err := freeAddr()
	if err != nil {
		return r, err
	}
	logFile, err := os.Create(filepath.Join(plane.Dir, "explainer.log"))
	if err != nil {
		return r, err
	}
	defer logFile.Close()
	cmd := exec.Command(bin, "--kubeconfig", plane.Kubeconfig, "--listen", addr, "--leader-elect=false")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return r, err
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	pid := cmd.Process.Pid
	fail := func(err error) (explainerResult, error) {
		b, _ := os.ReadFile(logFile.Name())
		return r, fmt.Errorf("%w; the explainer's log ends:\n%s", err, controlplane.Tail(b, 20))
	}
	// Every pending pod explained: each is counted under its dominant reason.
	var m map[string]float64
	for {
		if ctx.Err() != nil {
			return fail(fmt.Errorf("not every pending pod explained: %w (last metrics %v)", ctx.Err(), m))
		}
		time.Sleep(2 * time.Second)
		if m, err = scrape(ctx, addr, explainerMetrics); err != nil {
			continue // not serving yet
		}
		if int(m["dralloc_explainer_pending_pods"]) >= s.pending {
			break
		}
		if time.Since(start) > phaseBudget {
			// What it did in the time: the rate says how long the rest would take.
			r.partial, r.explained = true, m["dralloc_explainer_pending_pods"]
			r.allExplained = time.Since(start)
			r.explainedCPU, _ = procCPU(pid)
			r.rss, r.peak, _ = procMemory(pid)
			if n := m["dralloc_explainer_explain_seconds_count"]; n > 0 {
				r.explainMean = time.Duration(m["dralloc_explainer_explain_seconds_sum"] / n * float64(time.Second))
			}
			return r, nil
		}
	}
	r.explained = m["dralloc_explainer_pending_pods"]
	r.allExplained = time.Since(start)
	r.initialCalls = m["rest_client_requests_total"]
	if n := m["dralloc_explainer_explain_seconds_count"]; n > 0 {
		r.explainMean = time.Duration(m["dralloc_explainer_explain_seconds_sum"] / n * float64(time.Second))
	}
	if r.explainedCPU, err = procCPU(pid); err != nil {
		return fail(err)
	}
	if r.rss, r.peak, err = procMemory(pid); err != nil {
		return fail(err)
	}
	logf("explainer: every pending pod explained after %v", r.allExplained)

	// Quiet: the queue drains (the Requeue pass after the last informer events included).
	// Past phaseBudget it returns the metrics then, with cut set.
	cut := false
	quiet := func() (map[string]float64, error) {
		var last float64 = -1
		begun := time.Now()
		for ctx.Err() == nil {
			time.Sleep(6 * time.Second)
			m, err := scrape(ctx, addr, explainerMetrics)
			if err != nil {
				return nil, err
			}
			if m["workqueue_depth"] == 0 && m["dralloc_explainer_records_total"] == last {
				return m, nil
			}
			if time.Since(begun) > phaseBudget {
				cut = true
				return m, nil
			}
			last = m["dralloc_explainer_records_total"]
		}
		return nil, ctx.Err()
	}
	m0, err := quiet()
	if err != nil {
		return fail(err)
	}
	cpu0, _ := procCPU(pid)
	r.idleWindow = 30 * time.Second
	t0 := time.Now()
	time.Sleep(r.idleWindow)
	m1, err := scrape(ctx, addr, explainerMetrics)
	if err != nil {
		return fail(err)
	}
	cpu1, _ := procCPU(pid)
	idle := time.Since(t0)
	r.idleCPUPerMin = time.Duration(float64(cpu1-cpu0) * float64(time.Minute) / float64(idle))
	r.callsPerMin = (m1["rest_client_requests_total"] - m0["rest_client_requests_total"]) * float64(time.Minute) / float64(idle)

	// Each change, one after the other, from a quiet explainer.
	for _, ch := range changes {
		before, err := scrape(ctx, addr, explainerMetrics)
		if err != nil {
			return fail(err)
		}
		cpuBefore, _ := procCPU(pid)
		t0 := time.Now()
		cut = false
		if err := ch.make(ctx); err != nil {
			return fail(fmt.Errorf("%s: %w", ch.name, err))
		}
		after, err := quiet()
		if err != nil {
			return fail(err)
		}
		cpuAfter, _ := procCPU(pid)
		cr := changeResult{name: ch.name, window: time.Since(t0), cut: cut}
		cr.records = after["dralloc_explainer_records_total"] - before["dralloc_explainer_records_total"]
		cr.cpu = max(0, cpuAfter-cpuBefore-time.Duration(float64(r.idleCPUPerMin)*cr.window.Minutes()))
		r.changes = append(r.changes, cr)
	}
	return r, nil
}

// cliResult is one kubectl-dra run.
type cliResult struct {
	wall     time.Duration
	maxRSS   uint64
	outBytes int64
	code     int
	killed   bool // it ran past phaseBudget
}

// runCLI runs kubectl-dra with args against the plane; exit 0 and 1 (fits, does not fit) are answers.
func runCLI(ctx context.Context, bin string, plane *controlplane.Plane, args ...string) (cliResult, error) {
	var r cliResult
	ctx, cancel := context.WithTimeout(ctx, phaseBudget)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(args, "--kubeconfig", plane.Kubeconfig)...)
	var out countWriter
	var errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	r.wall = time.Since(start)
	r.outBytes = int64(out)
	if cmd.ProcessState != nil {
		r.code = cmd.ProcessState.ExitCode()
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			r.maxRSS = uint64(ru.Maxrss) << 10 // KiB on Linux
		}
	}
	var exit *exec.ExitError
	if ctx.Err() != nil {
		r.killed = true
		return r, nil
	}
	if err != nil && !(errors.As(err, &exit) && r.code == 1) {
		return r, fmt.Errorf("kubectl-dra %s: %v\n%s", strings.Join(args, " "), err, controlplane.Tail(errOut.Bytes(), 10))
	}
	return r, nil
}

type countWriter int64

func (w *countWriter) Write(p []byte) (int, error) { *w += countWriter(len(p)); return len(p), nil }

var _ io.Writer = (*countWriter)(nil)
