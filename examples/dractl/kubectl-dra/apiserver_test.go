package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/dralloc/dralloc/examples/dractl/internal/cli"
)

// TestRealAPIServer: the objects of a test cluster created in a real kube-apiserver (claims with
// their allocations written to status), read with kubectl dra through a kubeconfig, give the output
// the file gives, for every command: testdata/top (shared devices, counters, a DeviceTaintRule) and
// testdata/free (a republished pool, an incomplete pool, a tainted GPU, and pending pods, so that
// capacity's FREE, F(M) and STRANDED are compared). It runs only when scripts/kube-apiserver has
// built the binary already (building it takes many minutes; fuzz/upstream's tests and CI do), and
// etcd is installed.
func TestRealAPIServer(t *testing.T) {
	script := apiserverScript(t)
	t.Run("top", func(t *testing.T) { sameLive(t, script, filepath.Join(testdata, "top", "cluster.yaml")) })
	t.Run("free", func(t *testing.T) {
		kubeconfig := sameLive(t, script, filepath.Join(testdata, "free", "cluster.yaml"))
		liveFree(t, kubeconfig)
	})
}

// apiserverScript is scripts/kube-apiserver, or skips t when it cannot start a server: in -short,
// with DRALLOC_APISERVER=skip, before the binary is built (building it takes many minutes;
// fuzz/upstream's tests and CI do), or without etcd.
func apiserverScript(t *testing.T) string {
	t.Helper()
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
	return script
}

// liveFree checks capacity's figures for testdata/free read live through kubeconfig.
func liveFree(t *testing.T, kubeconfig string) {
	// The figures themselves, read live, as testdata/free/cluster.yaml works them out: the tainted
	// GPU, the incomplete pool and the older generation are not free (3 GPUs, not 8); for train
	// alone node-c's free GPU, which train cannot use, is stranded.
	for _, tc := range []struct {
		mix  []string
		want string
	}{
		{nil, "free 3 F 0.5 stranded 0; node-a 2/0/0; node-c 1/0.5/0"},
		{[]string{"--mix", "default/train=1"}, "free 3 F 1 stranded 1; node-a 2/0/0; node-c 1/1/1"},
	} {
		var out, errOut bytes.Buffer
		args := append([]string{"capacity", "-o", "json", "-A", "--kubeconfig", kubeconfig}, tc.mix...)
		if code := options().Run(args, strings.NewReader(""), &out, &errOut); code != cli.ExitOK {
			t.Fatalf("%v: status %d, stderr %s", args, code, errOut.String())
		}
		var rep struct {
			Fragmentation struct {
				Free, F, Stranded float64
				Nodes             []struct {
					Node              string
					Free, F, Stranded float64
				}
			}
		}
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		fr := rep.Fragmentation
		got := fmt.Sprintf("free %g F %g stranded %g", fr.Free, fr.F, fr.Stranded)
		for _, n := range fr.Nodes {
			got += fmt.Sprintf("; %s %g/%g/%g", n.Node, n.Free, n.F, n.Stranded)
		}
		if got != tc.want {
			t.Errorf("%v: got %s, want %s", tc.mix, got, tc.want)
		}
	}
}

// sameLive creates the objects of file in a kube-apiserver of its own, started with env added to
// the script's environment, and compares the output of every command, read live, with the output
// of the file. It returns the server's kubeconfig; the
// server runs until t ends.
func sameLive(t *testing.T, script, file string, env ...string) string {
	dir := t.TempDir()
	start := func(args ...string) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, script, args...)
		// The script stops the servers once this test binary exits, even if it crashes.
		// No kubelet lifts the not-ready taint TaintNodesByCondition puts on every new Node, which
		// the file's Nodes do not have.
		cmd.Env = append(os.Environ(), "DRALLOC_APISERVER_OWNER="+strconv.Itoa(os.Getpid()), "DRALLOC_APISERVER_DISABLE_ADMISSION=TaintNodesByCondition")
		cmd.Env = append(cmd.Env, env...)
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

	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var list struct{ Items []map[string]any }
	if err := yaml.Unmarshal(data, &list); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Each namespace the objects are in, with the ServiceAccount "default" that the ServiceAccount
	// admission plugin gives every pod (its controller does not run here). kube-apiserver makes
	// namespace default itself.
	namespaces := map[string]bool{}
	for _, item := range list.Items {
		ns := (&unstructured.Unstructured{Object: item}).GetNamespace()
		if ns == "" || namespaces[ns] {
			continue
		}
		namespaces[ns] = true
		if ns != "default" {
			obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
			if _, err := client.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		sa := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "default"}}}
		if _, err := client.Resource(schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}).Namespace(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The file given to dractl is the objects with the UIDs the server gave them, as kubectl get
	// writes them: a pod's UID is in what place writes (the owner of the claims it makes).
	for _, item := range list.Items {
		obj := &unstructured.Unstructured{Object: item}
		obj.SetUID(create(t, client, obj))
	}
	data, err = yaml.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": list.Items})
	if err != nil {
		t.Fatal(err)
	}
	file = filepath.Join(dir, filepath.Base(file))
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}

	for _, cmd := range commands {
		for _, o := range []string{"text", "json"} {
			args := append(append([]string{}, cmd...), "-o", o, "--color", "never")
			wantCode, want, wantErr := dractl(append(append([]string{}, args...), "-f", file)...)
			// Where the pods were read from is said in the words of each.
			want = strings.ReplaceAll(want, "No pods in the input.", "No pods in any namespace.")
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
	return kubeconfigPath
}

// create creates obj in the first version of its kind the server serves, writes its status, and
// returns the UID the server gave it.
func create(t *testing.T, client dynamic.Interface, obj *unstructured.Unstructured) types.UID {
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
		return created.GetUID()
	}
	t.Fatalf("%s: no version served", k.resource)
	return ""
}
