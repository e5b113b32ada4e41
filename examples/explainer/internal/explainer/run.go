package explainer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// RunOptions configure [Run].
type RunOptions struct {
	Controller Config
	// Listener serves /metrics, /healthz and /readyz; nil serves nothing.
	Listener net.Listener
	// LeaderElection, when set, makes the replica that holds the Lease Namespace/Name the only one
	// that explains and writes; the others keep their informers warm.
	LeaderElection bool
	// Namespace and Name of the Lease; with LeaderElection, Namespace is required ([LeaseNamespace]
	// finds the pod's own).
	Namespace, Name string
	// Identity is this replica's name in the Lease (its pod name).
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod: 0 means 15s, 10s and 2s, as kube-scheduler.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// Run starts the informers and the endpoints, then explains pods (after winning the Lease, with
// LeaderElection) until ctx ends. /readyz and the gauge dralloc_explainer_ready say whether the
// informers list and, with LeaderElection, whether the Lease can be read and written. It returns nil when ctx ended, an error when the replica lost the
// Lease (the process should exit, as kube-scheduler does, and start again as a follower) or could
// not start.
func Run(ctx context.Context, logger klog.Logger, opts RunOptions) error {
	ctx, cancel := context.WithCancel(ctx)
	ctrl, err := NewController(logger, opts.Controller)
	if err != nil {
		cancel()
		return err
	}
	// The informers end with ctx, and Shutdown waits for them: ctx must end first, also when Run
	// returns because the Lease was lost while the caller's context goes on.
	defer func() {
		cancel()
		ctrl.Shutdown()
	}()

	checks := []Check{{Name: "informers", Err: ctrl.Listing}}
	var lock *watchedLock
	if opts.LeaderElection {
		if opts.Namespace == "" {
			return errors.New("leader election: the Lease's namespace is empty")
		}
		l, err := resourcelock.New(resourcelock.LeasesResourceLock, opts.Namespace, opts.Name,
			opts.Controller.Client.CoreV1(), opts.Controller.Client.CoordinationV1(),
			resourcelock.ResourceLockConfig{Identity: opts.Identity})
		if err != nil {
			return fmt.Errorf("lease %s/%s: %w", opts.Namespace, opts.Name, err)
		}
		lock = newWatchedLock(l)
		checks = append(checks, Check{Name: "lease", Err: lock.Err})
	}
	reg := prometheus.NewRegistry()
	if err := ctrl.Metrics().Register(reg); err != nil {
		return err
	}
	for _, g := range NewReadyGauges(checks) {
		if err := reg.Register(g); err != nil {
			return err
		}
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	var watchdog *leaderelection.HealthzAdaptor
	if opts.LeaderElection {
		watchdog = leaderelection.NewLeaderHealthzAdaptor(20 * time.Second)
	}
	if opts.Listener != nil {
		srv := &http.Server{Handler: Handler(reg, checks, watchdog), ReadHeaderTimeout: 10 * time.Second}
		// The address as bound: with --listen 127.0.0.1:0 the log is where the port chosen is read.
		logger.Info("Serving metrics and health", "address", opts.Listener.Addr().String())
		go func() {
			if err := srv.Serve(opts.Listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
				logger.Error(err, "Serving metrics and health failed")
				cancel()
			}
		}()
		defer func() {
			sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer scancel()
			_ = srv.Shutdown(sctx)
		}()
	}
	if err := ctrl.Start(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	logger.Info("Informers synced")
	if !opts.LeaderElection {
		ctrl.Metrics().SetLeading(true)
		defer ctrl.Metrics().SetLeading(false)
		ctrl.Run(ctx)
		return nil
	}
	lost := false
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   orDefault(opts.LeaseDuration, 15*time.Second),
		RenewDeadline:   orDefault(opts.RenewDeadline, 10*time.Second),
		RetryPeriod:     orDefault(opts.RetryPeriod, 2*time.Second),
		ReleaseOnCancel: true,
		Name:            opts.Name,
		WatchDog:        watchdog,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				logger.Info("Leading", "lease", opts.Namespace+"/"+opts.Name, "identity", opts.Identity)
				ctrl.Metrics().SetLeading(true)
				ctrl.Run(ctx)
			},
			OnStoppedLeading: func() {
				ctrl.Metrics().SetLeading(false)
				lost = ctx.Err() == nil
			},
			OnNewLeader: func(id string) { logger.Info("Leader", "identity", id) },
		},
	})
	if err != nil {
		return err
	}
	le.Run(ctx)
	if lost {
		return fmt.Errorf("lost lease %s/%s", opts.Namespace, opts.Name)
	}
	return nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Handler serves /metrics from reg, /readyz (200 while every check holds, else 503 with the failures)
// and /healthz (200 unless the leader election watchdog, when there is one, says this replica holds a
// Lease it stopped renewing).
func Handler(reg *prometheus.Registry, checks []Check, watchdog *leaderelection.HealthzAdaptor) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if watchdog != nil {
			if err := watchdog.Check(r); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		_, _ = w.Write([]byte("ok"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		var failed []string
		for _, c := range checks {
			if err := c.Err(); err != nil {
				failed = append(failed, c.Name+": "+err.Error())
			}
		}
		if len(failed) > 0 {
			http.Error(w, strings.Join(failed, "\n"), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	return mux
}
