package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/dralloc/dralloc/examples/dractl/internal/cli"
)

// TestRealAPIServer: the objects of testdata/top created in a real kube-apiserver (claims with
// their allocations written to status), read with kubectl dra through a kubeconfig, give the output
// the file gives. It runs only when scripts/kube-apiserver has built the binary already (building
// it takes many minutes; fuzz/upstream's tests and CI do), and etcd is installed.
func TestRealAPIServer(t *testing.T) {
	if testing.Short() || os.Getenv("DRALLOC_APISERVER") == "skip" {
		t.Skip("short, or DRALLOC_APISERVER=skip")
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Skip(err)
		}
		cache = filepath.Join(home, ".cache")
	}
	if bins, _ := filepath.Glob(filepath.Join(cache, "dralloc", "kube-apiserver", "*", "bin", "kube-apiserver")); len(bins) == 0 {
		t.Skip("kube-apiserver is not built: run scripts/kube-apiserver build")
	}
	if _, err := exec.LookPath("etcd"); err != nil {
		t.Skip("etcd is not installed")
	}
	script, err := filepath.Abs("../../../scripts/kube-apiserver")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	start := func(args ...string) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, script, args...)
		// The script stops the servers once this test binary exits, even if it crashes.
		cmd.Env = append(os.Environ(), "DRALLOC_APISERVER_OWNER="+strconv.Itoa(os.Getpid()))
		cmd.WaitDelay = 10 * time.Second
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", script, args, err, out)
		}
	}
	start("start", dir)
	t.Cleanup(func() { start("stop", dir) })
	kubeconfigPath := filepath.Join(dir, "kubeconfig")
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}

	file := filepath.Join(testdata, "top", "cluster.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var list struct{ Items []map[string]any }
	if err := yaml.Unmarshal(data, &list); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "team-b"}}}
	if _, err := client.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, item := range list.Items {
		create(t, client, &unstructured.Unstructured{Object: item})
	}

	for _, cmd := range commands {
		for _, o := range []string{"text", "json"} {
			args := append(append([]string{}, cmd...), "-o", o, "--color", "never")
			wantCode, want, wantErr := dractl(append(append([]string{}, args...), "-f", file)...)
			if wantCode == cli.ExitBadInput {
				t.Fatalf("%v -f: %s", args, wantErr)
			}
			var out, errOut bytes.Buffer
			code := options().Run(append(args, "-A", "--kubeconfig", kubeconfigPath), strings.NewReader(""), &out, &errOut)
			if code != wantCode || out.String() != want {
				t.Errorf("%v: live status %d, from the file %d; stderr %s\nlive:\n%s\nfile:\n%s", args, code, wantCode, errOut.String(), out.String(), want)
			}
		}
	}
}

// create creates obj in the first version of its kind the server serves, and writes its status.
func create(t *testing.T, client dynamic.Interface, obj *unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	gv, err := schema.ParseGroupVersion(obj.GetAPIVersion())
	if err != nil {
		t.Fatal(err)
	}
	var k *kind
	for i := range kinds {
		if kindOf(kinds[i].resource) == obj.GetKind() {
			k = &kinds[i]
		}
	}
	if k == nil || k.group != gv.Group {
		t.Fatalf("%s %s: not a kind kubectl-dra lists", obj.GetAPIVersion(), obj.GetKind())
	}
	status, hasStatus := obj.Object["status"]
	obj = obj.DeepCopy()
	delete(obj.Object, "status")
	for _, v := range k.versions {
		obj.SetAPIVersion(schema.GroupVersion{Group: k.group, Version: v}.String())
		r := client.Resource(schema.GroupVersionResource{Group: k.group, Version: v, Resource: k.resource}).Namespace(obj.GetNamespace())
		created, err := r.Create(ctx, obj, metav1.CreateOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			t.Fatalf("create %s %s/%s: %v", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
		}
		if hasStatus {
			created.Object["status"] = status
			if _, err := r.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("status of %s %s/%s: %v", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
			}
		}
		return
	}
	t.Fatalf("%s: no version served", k.resource)
}
