// Command explainer is a controller that explains, on every pending pod that kube-scheduler marked
// unschedulable and that uses Dynamic Resource Allocation, why it fits on no node: a Warning Event
// with reason DRAUnschedulable, computed by dralloc from shared informers. See README.md.
//
// Imports: its internal/explainer (which builds on allocator/feed and allocator/pods), client-go and klog.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/dralloc/dralloc/examples/explainer/internal/explainer"
)

func main() {
	klog.InitFlags(nil)
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file; empty means in-cluster configuration")
	listen := flag.String("listen", ":8080", "address of /metrics, /healthz and /readyz")
	leaderElect := flag.Bool("leader-elect", true, "hold a Lease before explaining, for several replicas")
	leaseNS := flag.String("lease-namespace", "", "namespace of the Lease; empty means the pod's own (POD_NAMESPACE, or its ServiceAccount's namespace); required out of cluster with --leader-elect")
	leaseName := flag.String("lease-name", "dralloc-explainer", "name of the Lease")
	// Named and defaulted as kube-scheduler's: a replica that stops renewing is replaced after
	// lease-duration, and gives up leading when it cannot renew within renew-deadline.
	leaseDuration := flag.Duration("leader-elect-lease-duration", 15*time.Second, "how long followers wait after the last renewal before taking the Lease")
	renewDeadline := flag.Duration("leader-elect-renew-deadline", 10*time.Second, "how long the leader retries renewing before it stops leading; less than the lease duration")
	retryPeriod := flag.Duration("leader-elect-retry-period", 2*time.Second, "how long replicas wait between tries to take or renew the Lease")
	interval := flag.Duration("min-interval", time.Minute, "least time between two Events on one pod")
	condition := flag.Bool("pod-condition", false, "also write the pod condition "+string(explainer.ConditionType))
	workers := flag.Int("workers", 2, "pods explained at once")
	qps := flag.Float64("kube-api-qps", 20, "client QPS against the API server")
	// Off by default, as kube-scheduler: it allocates a pending pod's claims, which quota admission let
	// in when they were created, whatever the quota says now (README.md, "Quota").
	enforceQuota := flag.Bool("enforce-quota", false, "explain within the devices' quota the namespaces' ResourceQuotas declare (needs list and watch on resourcequotas)")
	flag.Parse()
	logger := klog.Background()

	lease := leaseTimings{*leaseDuration, *renewDeadline, *retryPeriod}
	if err := lease.validate(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := run(logger, *kubeconfig, *listen, *leaderElect, *leaseNS, *leaseName, lease, *interval, *condition, *enforceQuota, *workers, float32(*qps)); err != nil {
		logger.Error(err, "Explainer stopped")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

// leaseTimings are the leader election's durations.
type leaseTimings struct{ duration, renewDeadline, retryPeriod time.Duration }

// validate refuses what client-go's leader election refuses (leaderelection.NewLeaderElector), with
// the flags' names, before anything starts.
func (l leaseTimings) validate() error {
	switch {
	case l.duration <= 0 || l.renewDeadline <= 0 || l.retryPeriod <= 0:
		return fmt.Errorf("--leader-elect-lease-duration (%v), --leader-elect-renew-deadline (%v) and --leader-elect-retry-period (%v) must be positive", l.duration, l.renewDeadline, l.retryPeriod)
	case l.duration <= l.renewDeadline:
		return fmt.Errorf("--leader-elect-lease-duration (%v) must be greater than --leader-elect-renew-deadline (%v)", l.duration, l.renewDeadline)
	case float64(l.renewDeadline) <= 1.2*float64(l.retryPeriod):
		return fmt.Errorf("--leader-elect-renew-deadline (%v) must be greater than 1.2 times --leader-elect-retry-period (%v)", l.renewDeadline, l.retryPeriod)
	}
	return nil
}

func run(logger klog.Logger, kubeconfig, listen string, leaderElect bool, leaseNS, leaseName string, lease leaseTimings, interval time.Duration, condition, enforceQuota bool, workers int, qps float32) error {
	var cfg *rest.Config
	var err error
	if kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return fmt.Errorf("client configuration: %w", err)
	}
	cfg.QPS, cfg.Burst = qps, int(2*qps)
	cfg.UserAgent = explainer.Component
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	identity := os.Getenv("POD_NAME")
	if identity == "" {
		if identity, err = os.Hostname(); err != nil {
			return err
		}
	}
	if leaderElect {
		if leaseNS, err = explainer.LeaseNamespace(leaseNS, os.Getenv("POD_NAMESPACE"), explainer.ServiceAccountNamespaceFile); err != nil {
			return err
		}
	}
	lis, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return explainer.Run(ctx, logger, explainer.RunOptions{
		Controller: explainer.Config{
			Client:       client,
			Workers:      workers,
			Recorder:     explainer.RecorderOptions{MinInterval: interval, Condition: condition, Instance: identity},
			EnforceQuota: enforceQuota,
		},
		Listener:       lis,
		LeaderElection: leaderElect,
		Namespace:      leaseNS,
		Name:           leaseName,
		Identity:       identity,
		LeaseDuration:  lease.duration,
		RenewDeadline:  lease.renewDeadline,
		RetryPeriod:    lease.retryPeriod,
	})
}
