package explainer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Check is one condition of readiness: Err is nil while it holds.
type Check struct {
	// Name is the check's label value in dralloc_explainer_ready ("informers", "lease").
	Name string
	Err  func() error
}

// NewReadyGauges returns dralloc_explainer_ready{check}: 1 while the check holds, 0 when it does not,
// computed at every scrape, so that an alert needs no probe of /readyz.
func NewReadyGauges(checks []Check) []prometheus.Collector {
	out := make([]prometheus.Collector, len(checks))
	for i, c := range checks {
		out[i] = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "dralloc_explainer_ready",
			Help:        "Whether the explainer can do its work, by check: informers (every informer listed and lists), lease (the Lease can be read and written).",
			ConstLabels: prometheus.Labels{"check": c.Name},
		}, func() float64 {
			if c.Err() != nil {
				return 0
			}
			return 1
		})
	}
	return out
}

// ServiceAccountNamespaceFile is where a pod finds its own namespace, mounted with its ServiceAccount
// token.
const ServiceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// LeaseNamespace is the namespace of the Lease: the flag's value when set, else the pod's own namespace,
// from POD_NAMESPACE (podNamespace, set by the downward API) or from the ServiceAccount's namespace file
// (saFile). Out of cluster with neither, it is an error naming the flag: a namespace picked by default
// (such as "default") is one the explainer's role may not write Leases in, and it would wait there for
// a Lease it never gets, explaining nothing.
func LeaseNamespace(flagValue, podNamespace, saFile string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if podNamespace != "" {
		return podNamespace, nil
	}
	b, err := os.ReadFile(saFile)
	if err == nil {
		if ns := strings.TrimSpace(string(b)); ns != "" {
			return ns, nil
		}
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("namespace of the Lease: read %s: %w", saFile, err)
	}
	return "", errors.New("namespace of the Lease unknown: not running in a pod (no POD_NAMESPACE, no " + saFile +
		"); set --lease-namespace, or --leader-elect=false")
}

// watchedLock is a Lease lock that remembers whether the last read or write of the Lease failed: a
// replica that cannot read or write its Lease never leads, and is not ready.
type watchedLock struct {
	resourcelock.Interface
	mu  sync.Mutex
	err error
}

func newWatchedLock(l resourcelock.Interface) *watchedLock {
	return &watchedLock{Interface: l, err: errors.New("lease " + l.Describe() + " not tried yet")}
}

func (l *watchedLock) set(what string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.err = fmt.Errorf("%s lease %s: %w", what, l.Describe(), err)
		return
	}
	l.err = nil
}

// Err is the last failure to read or write the Lease; nil once a read or write succeeded after it.
func (l *watchedLock) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

func (l *watchedLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec, raw, err := l.Interface.Get(ctx)
	// A Lease not created yet is no failure: the elector creates it next.
	if !apierrors.IsNotFound(err) {
		l.set("get", err)
	}
	return rec, raw, err
}

func (l *watchedLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Create(ctx, ler)
	l.set("create", err)
	return err
}

func (l *watchedLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Update(ctx, ler)
	l.set("update", err)
	return err
}

// listWatch follows one informer's list and watch errors. An error that client-go's own handler treats
// as the normal end of a watch (expired, EOF) is none; any other makes the informer failing until it
// synced again, which moves its last synced resourceVersion on.
type listWatch struct {
	inf cache.SharedIndexInformer
	mu  sync.Mutex
	err error
	rv  string // the informer's last synced resourceVersion when err happened
}

func watchInformer(inf cache.SharedIndexInformer) (*listWatch, error) {
	lw := &listWatch{inf: inf}
	err := inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		cache.DefaultWatchErrorHandler(ctx, r, err) // its logs
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return
		}
		lw.mu.Lock()
		defer lw.mu.Unlock()
		lw.err = fmt.Errorf("list and watch %s: %w", r.TypeDescription(), err)
		lw.rv = inf.LastSyncResourceVersion()
	})
	return lw, err
}

// Err is the informer's last error while it has not synced since.
func (lw *listWatch) Err() error {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.err != nil && lw.inf.LastSyncResourceVersion() == lw.rv {
		return lw.err
	}
	lw.err = nil
	return nil
}
