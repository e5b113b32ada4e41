package operator

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// eventually polls check every half second until it returns nil, and fails the test with its last
// error once within has passed. Every wait of the walk-through is on a condition, bounded generously:
// the machine may be busy.
func eventually(ctx context.Context, t *testing.T, within time.Duration, what string, check func(context.Context) error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, within, true, func(ctx context.Context) (bool, error) {
		last = check(ctx)
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("%s: not within %v: %v", what, within, last)
	}
}

// kustomizeBuild renders the kustomization in dir as `kubectl apply -k` does: kubectl's
// k8s.io/cli-runtime v0.37.2 (pkg/resource/kustomizevisitor.go) runs krusty with the default options and
// the legacy ordering (namespaces first, then RBAC, then workloads).
func kustomizeBuild(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionLegacy
	m, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, r := range m.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			t.Fatalf("kustomize build %s: %s: %v", dir, r.CurId(), err)
		}
		out = append(out, decode(t, dir, y))
	}
	return out
}

// decode reads one YAML document as kubectl does: converted to JSON, integers as int64.
func decode(t *testing.T, source string, doc []byte) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		t.Fatalf("%s: %v", source, err)
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(j); err != nil {
		t.Fatalf("%s: %v", source, err)
	}
	return obj
}

// readManifests reads the YAML documents of a file, as `kubectl apply -f` does.
func readManifests(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(string(data), "\n---") {
		var probe map[string]any
		if err := yaml.Unmarshal([]byte(doc), &probe); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(probe) > 0 { // a document of comments only is no object
			out = append(out, decode(t, path, []byte(doc)))
		}
	}
	return out
}

// applier applies objects in the given order with server-side apply, as `kubectl apply --server-side`
// does: the resource of each kind from discovery, the field manager "kubectl", conflicts forced.
type applier struct {
	client dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func newApplier(t *testing.T, cfg *rest.Config, admin kubernetes.Interface) *applier {
	t.Helper()
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &applier{client: client, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(admin.Discovery()))}
}

func (a *applier) apply(ctx context.Context, t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%s %s: %v", gvk.Kind, obj.GetName(), err)
		}
		r := a.client.Resource(m.Resource)
		var ri dynamic.ResourceInterface = r
		if m.Scope.Name() == "namespace" {
			ri = r.Namespace(obj.GetNamespace())
		}
		if _, err := ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: "kubectl", Force: true}); err != nil {
			t.Fatalf("apply %s %s/%s: %v", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
		}
	}
}

// grants are the requests that the roles bound to a subject allow, one per verb, resource and name of
// every rule: what the authorizer must allow before the subject acts, so that what follows is the
// policy's answer rather than a race with the authorizer's informers.
func grants(t *testing.T, rules []rbacv1.PolicyRule, namespace string) []authorizationv1.ResourceAttributes {
	t.Helper()
	var out []authorizationv1.ResourceAttributes
	for _, r := range rules {
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					for _, n := range names {
						resource, sub, _ := strings.Cut(res, "/")
						out = append(out, authorizationv1.ResourceAttributes{Namespace: namespace, Verb: v, Group: g, Resource: resource, Subresource: sub, Name: n})
					}
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no rules to wait for")
	}
	return out
}

// rulesOf converts an applied Role or ClusterRole.
func rulesOf(t *testing.T, obj *unstructured.Unstructured) []rbacv1.PolicyRule {
	t.Helper()
	var role rbacv1.ClusterRole // a Role's rules have the same shape
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &role); err != nil {
		t.Fatalf("%s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
	return role.Rules
}

// waitAuthorized waits until kube-apiserver's authorizer allows user (with groups) every request of attrs,
// asking it with SubjectAccessReviews as the cluster's admin.
func waitAuthorized(ctx context.Context, t *testing.T, admin kubernetes.Interface, user string, groups []string, attrs []authorizationv1.ResourceAttributes) {
	t.Helper()
	for _, a := range attrs {
		eventually(ctx, t, 2*time.Minute, fmt.Sprintf("%s allowed to %s %s/%s %q in %q", user, a.Verb, a.Group, a.Resource, a.Name, a.Namespace), func(ctx context.Context) error {
			sar, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: user, Groups: groups, ResourceAttributes: &a,
			}}, metav1.CreateOptions{})
			if err != nil {
				return err
			}
			if !sar.Status.Allowed {
				return fmt.Errorf("not allowed: %s", sar.Status.Reason)
			}
			return nil
		})
	}
}

// denials are the requests kube-apiserver's audit log records as refused (401 or 403), but those of
// the users in except, each as "CODE USER[ as IMPERSONATED] VERB URI"; seen says, for each user
// (impersonated or not), how many of its requests the log holds.
func denials(t *testing.T, auditLog string, except ...string) (denied []string, seen map[string]int) {
	t.Helper()
	f, err := os.Open(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen = map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		var ev auditv1.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("%s: %v in %q", auditLog, err, sc.Text())
		}
		who := ev.User.Username
		if ev.ImpersonatedUser != nil {
			who = ev.ImpersonatedUser.Username
		}
		seen[who]++
		if ev.ResponseStatus == nil || (ev.ResponseStatus.Code != 401 && ev.ResponseStatus.Code != 403) {
			continue
		}
		if ev.Stage != auditv1.StageResponseComplete && ev.Stage != auditv1.StageResponseStarted {
			continue
		}
		skip := false
		for _, e := range except {
			skip = skip || who == e
		}
		if skip {
			continue
		}
		as := ""
		if ev.ImpersonatedUser != nil {
			as = " as " + ev.ImpersonatedUser.Username
		}
		denied = append(denied, fmt.Sprintf("%d %s%s %s %s", ev.ResponseStatus.Code, ev.User.Username, as, ev.Verb, ev.RequestURI))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return denied, seen
}

// auditHas says whether the audit log holds the end of a request to uri.
func auditHas(auditLog, uri string) error {
	data, err := os.ReadFile(auditLog)
	if err != nil {
		return err
	}
	for _, l := range bytes.Split(data, []byte("\n")) {
		var ev auditv1.Event
		if json.Unmarshal(l, &ev) == nil && ev.RequestURI == uri && ev.Stage == auditv1.StageResponseComplete {
			return nil
		}
	}
	return fmt.Errorf("no ResponseComplete event for %s", uri)
}

// syncBuffer is a bytes.Buffer that a process writes while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// process is a program the walk-through started, with its output.
type process struct {
	cmd    *exec.Cmd
	output *syncBuffer
	done   chan struct{}
	err    error
}

func start(ctx context.Context, t *testing.T, env []string, bin string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.CommandContext(ctx, bin, args...), output: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = p.output, p.output
	p.cmd.WaitDelay = 10 * time.Second
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	return p
}

// exited is the process's end, or nil while it runs.
func (p *process) exited() error {
	select {
	case <-p.done:
		if p.err == nil {
			return errors.New("exited with status 0")
		}
		return p.err
	default:
		return nil
	}
}

// stop sends SIGTERM (what the kubelet sends a container) and waits for the process to exit.
func (p *process) stop(t *testing.T) {
	t.Helper()
	select {
	case <-p.done:
		return
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Errorf("interrupt %s: %v", p.cmd.Path, err)
	}
	select {
	case <-p.done:
		if p.err != nil {
			t.Errorf("%s after SIGTERM: %v; its output ends:\n%s", filepath.Base(p.cmd.Path), p.err, tail(p.output.String(), 20))
		}
	case <-time.After(time.Minute):
		t.Errorf("%s did not exit within a minute of SIGTERM", filepath.Base(p.cmd.Path))
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func tail(s string, lines int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(l[max(0, len(l)-lines):], "\n")
}
