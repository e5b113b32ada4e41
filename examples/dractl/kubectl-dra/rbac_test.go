package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/dralloc/dralloc/examples/dractl/internal/cli"
)

// TestClusterRoleGrantsWhatIsListed: the shipped ClusterRole grants list on exactly the kinds
// kubectl dra lists, each in its API group, and no other verb or resource.
func TestClusterRoleGrantsWhatIsListed(t *testing.T) {
	role := readClusterRole(t)
	var granted, want []string
	for _, r := range role.Rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					granted = append(granted, v+" "+g+"/"+res)
				}
			}
		}
		if len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 {
			t.Errorf("rule %+v: names resources or URLs", r)
		}
	}
	for _, k := range kinds {
		want = append(want, "list "+k.group+"/"+k.resource)
	}
	slices.Sort(granted)
	slices.Sort(want)
	if !slices.Equal(granted, want) {
		t.Errorf("granted %v\nwant    %v", granted, want)
	}
}

func readClusterRole(t *testing.T) *rbacv1.ClusterRole {
	t.Helper()
	data, err := os.ReadFile("deploy/clusterrole.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(data, &role); err != nil {
		t.Fatal(err)
	}
	if role.Kind != "ClusterRole" || role.Name != "kubectl-dra-reader" {
		t.Fatalf("deploy/clusterrole.yaml: %s %s, want ClusterRole kubectl-dra-reader", role.Kind, role.Name)
	}
	return &role
}

// TestRealAPIServerRBAC: against a real kube-apiserver enforcing RBAC, a user bound to the shipped
// ClusterRole runs every command (and place --enforce-quota) with nothing denied and the output the
// cluster's admin gets; a user holding only a Role in one namespace (pods, ResourceClaimTemplates,
// PodGroups there) is told in one message every cluster-wide read missing, and warned of the
// DeviceTaintRules.
func TestRealAPIServerRBAC(t *testing.T) {
	script := apiserverScript(t)
	file := filepath.Join(testdata, "top", "cluster.yaml")
	kubeconfig := sameLive(t, script, file, "DRALLOC_APISERVER_AUTHORIZATION_MODE=RBAC")
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rbac := func(resource string) dynamic.NamespaceableResourceInterface {
		return client.Resource(schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: resource})
	}
	role := readClusterRole(t)
	role.APIVersion, role.Kind = "rbac.authorization.k8s.io/v1", "ClusterRole"
	for _, o := range []struct {
		resource, ns string
		obj          any
	}{
		{"clusterroles", "", role},
		{"clusterrolebindings", "", &rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: "kubectl-dra-reader"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "kubectl-dra-reader"},
			Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: "reader"}},
		}},
		{"roles", "default", &rbacv1.Role{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
			ObjectMeta: metav1.ObjectMeta{Name: "dev", Namespace: "default"},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}},
				{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceclaimtemplates"}, Verbs: []string{"list"}},
				{APIGroups: []string{"scheduling.k8s.io"}, Resources: []string{"podgroups"}, Verbs: []string{"list"}},
			},
		}},
		{"rolebindings", "default", &rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: "dev", Namespace: "default"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "dev"},
			Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: "dev"}},
		}},
	} {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o.obj)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rbac(o.resource).Namespace(o.ns).Create(ctx, &unstructured.Unstructured{Object: m}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", o.resource, err)
		}
	}
	run := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := options().Run(append(args, "--kubeconfig", kubeconfig), strings.NewReader(""), &out, &errOut)
		return code, out.String(), errOut.String()
	}
	// The authorizer reads roles and bindings from its informers: wait (a bounded number of tries)
	// until both users' bindings are seen, so that what follows is the policy's answer; a binding
	// that never takes effect is reported by the checks below.
	for try := 0; try < 100; try++ {
		_, _, readerErr := run("inventory", "-A", "--as", "reader")
		_, _, devErr := run("inventory", "-n", "default", "--as", "dev")
		if !strings.Contains(readerErr, "forbidden") && !strings.Contains(devErr, "list pods in namespace default") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	// With --enforce-quota the ResourceQuotas are listed too, which the ClusterRole grants.
	for _, cmd := range append(slices.Clone(commands), []string{"place", "--enforce-quota"}) {
		for _, scope := range [][]string{{"-A"}, {"-n", "default"}, {"-nteam-b"}} {
			args := append(append(slices.Clone(cmd), "-o", "json"), scope...)
			wantCode, want, wantErr := run(args...)
			code, got, errOut := run(append(args, "--as", "reader", "--as-group", "system:authenticated")...)
			if code != wantCode || got != want || errOut != wantErr {
				t.Errorf("%v --as reader: status %d, stderr %q; the admin's status %d, stderr %q; same output %v", args, code, errOut, wantCode, wantErr, got == want)
			}
		}
	}
	const want = "kubectl dra top: warning: list resource.k8s.io devicetaintrules (cluster-scoped: a ClusterRole): read as if the cluster did not serve them\n" +
		"kubectl dra top: forbidden: 4 lists refused; the user needs:\n" +
		"  list nodes (cluster-scoped: a ClusterRole)\n" +
		"  list resource.k8s.io resourceslices (cluster-scoped: a ClusterRole)\n" +
		"  list resource.k8s.io deviceclasses (cluster-scoped: a ClusterRole)\n" +
		"  list resource.k8s.io resourceclaims in every namespace (a ClusterRole: a device that a claim of any namespace holds is in use)\n" +
		"(the ClusterRole of examples/dractl/kubectl-dra/deploy/clusterrole.yaml grants every one, and nothing more)\n"
	if code, out, errOut := run("top", "-n", "default", "--as", "dev"); code != cli.ExitBadInput || out != "" || errOut != want {
		t.Errorf("top --as dev: status %d, stdout %q, stderr\n%s\nwant 3 and\n%s", code, out, errOut, want)
	}
}
