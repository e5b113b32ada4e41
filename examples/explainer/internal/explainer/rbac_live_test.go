package explainer

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2/ktesting"
	"sigs.k8s.io/kustomize/api/krusty"

	"github.com/dralloc/dralloc/fuzz/controlplane"
)

// rbacServer is a kube-apiserver that enforces RBAC (--authorization-mode=Node,RBAC), apart from the
// shared one, whose AlwaysAllow would let any request through. Started by the first test that asks for
// it, stopped by TestMain.
var rbacServer = &livePlane{opts: controlplane.Options{
	AuthorizationMode: "Node,RBAC", DirPrefix: "dralloc-explainer-rbac-", StartTimeout: 4 * time.Minute,
}}

// deniedLog records every response of an API server that refuses a request for want of permission.
type deniedLog struct {
	mu     sync.Mutex
	denied []string
}

func (d *deniedLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil && (resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusUnauthorized) {
			d.mu.Lock()
			d.denied = append(d.denied, fmt.Sprintf("%d %s %s", resp.StatusCode, req.Method, req.URL.RequestURI()))
			d.mu.Unlock()
		}
		return resp, err
	})
}

func (d *deniedLog) list() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.denied)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// applyRBAC creates what `kubectl apply -k` of deploy/base creates, but the workload: the namespace,
// the ServiceAccount, the roles and bindings, and the metrics Service. The Deployment and its PodDisruptionBudget are left
// out (no kubelet runs the pod here); the test runs the explainer in process under the ServiceAccount
// instead. It returns the ServiceAccount.
func applyRBAC(ctx context.Context, t *testing.T, c kubernetes.Interface, objs []runtime.Object) *v1.ServiceAccount {
	t.Helper()
	var sa *v1.ServiceAccount
	o := metav1.CreateOptions{}
	for _, obj := range objs {
		var err error
		switch x := obj.(type) {
		case *v1.Namespace:
			_, err = c.CoreV1().Namespaces().Create(ctx, x, o)
		case *v1.ServiceAccount:
			sa = x
			_, err = c.CoreV1().ServiceAccounts(x.Namespace).Create(ctx, x, o)
		case *v1.Service:
			_, err = c.CoreV1().Services(x.Namespace).Create(ctx, x, o)
		case *rbacv1.ClusterRole:
			_, err = c.RbacV1().ClusterRoles().Create(ctx, x, o)
		case *rbacv1.ClusterRoleBinding:
			_, err = c.RbacV1().ClusterRoleBindings().Create(ctx, x, o)
		case *rbacv1.Role:
			_, err = c.RbacV1().Roles(x.Namespace).Create(ctx, x, o)
		case *rbacv1.RoleBinding:
			_, err = c.RbacV1().RoleBindings(x.Namespace).Create(ctx, x, o)
		case *appsv1.Deployment, *policyv1.PodDisruptionBudget:
			continue
		default:
			t.Fatalf("deploy/base: %s: a kind this test does not apply; apply it, or say why not", kindName(obj))
		}
		if err != nil {
			t.Fatalf("apply %s: %v", kindName(obj), err)
		}
	}
	if sa == nil {
		t.Fatal("deploy/base has no ServiceAccount")
	}
	return sa
}

// TestLiveLeastPrivilege runs the explainer as deploy/base's ServiceAccount (impersonated: the API server
// authorizes each request as system:serviceaccount:NS:NAME with the groups a token of it carries) against
// a kube-apiserver that enforces RBAC, with only the roles deploy/base grants, leader election on and its
// Lease where the Deployment keeps it. A pod that a class selector keeps pending gets its Warning Event,
// and not one request of the explainer is refused. The same client is refused what the roles do not
// grant, so the check is not vacuous.
func TestLiveLeastPrivilege(t *testing.T) {
	admin := rbacServer.clientOrNil(t, "kube-apiserver", "etcd")
	if admin == nil {
		t.Skip("no kube-apiserver: " + rbacServer.skip)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	sa := applyRBAC(ctx, t, admin, kustomize(t, deployDir, krusty.ReorderOptionNone))

	cfg, err := clientcmd.BuildConfigFromFlags("", rbacServer.plane.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + sa.Namespace + ":" + sa.Name,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + sa.Namespace, "system:authenticated"},
	}
	denied := &deniedLog{}
	cfg.Wrap(denied.wrap)
	cfg.UserAgent = Component
	asSA, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}

	ns := podNamespace(t, admin)
	p := uniqueName("rbac")
	o := metav1.CreateOptions{}
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	_, err = admin.CoreV1().Nodes().Create(ctx, node(p+"-n1"), o)
	must("create node", err)
	_, err = admin.ResourceV1().ResourceSlices().Create(ctx, slice(p+"-s1", p+"-n1", 1, dev{"d0", "a100", 0}), o)
	must("create slice", err)
	_, err = admin.ResourceV1().DeviceClasses().Create(ctx, class(p+"-h100", "h100"), o)
	must("create class", err)
	_, err = admin.ResourceV1().ResourceClaims(ns).Create(ctx, claim(ns, "train", p+"-h100", 1, false), o)
	must("create claim", err)

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	must("listen", err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- Run(runCtx, ktesting.NewLogger(t, ktesting.NewConfig()), RunOptions{
			Controller: Config{Client: asSA, Recorder: RecorderOptions{MinInterval: time.Second, Instance: "rbac-replica"}},
			Listener:   lis, LeaderElection: true, Namespace: sa.Namespace, Name: "dralloc-explainer", Identity: "rbac-replica",
			RetryPeriod: 200 * time.Millisecond,
		})
	}()
	stopped := false
	stopRun := func() {
		if stopped {
			return
		}
		stopped = true
		stop()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("Run did not return within 30s of its context's end")
		}
	}
	defer stopRun()
	eventually(t, 60*time.Second, "/readyz", func() error { return get("http://"+lis.Addr().String()+"/readyz", nil) })

	pd := pod(ns, "train", "train", "", "")
	_, err = admin.CoreV1().Pods(ns).Create(ctx, pd, o)
	must("create pod", err)
	markUnschedulable(ctx, t, admin, pd)
	want := "class " + p + "-h100 matched no device"
	eventually(t, 60*time.Second, "Warning event on pod train", func() error {
		evs, err := podEvents(ctx, admin, ns, "train")
		if err != nil {
			return err
		}
		if len(evs) == 0 {
			return fmt.Errorf("no event; refused so far: %q", denied.list())
		}
		if ev := evs[len(evs)-1]; ev.Type != v1.EventTypeWarning || !strings.Contains(ev.Message, want) {
			return fmt.Errorf("event %s %s %q, want a Warning containing %q", ev.Type, ev.Reason, ev.Message, want)
		}
		return nil
	})
	// The Lease was taken in the ServiceAccount's namespace under the name the Role grants.
	lease, err := admin.CoordinationV1().Leases(sa.Namespace).Get(ctx, "dralloc-explainer", metav1.GetOptions{})
	must("get lease", err)
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != "rbac-replica" {
		t.Errorf("lease %s/dralloc-explainer held by %v, want rbac-replica", sa.Namespace, lease.Spec.HolderIdentity)
	}
	stopRun() // every request of the explainer, its lease release included, is made before the count
	if got := denied.list(); len(got) != 0 {
		t.Errorf("the API server refused %d requests of the explainer:\n%s", len(got), strings.Join(got, "\n"))
	}

	// Not vacuous: RBAC is enforced for this client, which may not read Secrets or write pods' status.
	if _, err := asSA.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("list secrets as %s: %v, want forbidden", cfg.Impersonate.UserName, err)
	}
	cur, err := admin.CoreV1().Pods(ns).Get(ctx, "train", metav1.GetOptions{})
	must("get pod", err)
	if _, err := asSA.CoreV1().Pods(ns).UpdateStatus(ctx, cur, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("update pod status as %s without the pod-condition overlay: %v, want forbidden", cfg.Impersonate.UserName, err)
	}
}
