package explainer

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
)

func TestLeaseNamespace(t *testing.T) {
	dir := t.TempDir()
	saFile := filepath.Join(dir, "namespace")
	if err := os.WriteFile(saFile, []byte("dralloc-system\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	for _, tc := range []struct {
		name, flag, env, file, want, wantErr string
	}{
		{name: "the flag wins", flag: "ops", env: "team", file: saFile, want: "ops"},
		{name: "POD_NAMESPACE from the downward API", env: "team", file: saFile, want: "team"},
		{name: "the ServiceAccount's namespace in cluster", file: saFile, want: "dralloc-system"},
		{name: "out of cluster: refused, naming the flag", file: missing, wantErr: "set --lease-namespace"},
		{name: "an empty namespace file is none", file: empty, wantErr: "set --lease-namespace"},
	} {
		got, err := LeaseNamespace(tc.flag, tc.env, tc.file)
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: %q, %v; want an error containing %q", tc.name, got, err, tc.wantErr)
		case tc.wantErr == "" && (err != nil || got != tc.want):
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

// readiness starts Run on the client under leader election in namespace ns and returns the base URL of
// its endpoints.
func readiness(t *testing.T, c *fake.Clientset, ns string) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, ktesting.NewLogger(t, ktesting.NewConfig()), RunOptions{
			Controller: Config{Client: c}, Listener: lis,
			LeaderElection: true, Namespace: ns, Name: "explainer", Identity: "replica-a",
			LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 100 * time.Millisecond,
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Errorf("Run did not return within 30s of its context's end")
		}
	})
	return "http://" + lis.Addr().String()
}

// notReady checks that /readyz fails naming want, and the gauges.
func notReady(base, want string, gauge map[string]string) func() error {
	return func() error {
		var body string
		err := get(base+"/readyz", &body)
		if err == nil || !strings.Contains(err.Error(), want) {
			return fmt.Errorf("/readyz: %v; want a failure containing %q", err, want)
		}
		return gauges(base, gauge)
	}
}

func ready(base string) func() error {
	return func() error {
		if err := get(base+"/readyz", nil); err != nil {
			return err
		}
		return gauges(base, map[string]string{"informers": "1", "lease": "1"})
	}
}

func gauges(base string, want map[string]string) error {
	var metrics string
	if err := get(base+"/metrics", &metrics); err != nil {
		return err
	}
	for check, v := range want {
		if line := `dralloc_explainer_ready{check="` + check + `"} ` + v + "\n"; !strings.Contains(metrics, line) {
			return fmt.Errorf("/metrics lacks %q", strings.TrimSpace(line))
		}
	}
	return nil
}

// TestNotReadyWhileTheLeaseIsRefused: a replica whose role may not read or write the Lease (the namespace
// is not its own) never leads; it is not ready, and says why, until the Lease can be written.
func TestNotReadyWhileTheLeaseIsRefused(t *testing.T) {
	c := fake.NewClientset()
	var refuse atomic.Bool
	refuse.Store(true)
	for _, verb := range []string{"get", "create", "update"} {
		c.PrependReactor(verb, "leases", func(action clienttesting.Action) (bool, runtime.Object, error) {
			if refuse.Load() {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "explainer",
					fmt.Errorf("User \"system:serviceaccount:dralloc-system:dralloc-explainer\" cannot %s resource \"leases\" in namespace \"default\"", verb))
			}
			return false, nil, nil
		})
	}
	base := readiness(t, c, "default")
	eventually(t, 30*time.Second, "not ready while the Lease is refused", notReady(base, "forbidden", map[string]string{"lease": "0", "informers": "1"}))
	refuse.Store(false)
	eventually(t, 30*time.Second, "ready once the Lease can be written", ready(base))
}

// TestNotReadyWhileAnInformerCannotList: a replica whose role may not list a kind it informs is not
// ready, and says which kind, until the list succeeds (it tries for the Lease only then).
func TestNotReadyWhileAnInformerCannotList(t *testing.T) {
	c := fake.NewClientset()
	var refuse atomic.Bool
	refuse.Store(true)
	c.PrependReactor("list", "resourceslices", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if refuse.Load() {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "resource.k8s.io", Resource: "resourceslices"}, "",
				fmt.Errorf("cannot list resource \"resourceslices\""))
		}
		return false, nil, nil
	})
	base := readiness(t, c, "ns")
	eventually(t, 30*time.Second, "not ready while resourceslices cannot be listed", notReady(base, "ResourceSlice", map[string]string{"informers": "0"}))
	refuse.Store(false)
	eventually(t, 60*time.Second, "ready once the list succeeds", ready(base))
}
