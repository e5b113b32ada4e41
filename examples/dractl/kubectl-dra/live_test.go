package main

import (
	"bytes"
	"cmp"
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	"github.com/dralloc/dralloc/allocator/manifest"
	"github.com/dralloc/dralloc/examples/dractl/internal/cli"
)

// testdata is dractl's test clusters.
const testdata = "../internal/cli/testdata"

// listKinds are the list kinds of every resource and version kubectl-dra may list, which the fake
// dynamic client needs to know.
func listKinds() map[schema.GroupVersionResource]string {
	out := map[schema.GroupVersionResource]string{}
	for _, k := range kinds {
		for _, v := range k.versions {
			out[schema.GroupVersionResource{Group: k.group, Version: v, Resource: k.resource}] = kindOf(k.resource) + "List"
		}
	}
	return out
}

func kindOf(resource string) string {
	return map[string]string{
		"pods": "Pod", "nodes": "Node", "resourceslices": "ResourceSlice", "deviceclasses": "DeviceClass",
		"resourceclaims": "ResourceClaim", "resourceclaimtemplates": "ResourceClaimTemplate",
		"devicetaintrules": "DeviceTaintRule", "podgroups": "PodGroup", "resourcequotas": "ResourceQuota",
	}[resource]
}

// cluster is a fake API server holding objs, what a cluster created from them would list, and the
// same objects as `kubectl get <every kind> -A -o yaml` writes them: one List, kind by kind in
// the order kubectl-dra lists them, each kind by namespace and name.
func cluster(t *testing.T, objs *manifest.Objects) (*dynamicfake.FakeDynamicClient, []byte) {
	t.Helper()
	var typed []runtime.Object
	for _, o := range objs.Pods {
		typed = append(typed, o)
	}
	for _, o := range objs.Nodes {
		typed = append(typed, o)
	}
	for _, o := range objs.Slices {
		typed = append(typed, o)
	}
	for _, o := range objs.Classes {
		typed = append(typed, o)
	}
	for _, o := range objs.Claims {
		typed = append(typed, o)
	}
	for _, o := range objs.Templates {
		typed = append(typed, o)
	}
	for _, o := range objs.TaintRules {
		typed = append(typed, o)
	}
	for _, o := range objs.PodGroups {
		typed = append(typed, o)
	}
	for _, o := range objs.ResourceQuotas {
		typed = append(typed, o)
	}
	gv := map[string]string{}
	for _, k := range kinds {
		gv[kindOf(k.resource)] = schema.GroupVersion{Group: k.group, Version: k.versions[0]}.String()
	}
	var items []runtime.Object
	var list []unstructured.Unstructured
	for _, o := range typed {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		u := unstructured.Unstructured{Object: m}
		kind := strings.TrimPrefix(fmt.Sprintf("%T", o), "*")
		kind = kind[strings.LastIndex(kind, ".")+1:]
		u.SetAPIVersion(gv[kind])
		u.SetKind(kind)
		items = append(items, &u)
		list = append(list, u)
	}
	order := map[string]int{}
	for i, k := range kinds {
		order[kindOf(k.resource)] = i
	}
	slices.SortStableFunc(list, func(a, b unstructured.Unstructured) int {
		return cmp.Or(cmp.Compare(order[a.GetKind()], order[b.GetKind()]), cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
	})
	file, err := yaml.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": list})
	if err != nil {
		t.Fatal(err)
	}
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds(), items...), file
}

func load(t *testing.T, path string) *manifest.Objects {
	t.Helper()
	objs, err := manifest.Load([]string{path}, manifest.Options{SkipUnknown: true})
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// kubectlDRA runs kubectl dra in-process against client, listing pages of pageSize objects.
func kubectlDRA(client dynamic.Interface, pageSize int64, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	l := newLive(func(*live) (dynamic.Interface, string, error) { return client, "default", nil })
	if pageSize > 0 {
		l.pageSize = pageSize
	}
	code = l.options().Run(args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

func dractl(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = cli.Run(args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

// commands are every command of dractl, with the flags that make its output the same run to run.
var commands = [][]string{
	{"explain"}, {"place"}, {"lint"}, {"taints", "--now", "2026-12-01T12:00:00Z"}, {"inventory"}, {"top"}, {"capacity"},
}

// TestSameAsFile: the objects of a cluster, read live, give byte for byte the output that the same
// objects give as kubectl get -A -o yaml writes them, for every command and output format; only
// where the pods were read from is said in the words of each ("in the input", "in any namespace").
func TestSameAsFile(t *testing.T) {
	for _, dir := range []string{"reasons", "gang", "demo", "top", "capacity", "free"} {
		client, file := cluster(t, load(t, filepath.Join(testdata, dir)))
		path := filepath.Join(t.TempDir(), "cluster.yaml")
		if err := os.WriteFile(path, file, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, cmd := range commands {
			for _, o := range []string{"text", "yaml", "json"} {
				args := append(slices.Clone(cmd), "-o", o, "--color", "never")
				wantCode, want, wantErr := dractl(append(slices.Clone(args), "-f", path)...)
				want = strings.ReplaceAll(want, "No pods in the input.", "No pods in any namespace.")
				if wantCode == cli.ExitBadInput || wantCode == cli.ExitInternal {
					t.Fatalf("%s %v -f: status %d: %s", dir, args, wantCode, wantErr)
				}
				code, got, errOut := kubectlDRA(client, 0, append(slices.Clone(args), "-A")...)
				if code != wantCode || got != want {
					t.Errorf("%s %v: live status %d, from the file %d; stderr %s\nlive:\n%s\nfile:\n%s", dir, args, code, wantCode, errOut, got, want)
				}
			}
		}
	}
}

// pager serves lists in pages as kube-apiserver does, at most Limit objects and a continue token
// while more are left (the fake client alone returns every object at once), and records every
// list's options.
type pager struct {
	dynamic.Interface
	requests map[string][]metav1.ListOptions // by resource
}

func (p *pager) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return pagedResource{NamespaceableResourceInterface: p.Interface.Resource(gvr), p: p, resource: gvr.Resource}
}

type pagedResource struct {
	dynamic.NamespaceableResourceInterface
	p        *pager
	resource string
	ns       string
}

func (r pagedResource) Namespace(ns string) dynamic.ResourceInterface {
	r.ns = ns
	return r
}

func (r pagedResource) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	r.p.requests[r.resource] = append(r.p.requests[r.resource], opts)
	all, err := r.NamespaceableResourceInterface.Namespace(r.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	// Served in the API server's order, by namespace and name, but backwards, so that a client
	// that relied on the order of a page would show it.
	slices.SortFunc(all.Items, func(a, b unstructured.Unstructured) int {
		return cmp.Or(cmp.Compare(b.GetNamespace(), a.GetNamespace()), cmp.Compare(b.GetName(), a.GetName()))
	})
	start := 0
	if opts.Continue != "" {
		if start, err = strconv.Atoi(opts.Continue); err != nil || start > len(all.Items) {
			return nil, apierrors.NewBadRequest("bad continue token " + opts.Continue)
		}
	}
	end := len(all.Items)
	if opts.Limit > 0 && int64(end-start) > opts.Limit {
		end = start + int(opts.Limit)
		all.SetContinue(strconv.Itoa(end))
	}
	all.Items = all.Items[start:end]
	return all, nil
}

// TestPagination: with pages of 2 objects every kind is read whole, a page after the other, and
// the output is the same as with one page.
func TestPagination(t *testing.T) {
	client, _ := cluster(t, load(t, filepath.Join(testdata, "reasons")))
	for _, cmd := range commands {
		args := append(slices.Clone(cmd), "-A", "-o", "yaml")
		wantCode, want, _ := kubectlDRA(client, 0, args...)
		p := &pager{Interface: client, requests: map[string][]metav1.ListOptions{}}
		code, got, errOut := kubectlDRA(p, 2, args...)
		if code != wantCode || got != want {
			t.Errorf("%v: in pages of 2 status %d, in one page %d; stderr %s\npages:\n%s\none page:\n%s", args, code, wantCode, errOut, got, want)
		}
		for _, resource := range []string{"pods", "resourceslices", "resourceclaims"} {
			reqs := p.requests[resource]
			if len(reqs) < 2 {
				t.Errorf("%v: %d lists of %s, want several pages", args, len(reqs), resource)
			}
			for i, r := range reqs {
				wantContinue := ""
				if i > 0 {
					wantContinue = strconv.Itoa(2 * i)
				}
				if r.Limit != 2 || r.Continue != wantContinue {
					t.Errorf("%v: list %d of %s: limit %d, continue %q", args, i, resource, r.Limit, r.Continue)
				}
			}
		}
	}
}

func forbid(client *dynamicfake.FakeDynamicClient, resource string) {
	client.PrependReactor("list", resource, func(a clienttesting.Action) (bool, runtime.Object, error) {
		gr := a.GetResource().GroupResource()
		return true, nil, apierrors.NewForbidden(gr, "", fmt.Errorf("User \"dev\" cannot list resource %q in API group %q", gr.Resource, gr.Group))
	})
}

func notServed(client *dynamicfake.FakeDynamicClient, resource string) {
	client.PrependReactor("list", resource, func(a clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(a.GetResource().GroupResource(), "")
	})
}

// TestForbidden: the lists the user may not make are bad input (exit status 3), named all in one
// message with the namespace of each, or cluster-scoped; a forbidden optional kind (PodGroups,
// DeviceTaintRules) is read as a kind not served, with a warning.
func TestForbidden(t *testing.T) {
	const grant = "\n(the ClusterRole of examples/dractl/kubectl-dra/deploy/clusterrole.yaml grants every one, and nothing more)\n"
	for _, tc := range []struct {
		resources []string
		args      []string
		want      string
	}{
		{[]string{"resourceclaims"}, []string{"top", "-n", "x"}, "kubectl dra top: forbidden: 1 list refused; the user needs:\n" +
			"  list resource.k8s.io resourceclaims in every namespace (a ClusterRole: a device that a claim of any namespace holds is in use)" + grant},
		{[]string{"pods"}, []string{"explain", "-n", "x"}, "kubectl dra explain: forbidden: 1 list refused; the user needs:\n  list pods in namespace x" + grant},
		{[]string{"pods"}, []string{"place", "--all-namespaces"}, "kubectl dra place: forbidden: 1 list refused; the user needs:\n  list pods in every namespace (a ClusterRole, as -A asks)" + grant},
		// A user with a Role in one namespace: every cluster-wide read named at once, in the order read.
		{[]string{"nodes", "resourceslices", "deviceclasses", "resourceclaims"}, []string{"lint", "--namespace", "ml"}, "kubectl dra lint: forbidden: 4 lists refused; the user needs:\n" +
			"  list nodes (cluster-scoped: a ClusterRole)\n" +
			"  list resource.k8s.io resourceslices (cluster-scoped: a ClusterRole)\n" +
			"  list resource.k8s.io deviceclasses (cluster-scoped: a ClusterRole)\n" +
			"  list resource.k8s.io resourceclaims in every namespace (a ClusterRole: a device that a claim of any namespace holds is in use)" + grant},
		{[]string{"resourceclaimtemplates", "pods"}, []string{"inventory", "-nml"}, "kubectl dra inventory: forbidden: 2 lists refused; the user needs:\n" +
			"  list pods in namespace ml\n  list resource.k8s.io resourceclaimtemplates in namespace ml" + grant},
	} {
		client, _ := cluster(t, load(t, filepath.Join(testdata, "reasons")))
		for _, r := range tc.resources {
			forbid(client, r)
		}
		code, out, errOut := kubectlDRA(client, 0, tc.args...)
		if code != cli.ExitBadInput || out != "" || errOut != tc.want {
			t.Errorf("%v with %v forbidden: status %d, stdout %q, stderr\n%s\nwant 3 and\n%s", tc.args, tc.resources, code, out, errOut, tc.want)
		}
	}
	for _, tc := range []struct{ resource, warning string }{
		{"podgroups", "kubectl dra explain: warning: list scheduling.k8s.io podgroups in every namespace (a ClusterRole, as -A asks): read as if the cluster did not serve them\n"},
		{"devicetaintrules", "kubectl dra explain: warning: list resource.k8s.io devicetaintrules (cluster-scoped: a ClusterRole): read as if the cluster did not serve them\n"},
	} {
		client, _ := cluster(t, load(t, filepath.Join(testdata, "reasons")))
		notServed(client, tc.resource)
		wantCode, want, _ := kubectlDRA(client, 0, "explain", "-A")
		client, _ = cluster(t, load(t, filepath.Join(testdata, "reasons")))
		forbid(client, tc.resource)
		code, out, errOut := kubectlDRA(client, 0, "explain", "-A")
		if code != wantCode || out != want || errOut != tc.warning {
			t.Errorf("%s forbidden: status %d, stderr %q\n%s\nwant status %d, stderr %q\n%s", tc.resource, code, errOut, out, wantCode, tc.warning, want)
		}
	}
}

// TestNotServed: PodGroups and DeviceTaintRules are read in the first version the cluster serves,
// and none when it serves none (their features are off); ResourceSlices not served are an error.
func TestNotServed(t *testing.T) {
	client, _ := cluster(t, load(t, filepath.Join(testdata, "reasons")))
	_, want, _ := kubectlDRA(client, 0, "place", "-A")
	client, _ = cluster(t, load(t, filepath.Join(testdata, "reasons")))
	notServed(client, "podgroups")
	code, got, errOut := kubectlDRA(client, 0, "place", "-A")
	if code == cli.ExitBadInput || got != want {
		t.Errorf("podgroups not served: status %d, stderr %s\n%s\nwant\n%s", code, errOut, got, want)
	}
	var versions []string
	for _, a := range client.Actions() {
		if a.GetResource().Resource == "podgroups" {
			versions = append(versions, a.GetResource().Version)
		}
	}
	if strings.Join(versions, " ") != "v1beta1 v1alpha3" {
		t.Errorf("podgroups listed in versions %v, want v1beta1 then v1alpha3", versions)
	}

	client, _ = cluster(t, load(t, filepath.Join(testdata, "reasons")))
	notServed(client, "resourceslices")
	code, _, errOut = kubectlDRA(client, 0, "place", "-A")
	if want := "kubectl dra place: cannot list resourceslices: resource.k8s.io v1 is not served by the cluster"; code != cli.ExitBadInput || !strings.HasPrefix(errOut, want) {
		t.Errorf("resourceslices not served: status %d, stderr %q, want 3 and %q", code, errOut, want)
	}
}

// TestNamespace: -n narrows pods, templates and PodGroups, never claims (a device a claim of
// another namespace holds is in use) nor cluster-scoped kinds; a pod named without a namespace is in
// the one of -n, or the context's.
func TestNamespace(t *testing.T) {
	client, _ := cluster(t, load(t, filepath.Join(testdata, "gang")))
	if code, _, errOut := kubectlDRA(client, 0, "place", "-n", "team-b"); code == cli.ExitBadInput {
		t.Fatal(errOut)
	}
	got := map[string]string{}
	for _, a := range client.Actions() {
		got[a.GetResource().Resource] = a.GetNamespace()
	}
	want := map[string]string{"pods": "team-b", "resourceclaimtemplates": "team-b", "podgroups": "team-b", "resourceclaims": "", "nodes": "", "resourceslices": "", "deviceclasses": "", "devicetaintrules": ""}
	for r, ns := range want {
		if g, ok := got[r]; !ok || g != ns {
			t.Errorf("%s listed in namespace %q (listed: %v), want %q", r, g, ok, ns)
		}
	}

	_, want1, _ := dractl("explain", "-f", filepath.Join(testdata, "gang"), "--pod", "default/t2", "-o", "json")
	for _, args := range [][]string{{"explain", "pod/t2", "-o", "json"}, {"explain", "t2", "-n", "default", "-o", "json"}} {
		if _, out, errOut := kubectlDRA(client, 0, args...); out != want1 {
			t.Errorf("%v: stderr %s\n%s\nwant\n%s", args, errOut, out, want1)
		}
	}
}

// parsed is the source that the command line args configure, parsed as kubectl dra parses it.
func parsed(t *testing.T, args ...string) *live {
	t.Helper()
	l := newLive(kubeconfig)
	fs := flag.NewFlagSet("kubectl dra top", flag.ContinueOnError)
	fs.String("o", "text", "output format")
	if rest, err := l.parser(fs).Parse(args); err != nil || len(rest) != 0 {
		t.Fatalf("%v: %v, positional %v", args, err, rest)
	}
	return l
}

// testKubeconfig has contexts a (namespace ml) and b on cluster c and user u, and a second cluster
// and user to choose with --cluster and --user.
const testKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1"}
- name: c2
  cluster: {server: "https://127.0.0.2:2"}
users:
- name: u
  user: {token: t}
- name: u2
  user: {token: t2}
contexts:
- name: a
  context: {cluster: c, user: u, namespace: ml}
- name: b
  context: {cluster: c, user: u}
current-context: a
`

// TestKubeconfig: --kubeconfig, --context and -n (in kubectl's every form) choose the cluster and
// namespace as kubectl does.
func TestKubeconfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(testKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--kubeconfig", path}, "ml"},
		{[]string{"--kubeconfig", path, "--context", "b"}, "default"},
		{[]string{"--kubeconfig", path, "--context", "a", "-n", "x"}, "x"},
		{[]string{"--kubeconfig=" + path, "--context=b", "-nx"}, "x"},
		{[]string{"--kubeconfig", path, "--context", "b", "-n=x"}, "x"},
		{[]string{"--kubeconfig", path, "--namespace=x"}, "x"},
	} {
		if _, ns, err := kubeconfig(parsed(t, tc.args...)); err != nil || ns != tc.want {
			t.Errorf("%v: namespace %q, %v; want %q", tc.args, ns, err, tc.want)
		}
	}
	if _, _, err := kubeconfig(parsed(t, "--kubeconfig", path, "--context", "nope")); err == nil || !strings.HasPrefix(err.Error(), "kubeconfig: ") {
		t.Errorf("unknown context: %v", err)
	}
	var out, errOut bytes.Buffer
	if code := options().Run([]string{"top", "--kubeconfig", filepath.Join(t.TempDir(), "missing")}, strings.NewReader(""), &out, &errOut); code != cli.ExitBadInput || !strings.Contains(errOut.String(), "kubeconfig") {
		t.Errorf("missing kubeconfig: status %d, stderr %q", code, errOut.String())
	}
}

// TestConfigFlags: kubectl's flags reach the client's configuration as they reach kubectl's:
// impersonation, a token, a server, TLS, the kubeconfig's cluster and user, the request timeout.
func TestConfigFlags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(testKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, []byte("not read until a connection is made"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "host https://127.0.0.1:1 token t as [] timeout 0s ca  insecure false"},
		{[]string{"--as", "dev", "--as-group", "g1", "--as-group=g2"}, "host https://127.0.0.1:1 token t as dev[g1 g2] timeout 0s ca  insecure false"},
		{[]string{"--token", "x", "--server", "https://10.0.0.1:6443"}, "host https://10.0.0.1:6443 token x as [] timeout 0s ca  insecure false"},
		{[]string{"--cluster", "c2", "--user", "u2"}, "host https://127.0.0.2:2 token t2 as [] timeout 0s ca  insecure false"},
		{[]string{"--certificate-authority", ca}, "host https://127.0.0.1:1 token t as [] timeout 0s ca " + ca + " insecure false"},
		{[]string{"--insecure-skip-tls-verify"}, "host https://127.0.0.1:1 token t as [] timeout 0s ca  insecure true"},
		{[]string{"--request-timeout", "5s"}, "host https://127.0.0.1:1 token t as [] timeout 5s ca  insecure false"},
	} {
		l := parsed(t, append([]string{"--kubeconfig", path}, tc.args...)...)
		cfg, err := l.config.ToRESTConfig()
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		got := fmt.Sprintf("host %s token %s as %s%v timeout %v ca %s insecure %v", cfg.Host, cfg.BearerToken,
			cfg.Impersonate.UserName, cfg.Impersonate.Groups, cfg.Timeout, cfg.CAFile, cfg.Insecure)
		if got != tc.want {
			t.Errorf("%v:\n got %s\nwant %s", tc.args, got, tc.want)
		}
	}
}

// TestKubeconfigMerged: the files of $KUBECONFIG are merged as kubectl merges them, the first to
// set a value winning: the context of one file reaches the cluster and user of another.
func TestKubeconfigMerged(t *testing.T) {
	dir := t.TempDir()
	first := "apiVersion: v1\nkind: Config\ncontexts:\n- name: a\n  context: {cluster: c, user: u, namespace: ml}\ncurrent-context: a\n"
	second := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"https://127.0.0.3:3\"}\nusers:\n- name: u\n  user: {token: t3}\ncontexts:\n- name: a\n  context: {cluster: c, user: u, namespace: other}\ncurrent-context: b\n"
	for name, text := range map[string]string{"first": first, "second": second} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("KUBECONFIG", filepath.Join(dir, "first")+string(os.PathListSeparator)+filepath.Join(dir, "second"))
	l := parsed(t)
	cfg, err := l.config.ToRESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	_, ns, err := kubeconfig(l)
	if err != nil || cfg.Host != "https://127.0.0.3:3" || cfg.BearerToken != "t3" || ns != "ml" {
		t.Errorf("host %s token %s namespace %q, %v; want https://127.0.0.3:3, t3, ml", cfg.Host, cfg.BearerToken, ns, err)
	}
}

// TestKubectlShorthands: kubectl's habits on the whole command line: -nml is -n ml, --as is taken,
// flags before and after the pod; a flag that is wrong is named in one line.
func TestKubectlShorthands(t *testing.T) {
	client, _ := cluster(t, load(t, filepath.Join(testdata, "gang")))
	if code, _, errOut := kubectlDRA(client, 0, "place", "-nteam-b", "--as", "dev", "--as-group", "devs"); code == cli.ExitBadInput {
		t.Fatal(errOut)
	}
	for _, a := range client.Actions() {
		if a.GetResource().Resource == "pods" && a.GetNamespace() != "team-b" {
			t.Errorf("pods listed in namespace %q, want team-b", a.GetNamespace())
		}
	}
	_, want, _ := dractl("explain", "-f", filepath.Join(testdata, "gang"), "--pod", "default/t2", "-o", "json")
	if _, got, errOut := kubectlDRA(client, 0, "explain", "-ndefault", "t2", "-ojson"); got != want {
		t.Errorf("explain -ndefault t2 -ojson: stderr %s\n%s\nwant\n%s", errOut, got, want)
	}
	code, out, errOut := kubectlDRA(client, 0, "top", "--frob")
	const wantErr = "kubectl dra top: unknown flag: --frob\nSee 'kubectl dra top --help' for the flags.\n"
	if code != cli.ExitBadInput || out != "" || errOut != wantErr {
		t.Errorf("--frob: status %d, stdout %q, stderr %q; want 3 and %q", code, out, errOut, wantErr)
	}
	code, out, _ = kubectlDRA(client, 0, "top", "--help")
	for _, f := range []string{"--as string", "-n, --namespace string", "-A, --all-namespaces", "-o, --o string", "--request-timeout string"} {
		if code != cli.ExitOK || !strings.Contains(out, f) {
			t.Errorf("top --help: status %d, no %q in\n%s", code, f, out)
		}
	}
}

// serverKubeconfig is a kubeconfig whose current context is the server at url.
func serverKubeconfig(t *testing.T, url string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	config := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"" + url + "\"}\nusers:\n- name: u\n  user: {}\ncontexts:\n- name: a\n  context: {cluster: c, user: u}\ncurrent-context: a\n"
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRequestTimeout: --request-timeout ends a request the server never answers, and a cluster
// that does not answer in time exits with its own status, not with bad input's.
func TestRequestTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // never answers; the client gives up
	}))
	defer srv.Close()
	var out, errOut bytes.Buffer
	code := options().Run([]string{"top", "--kubeconfig", serverKubeconfig(t, srv.URL), "--request-timeout", "50ms"}, strings.NewReader(""), &out, &errOut)
	if code != cli.ExitUnavailable || !strings.HasPrefix(errOut.String(), "kubectl dra top: cannot list pods in namespace default: the cluster is unavailable: ") {
		t.Errorf("status %d, stderr %q", code, errOut.String())
	}
}

// TestUnavailable: a cluster that refuses connections, is overloaded or not ready exits with 4;
// a certificate the kubeconfig does not trust is the user's to fix: 3, as a refusal is
// (TestForbidden).
func TestUnavailable(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	refused := closed.URL
	closed.Close() // nothing listens there now
	tlsSrv := httptest.NewTLSServer(http.NotFoundHandler())
	defer tlsSrv.Close()
	for _, tc := range []struct {
		name, url string
		want      int
	}{
		{"connection refused", refused, cli.ExitUnavailable},
		{"a certificate of an authority the kubeconfig does not name", tlsSrv.URL, cli.ExitBadInput},
	} {
		var out, errOut bytes.Buffer
		code := options().Run([]string{"inventory", "--kubeconfig", serverKubeconfig(t, tc.url)}, strings.NewReader(""), &out, &errOut)
		if code != tc.want || !strings.HasPrefix(errOut.String(), "kubectl dra inventory: cannot list pods in namespace default: ") {
			t.Errorf("%s: status %d, stderr %q; want %d", tc.name, code, errOut.String(), tc.want)
		}
	}
	gr := schema.GroupResource{Resource: "nodes"}
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"503", apierrors.NewServiceUnavailable("etcd is not ready"), cli.ExitUnavailable},
		{"429", apierrors.NewTooManyRequests("slow down", 1), cli.ExitUnavailable},
		{"504", apierrors.NewTimeoutError("the list took too long", 0), cli.ExitUnavailable},
		{"server timeout", apierrors.NewServerTimeout(gr, "list", 0), cli.ExitUnavailable},
	} {
		client, _ := cluster(t, load(t, filepath.Join(testdata, "reasons")))
		client.PrependReactor("list", "nodes", func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, tc.err })
		code, _, errOut := kubectlDRA(client, 0, "inventory")
		if code != tc.want || !strings.HasPrefix(errOut, "kubectl dra inventory: cannot list nodes: ") {
			t.Errorf("%s: status %d, stderr %q; want %d", tc.name, code, errOut, tc.want)
		}
	}
}

// TestSelectorLive: -l/--selector narrows the pending pods as with -f; a namespace without pods
// is said to have none, not that every pod in it has a node.
func TestSelectorLive(t *testing.T) {
	client, _ := cluster(t, load(t, filepath.Join(testdata, "gang")))
	code, got, errOut := kubectlDRA(client, 0, "place", "-A", "-lapp=nope", "-o", "text")
	if want := "No pending pods in any namespace match the selector app=nope.\n"; code != cli.ExitOK || got != want {
		t.Errorf("place -lapp=nope: status %d, stderr %s\n%q\nwant\n%q", code, errOut, got, want)
	}
	// The gang's pods have no labels, so app!=nope matches every one: the output is that of -f.
	_, want, _ := dractl("place", "-f", filepath.Join(testdata, "gang"), "--selector", "app!=nope", "-o", "text")
	if _, got, errOut = kubectlDRA(client, 0, "place", "-A", "--selector=app!=nope", "-o", "text"); got != want || !strings.Contains(got, "default/t2") {
		t.Errorf("place --selector=app!=nope: stderr %s\n%s\nwant\n%s", errOut, got, want)
	}
	code, got, errOut = kubectlDRA(client, 0, "explain", "-n", "empty")
	if code != cli.ExitOK || got != "No pods in namespace empty.\n" {
		t.Errorf("explain -n empty: status %d, stdout %q, stderr %s", code, got, errOut)
	}
}

// TestVersionBuilt: the kubectl-dra built by go build says in `version` which module it is and
// the k8s.io/api version it reads resource.k8s.io/v1 with, from its build information.
func TestVersionBuilt(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "kubectl-dra")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	for _, want := range []string{"kubectl dra ", "  module:  github.com/dralloc/dralloc/examples/dractl/kubectl-dra\n", "  API:     resource.k8s.io/v1 (k8s.io/api v0.37.2)\n"} {
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("version: %v, no %q in\n%s", err, want, out)
		}
	}
}

// quotaObjects are two ResourceQuotas of namespace team-a (two GPUs of class gpu.example.com, and a
// looser ten) and three pending pods there asking for one GPU each, for the demo cluster's node of
// eight GPUs.
var quotaObjects = `apiVersion: v1
kind: ResourceQuota
metadata: {name: gpus, namespace: team-a}
spec:
  hard:
    gpu.example.com.deviceclass.resource.k8s.io/devices: "2"
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: loose, namespace: team-a}
spec:
  hard:
    gpu.example.com.deviceclass.resource.k8s.io/devices: "10"
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: team-a}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.example.com}
` + jobPods(3)

// jobPods are n pending pods job-0, job-1, ... of namespace team-a, each asking for one GPU through the
// template one-gpu.
func jobPods(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `---
apiVersion: v1
kind: Pod
metadata: {name: job-%d, namespace: team-a}
spec:
  containers: [{name: main, image: job}]
  resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]
`, i)
	}
	return b.String()
}

// TestEnforceQuotaLive: with --enforce-quota the ResourceQuotas of the pods' namespace are listed (in
// pages, as the other kinds) and applied: the output is the one dractl gives for the same objects
// from a file, the third pod of team-a refused for its quota; without the flag they are not listed at
// all. A user who may not list them is refused as for a required kind, with the permission named.
func TestEnforceQuotaLive(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "quota.yaml"), []byte(quotaObjects), 0o600); err != nil {
		t.Fatal(err)
	}
	objs, err := manifest.Load([]string{filepath.Join(testdata, "demo"), dir}, manifest.Options{SkipUnknown: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs.ResourceQuotas) != 2 {
		t.Fatalf("%d ResourceQuotas loaded, want 2", len(objs.ResourceQuotas))
	}
	client, file := cluster(t, objs)
	path := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{{"place", "--enforce-quota"}, {"explain", "--enforce-quota"}, {"capacity", "--enforce-quota"}, {"place"}} {
		args := append(slices.Clone(cmd), "-o", "text", "--color", "never")
		wantCode, want, wantErr := dractl(append(slices.Clone(args), "-f", path)...)
		if wantCode == cli.ExitBadInput || wantCode == cli.ExitInternal {
			t.Fatalf("%v -f: status %d: %s", args, wantCode, wantErr)
		}
		enforce := slices.Contains(cmd, "--enforce-quota")
		if refused := strings.Contains(want, "quota owner team-a, DeviceClass gpu.example.com, devices ≤ 2: holds 2, asks for 1 more"); cmd[0] == "place" && refused != enforce {
			t.Fatalf("%v -f: the quota refuses job-2: %v, want %v:\n%s", args, refused, enforce, want)
		}
		p := &pager{Interface: client, requests: map[string][]metav1.ListOptions{}}
		code, got, errOut := kubectlDRA(p, 1, append(slices.Clone(args), "-A")...)
		if code != wantCode || got != want {
			t.Errorf("%v: live status %d, from the file %d; stderr %s\nlive:\n%s\nfile:\n%s", args, code, wantCode, errOut, got, want)
		}
		reqs := p.requests["resourcequotas"]
		switch {
		case !enforce && len(reqs) != 0:
			t.Errorf("%v: %d lists of resourcequotas without --enforce-quota, want none", args, len(reqs))
		case enforce && (len(reqs) != 2 || reqs[0].Limit != 1 || reqs[1].Continue != "1"): // pages of one, two quotas
			t.Errorf("%v: lists of resourcequotas %v, want two pages of 1", args, reqs)
		}
	}

	forbid(client, "resourcequotas")
	if code, _, errOut := kubectlDRA(client, 0, "place", "-n", "team-a"); code == cli.ExitBadInput {
		t.Errorf("place without --enforce-quota, resourcequotas forbidden: status %d, stderr %s", code, errOut)
	}
	const want = "kubectl dra place: forbidden: 1 list refused; the user needs:\n  list resourcequotas in namespace team-a\n" +
		"(the ClusterRole of examples/dractl/kubectl-dra/deploy/clusterrole.yaml grants every one, and nothing more)\n"
	if code, out, errOut := kubectlDRA(client, 0, "place", "-n", "team-a", "--enforce-quota"); code != cli.ExitBadInput || out != "" || errOut != want {
		t.Errorf("place --enforce-quota, resourcequotas forbidden: status %d, stdout %q, stderr\n%s\nwant 3 and\n%s", code, out, errOut, want)
	}
}
