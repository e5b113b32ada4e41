package operator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/dralloc/dralloc/fuzz/controlplane"
	"github.com/dralloc/dralloc/fuzz/upstream/internal/modproxy"
)

const (
	// version is what the walk-through installs: the checkout's modules, served at this version.
	version = "v0.1.0"
	// reader is the user bound to kubectl-dra's read-only ClusterRole; nobody is bound to nothing.
	reader, nobody = "operator-reader", "operator-nobody"
	driver         = "gpu.example.com"
)

// TestOperatorWalkThrough is issue 41's "done when", as a platform operator would go through it on a
// cluster that enforces RBAC: install kubectl-dra and the explainer by version; bind a read-only user to
// kubectl-dra's ClusterRole and run every command --as that user; `kubectl apply -k` the explainer and run
// it, as its Deployment would, under its ServiceAccount; see its Warning Event on a DRA pod that
// kube-scheduler leaves pending; find nothing denied in kube-apiserver's audit log; scrape every metric
// the explainer's README documents.
func TestOperatorWalkThrough(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries with client-go and runs a control plane")
	}
	root := repoRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), max(controlplane.TestTimeout()-time.Minute, 10*time.Minute))
	defer cancel()

	plane, err := controlplane.Start(controlplane.Options{
		Build: true, Scheduler: true, AuthorizationMode: "Node,RBAC", Audit: true, DirPrefix: "dralloc-operator-",
		// No kubelet lifts the node.kubernetes.io/not-ready taint this admission plugin puts on every new Node.
		DisableAdmission: []string{"TaintNodesByCondition"},
	})
	if errors.Is(err, controlplane.ErrUnavailable) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			for _, c := range []string{"kube-apiserver", "kube-scheduler"} {
				t.Logf("last lines of %s.log:\n%s", c, plane.LogTail(c, 20))
			}
		}
		if err := plane.Stop(); err != nil {
			t.Error(err)
		}
	}()
	cfg, err := clientcmd.BuildConfigFromFlags("", plane.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	apply := newApplier(t, cfg, admin)

	// 1. Install both by version, as a user with a fresh module cache would (TestGoInstallByVersion's way).
	tmp := t.TempDir()
	proxy := filepath.Join(tmp, "proxy")
	if _, err := modproxy.Serve(proxy, root, version); err != nil {
		t.Fatal(err)
	}
	in := modproxy.Installer{Proxy: proxy, Dir: filepath.Join(tmp, "user"), Offline: true}
	kubectlDRA, err := in.Install(ctx, modproxy.Library+"/examples/dractl/kubectl-dra@"+version)
	if err != nil {
		t.Fatal(err)
	}
	explainerBin, err := in.Install(ctx, modproxy.Library+"/examples/explainer@"+version)
	if err != nil {
		t.Fatal(err)
	}

	// 2. The read-only ClusterRole, bound to the reader as kubectl-dra's README says
	// (kubectl create clusterrolebinding kubectl-dra-reader --clusterrole=kubectl-dra-reader --user=NAME).
	role := readManifests(t, filepath.Join(root, "examples/dractl/kubectl-dra/deploy/clusterrole.yaml"))
	binding := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
		"metadata": map[string]any{"name": "kubectl-dra-reader"},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "kubectl-dra-reader"},
		"subjects": []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": reader}},
	}}
	apply.apply(ctx, t, append(role, binding))

	// 3. kubectl apply -k examples/explainer/deploy: everything it renders, in its order, on a fresh cluster.
	deploy := kustomizeBuild(t, filepath.Join(root, "examples/explainer/deploy"))
	apply.apply(ctx, t, deploy)
	sa, container := explainerOf(t, deploy)
	saUser := "system:serviceaccount:" + sa.GetNamespace() + ":" + sa.GetName()
	saGroups := []string{"system:serviceaccounts", "system:serviceaccounts:" + sa.GetNamespace(), "system:authenticated"}
	for _, obj := range deploy {
		// Wait until the authorizer allows each subject what its roles grant (its informers lag the writes).
		switch obj.GetKind() {
		case "ClusterRole":
			waitAuthorized(ctx, t, admin, saUser, saGroups, grants(t, rulesOf(t, obj), ""))
		case "Role":
			waitAuthorized(ctx, t, admin, saUser, saGroups, grants(t, rulesOf(t, obj), obj.GetNamespace()))
		}
	}
	waitAuthorized(ctx, t, admin, reader, []string{"system:authenticated"}, grants(t, rulesOf(t, role[0]), ""))

	// 4. The explainer as its Deployment runs it: the container's arguments, POD_NAME and POD_NAMESPACE,
	// the ServiceAccount's token (what the kubelet mounts, here from the TokenRequest API). Only --listen
	// differs: the port is the system's choice, read from its log.
	tokenKubeconfig := saKubeconfig(ctx, t, admin, cfg.Host, cfg.CAFile, sa.GetNamespace(), sa.GetName(), filepath.Join(tmp, "explainer.kubeconfig"))
	args := append(slices.DeleteFunc(slices.Clone(container.Args), func(a string) bool { return strings.HasPrefix(a, "--listen") }),
		"--listen=127.0.0.1:0", "--kubeconfig="+tokenKubeconfig)
	env := append(os.Environ(), "POD_NAME=dralloc-explainer-walkthrough", "POD_NAMESPACE="+sa.GetNamespace())
	explainer := start(ctx, t, env, explainerBin, args...)
	defer explainer.stop(t)
	address := regexp.MustCompile(`"Serving metrics and health" address="([^"]+)"`)
	var metricsURL string
	eventually(ctx, t, 2*time.Minute, "the explainer serves /readyz", func(ctx context.Context) error {
		if err := explainer.exited(); err != nil {
			t.Fatalf("the explainer exited: %v; its output:\n%s", err, tail(explainer.output.String(), 30))
		}
		m := address.FindStringSubmatch(explainer.output.String())
		if m == nil {
			return errors.New("no address in its log yet")
		}
		metricsURL = "http://" + m[1]
		_, err := get(ctx, metricsURL+"/readyz")
		return err
	})

	// 5. A DRA pod that fits nowhere: the only device is an A100, its claim asks for an H100.
	ns, p := "ml", "train"
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	o := metav1.CreateOptions{}
	_, err = admin.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, o)
	must("create namespace", err)
	// What kube-controller-manager's serviceaccount controller (not among those the harness runs) creates
	// in every namespace; the ServiceAccount admission plugin refuses a pod without it.
	_, err = admin.CoreV1().ServiceAccounts(ns).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, o)
	must("create ServiceAccount default", err)
	_, err = admin.CoreV1().Nodes().Create(ctx, node("gpu-node-1"), o)
	must("create node", err)
	_, err = admin.ResourceV1().ResourceSlices().Create(ctx, slice("gpu-node-1", "gpu-0", "a100"), o)
	must("create slice", err)
	for _, c := range []string{"a100", "h100"} {
		_, err = admin.ResourceV1().DeviceClasses().Create(ctx, class(c), o)
		must("create class", err)
	}
	_, err = admin.ResourceV1().ResourceClaims(ns).Create(ctx, claim(ns, p, "h100"), o)
	must("create claim", err)
	_, err = admin.CoreV1().Pods(ns).Create(ctx, pod(ns, p, p), o)
	must("create pod", err)
	const why = `claim ml/train, request "gpu": class h100 matched no device`
	var event v1.Event
	eventually(ctx, t, 3*time.Minute, "the explainer's Warning on pod ml/train", func(ctx context.Context) error {
		if err := explainer.exited(); err != nil {
			t.Fatalf("the explainer exited: %v; its output:\n%s", err, tail(explainer.output.String(), 30))
		}
		evs, err := admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + p + ",reason=DRAUnschedulable"})
		if err != nil {
			return err
		}
		// The explanation as it stands once every object is in the explainer's caches. Should a cache
		// lag (the claim not seen yet), the Event says so first, and the current one follows once
		// --min-interval has passed.
		for _, ev := range evs.Items {
			if strings.Contains(ev.Message, why) {
				event = ev
				return nil
			}
		}
		return fmt.Errorf("%d DRAUnschedulable events, none saying %q; the explainer's log ends:\n%s", len(evs.Items), why, tail(explainer.output.String(), 10))
	})
	if event.Type != v1.EventTypeWarning || event.Source.Component != "dralloc-explainer" {
		t.Errorf("event %s %s from %q: %q; want a Warning from dralloc-explainer", event.Type, event.Reason, event.Source.Component, event.Message)
	}
	if cur, err := admin.CoreV1().Pods(ns).Get(ctx, p, metav1.GetOptions{}); err != nil || cur.Spec.NodeName != "" || !unschedulable(cur) {
		t.Errorf("pod ml/train: %v; want it pending, marked unschedulable by kube-scheduler", err)
	}

	// 6. Every kubectl dra command, as kubectl runs a plugin (the operator's KUBECONFIG in the environment),
	// --as the reader: the output and status the cluster's admin gets, no refusal and no warning.
	home := filepath.Join(tmp, "home")
	must("home", os.MkdirAll(home, 0o700))
	pluginEnv := append(os.Environ(), "KUBECONFIG="+plane.Kubeconfig, "HOME="+home)
	dra := func(args ...string) (int, string, string) {
		cmd := exec.CommandContext(ctx, kubectlDRA, args...)
		cmd.Env = pluginEnv
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("kubectl-dra %v: %v", args, err)
		}
		return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
	}
	commands := map[string][]string{
		"explain": {"explain", "pod/" + p}, "place": {"place"}, "lint": {"lint"},
		"taints": {"taints", "--now", "2026-12-01T12:00:00Z"}, "inventory": {"inventory"}, "top": {"top"}, "capacity": {"capacity"},
	}
	_, help, _ := dra("--help")
	listed := helpCommands(help)
	if len(listed) < 8 {
		t.Fatalf("kubectl dra --help lists %d commands: %q", len(listed), listed)
	}
	for _, name := range listed {
		if name == "version" { // it reads no cluster, and takes no kubectl flags
			code, out, errOut := dra("version")
			if code != 0 || !strings.Contains(out, "kubectl dra "+version+"\n") || errOut != "" {
				t.Errorf("kubectl dra version: status %d, stderr %q, stdout\n%s", code, errOut, out)
			}
			continue
		}
		args, ok := commands[name]
		if !ok {
			t.Errorf("kubectl dra %s: a command the walk-through does not run; add it", name)
			continue
		}
		args = append(slices.Clone(args), "-n", ns)
		wantCode, want, wantErr := dra(args...)
		code, out, errOut := dra(append(args, "--as", reader)...)
		refused := strings.Contains(errOut, "forbidden") || strings.Contains(errOut, "warning")
		if code != wantCode || out != want || errOut != wantErr || refused || code > 1 {
			t.Errorf("kubectl dra %v --as %s: status %d, stderr %q; the admin's status %d, stderr %q; same output: %v",
				args, reader, code, errOut, wantCode, wantErr, out == want)
		}
		if name == "explain" && (code != 1 || !strings.Contains(out, "rejected by DeviceClass h100")) {
			t.Errorf("kubectl dra explain pod/%s --as %s: status %d, want 1 and the class the explainer names:\n%s", p, reader, code, out)
		}
	}
	// Not vacuous: a user bound to nothing is refused, named, with status 3, and the audit log shows it.
	if code, _, errOut := dra("top", "-n", ns, "--as", nobody); code != 3 || !strings.Contains(errOut, "forbidden") {
		t.Errorf("kubectl dra top --as %s: status %d, stderr %q; want 3, forbidden", nobody, code, errOut)
	}

	// 7. Every series the README documents, from the leader, at zero where nothing happened.
	readme, err := os.ReadFile(filepath.Join(root, "examples/explainer/README.md"))
	must("read the explainer's README", err)
	documented := documentedMetrics(string(readme))
	if len(documented) < 10 {
		t.Fatalf("the explainer's README documents %d metrics: %q", len(documented), documented)
	}
	want := []string{
		`dralloc_explainer_leader 1`,
		`dralloc_explainer_pending_pods{reason="ClassSelectorFalse"} 1`,
		`dralloc_explainer_records_total{outcome="failed"} 0`,
		`dralloc_explainer_ready{check="informers"} 1`,
		`dralloc_explainer_ready{check="lease"} 1`,
		`dralloc_explainer_build_info{goversion="` + goVersion(t) + `",revision="unknown",version="` + version + `"} 1`,
		`dralloc_explainer_devices{driver="` + driver + `",pool="gpu-node-1",state="free"} 1`,
		`dralloc_explainer_class_devices{class="a100",state="free"} 1`,
		`dralloc_explainer_class_devices{class="h100",state="free"} 0`,
		`dralloc_explainer_class_devices{class="h100",state="used"} 0`,
		`workqueue_retries_total{name="dralloc-explainer"} 0`,
	}
	var scrape string
	eventually(ctx, t, time.Minute, "every documented series in /metrics", func(ctx context.Context) error {
		scrape, err = get(ctx, metricsURL+"/metrics")
		if err != nil {
			return err
		}
		var missing []string
		for _, name := range documented {
			if !hasSeries(scrape, name) {
				missing = append(missing, name)
			}
		}
		for _, line := range want {
			if !strings.Contains(scrape, "\n"+line+"\n") {
				missing = append(missing, line)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("missing %q", missing)
		}
		return nil
	})
	if !regexp.MustCompile(`\ndralloc_explainer_records_total\{outcome="written"\} [1-9]`).MatchString(scrape) {
		t.Errorf("records_total counts no Event written:\n%s", grep(scrape, "records_total"))
	}
	if !regexp.MustCompile(`\nrest_client_requests_total\{code="201",host="[^"]+",method="POST"\} [1-9]`).MatchString(scrape) {
		t.Errorf("no POST answered 201 (the Event, the Lease) in rest_client_requests_total:\n%s", grep(scrape, "rest_client_requests_total"))
	}

	// 8. Nothing denied: the explainer stopped (releasing its Lease), a last request marks the end of the
	// log, and the audit log holds no 401 or 403 but those of the user bound to nothing.
	explainer.stop(t)
	if out := explainer.output.String(); strings.Contains(strings.ToLower(out), "forbidden") {
		t.Errorf("the explainer's log mentions a refusal:\n%s", grep(out, "orbidden"))
	}
	marker := fmt.Sprintf("dralloc-walkthrough-end-%d", time.Now().UnixNano())
	if _, err := admin.CoreV1().Namespaces().Get(ctx, marker, metav1.GetOptions{}); err == nil {
		t.Fatalf("namespace %s exists", marker)
	}
	eventually(ctx, t, time.Minute, "the audit log records the last request", func(context.Context) error {
		return auditHas(plane.AuditLog, "/api/v1/namespaces/"+marker)
	})
	denied, seen := denials(t, plane.AuditLog, nobody)
	if len(denied) > 0 {
		t.Errorf("kube-apiserver refused %d requests:\n%s", len(denied), strings.Join(denied, "\n"))
	}
	for _, who := range []string{reader, saUser} {
		if seen[who] == 0 {
			t.Errorf("the audit log holds no request of %s", who)
		}
	}
	if d, _ := denials(t, plane.AuditLog); len(d) == 0 {
		t.Errorf("the audit log holds no refusal of %s, who is bound to nothing", nobody)
	}
}

// repoRoot is the root of the repository the test runs in; a shallow clone may not hold the commit the
// modules require, which the proxy serves.
func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not in a git work tree: %v", err)
	}
	root := strings.TrimSpace(string(out))
	if out, _ := exec.Command("git", "-C", root, "rev-parse", "--is-shallow-repository").Output(); strings.TrimSpace(string(out)) == "true" {
		t.Skip("a shallow clone may not hold the commit the modules require")
	}
	return root
}

// explainerOf finds the ServiceAccount and the explainer's container in what deploy/ renders.
func explainerOf(t *testing.T, objs []*unstructured.Unstructured) (sa *unstructured.Unstructured, container v1.Container) {
	t.Helper()
	var found bool
	for _, obj := range objs {
		switch obj.GetKind() {
		case "ServiceAccount":
			sa = obj
		case "Deployment":
			cs, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
			if len(cs) != 1 {
				t.Fatalf("Deployment %s has %d containers, want 1", obj.GetName(), len(cs))
			}
			c := cs[0].(map[string]any)
			args, _, _ := unstructured.NestedStringSlice(c, "args")
			container, found = v1.Container{Name: fmt.Sprint(c["name"]), Args: args}, true
			if name, _, _ := unstructured.NestedString(obj.Object, "spec", "template", "spec", "serviceAccountName"); sa != nil && name != sa.GetName() {
				t.Fatalf("Deployment %s runs as %q, the ServiceAccount is %q", obj.GetName(), name, sa.GetName())
			}
		}
	}
	if sa == nil || !found {
		t.Fatal("deploy/ renders no ServiceAccount or no Deployment")
	}
	return sa, container
}

// saKubeconfig writes a kubeconfig that authenticates with a token of the ServiceAccount, as the one a pod
// of it gets, and returns its path.
func saKubeconfig(ctx context.Context, t *testing.T, admin kubernetes.Interface, server, caFile, ns, name, path string) string {
	t.Helper()
	tr, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token of ServiceAccount %s/%s: %v", ns, name, err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["cluster"] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: caFile}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts["default"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: name, Namespace: ns}
	kc.CurrentContext = "default"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func get(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	return string(body), nil
}

// helpCommands are the commands `kubectl dra --help` lists.
func helpCommands(help string) []string {
	_, after, ok := strings.Cut(help, "\nCommands:\n")
	if !ok {
		return nil
	}
	var out []string
	for _, l := range strings.Split(after, "\n") {
		if !strings.HasPrefix(l, "  ") {
			break
		}
		out = append(out, strings.Fields(l)[0])
	}
	return out
}

// clientGoWorkqueue are the series client-go's workqueue metrics provider exports per queue, named as
// kube-controller-manager exports them (k8s.io/component-base/metrics/prometheus/workqueue): what the
// README's workqueue_* stands for.
var clientGoWorkqueue = []string{
	"workqueue_depth", "workqueue_adds_total", "workqueue_queue_duration_seconds", "workqueue_work_duration_seconds",
	"workqueue_unfinished_work_seconds", "workqueue_longest_running_processor_seconds", "workqueue_retries_total",
}

// documentedMetrics are the metric names the explainer's README names in backquotes, workqueue_*
// expanded.
func documentedMetrics(readme string) []string {
	var out []string
	for _, m := range regexp.MustCompile("`((?:dralloc_explainer|rest_client)_[a-z_]+|workqueue_\\*)").FindAllStringSubmatch(readme, -1) {
		if m[1] == "workqueue_*" {
			out = append(out, clientGoWorkqueue...)
		} else {
			out = append(out, m[1])
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// hasSeries says whether a scrape holds a sample of the metric (a histogram's through its _count).
func hasSeries(scrape, name string) bool {
	for _, n := range []string{name, name + "_count"} {
		if strings.Contains(scrape, "\n"+n+"{") || strings.Contains(scrape, "\n"+n+" ") {
			return true
		}
	}
	return false
}

func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// goVersion is the go command's version, which go install builds with.
func goVersion(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

func unschedulable(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

func node(name string) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
	n.Status.Capacity = v1.ResourceList{v1.ResourcePods: resource.MustParse("110"), v1.ResourceCPU: resource.MustParse("32"), v1.ResourceMemory: resource.MustParse("128Gi")}
	n.Status.Allocatable = n.Status.Capacity
	return n
}

// slice publishes one device of the model in the pool named after the node.
func slice(nodeName, device, model string) *resourceapi.ResourceSlice {
	return &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: nodeName + "-" + driver},
		Spec: resourceapi.ResourceSliceSpec{
			Driver: driver, NodeName: ptr.To(nodeName),
			Pool: resourceapi.ResourcePool{Name: nodeName, Generation: 1, ResourceSliceCount: 1},
			Devices: []resourceapi.Device{{Name: device, Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				"model": {StringValue: ptr.To(model)},
			}}},
		},
	}
}

// class selects the driver's devices of the model it is named after.
func class(model string) *resourceapi.DeviceClass {
	return &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: model}, Spec: resourceapi.DeviceClassSpec{
		Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
			Expression: `device.driver == "` + driver + `" && device.attributes["` + driver + `"].model == "` + model + `"`,
		}}},
	}}
}

func claim(ns, name, className string) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: resourceapi.ResourceClaimSpec{
		Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{
			DeviceClassName: className, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1,
		}}}},
	}}
}

func pod(ns, name, claimName string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.PodSpec{
		Containers: []v1.Container{{Name: "train", Image: "registry.k8s.io/pause:3.10",
			Resources: v1.ResourceRequirements{Claims: []v1.ResourceClaim{{Name: "gpu"}}}}},
		ResourceClaims: []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To(claimName)}},
	}}
}
