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
	interval := flag.Duration("min-interval", time.Minute, "least time between two Events on one pod")
	condition := flag.Bool("pod-condition", false, "also write the pod condition "+string(explainer.ConditionType))
	workers := flag.Int("workers", 2, "pods explained at once")
	qps := flag.Float64("kube-api-qps", 20, "client QPS against the API server")
	flag.Parse()
	logger := klog.Background()

	if err := run(logger, *kubeconfig, *listen, *leaderElect, *leaseNS, *leaseName, *interval, *condition, *workers, float32(*qps)); err != nil {
		logger.Error(err, "Explainer stopped")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

func run(logger klog.Logger, kubeconfig, listen string, leaderElect bool, leaseNS, leaseName string, interval time.Duration, condition bool, workers int, qps float32) error {
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
			Client:   client,
			Workers:  workers,
			Recorder: explainer.RecorderOptions{MinInterval: interval, Condition: condition, Instance: identity},
		},
		Listener:       lis,
		LeaderElection: leaderElect,
		Namespace:      leaseNS,
		Name:           leaseName,
		Identity:       identity,
	})
}
