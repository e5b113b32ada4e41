package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/dralloc/dralloc/allocator/headroom/trace"
	"github.com/dralloc/dralloc/examples/scheduler-plugin/fragscore"
)

// FeatureGates are those scripts/kube-apiserver starts the control plane with; the scheduler gets the
// same.
const FeatureGates = "AllAlpha=true,AllBeta=true,StorageVersionAPI=false,UnknownVersionInteroperabilityProxy=false"

// Profile is a scheduler profile to replay with.
type Profile struct {
	// Name names it in the table.
	Name string
	// Plugin enables fragscore with Weight beside the default plugins; false is kube-scheduler's
	// default profile.
	Plugin bool
	Weight int32
	// Packing sets NodeResourcesFit's scoring strategy to MostAllocated (cpu and memory, weight 1
	// each), as config/profile.yaml does: among the nodes the plugin rates alike the most used then
	// takes the pod, where LeastAllocated would spread.
	Packing bool
	// Args are the plugin's args (a mix, a mode); nil means the defaults.
	Args *fragscore.Args
	// PercentageOfNodesToScore is the configuration's field of that name; 0 leaves kube-scheduler's
	// adaptive default.
	PercentageOfNodesToScore int32
}

// Cluster is a control plane the slice's nodes, GPUs and DeviceClass were created in.
type Cluster struct {
	Kubeconfig string
	// Scheduler is the kube-scheduler binary built with the plugin (this module's main).
	Scheduler string
	// Dir holds the scheduler's config and log.
	Dir string
	// WaitPerPod bounds the wait for one pod to be bound or found unschedulable.
	WaitPerPod time.Duration

	client kubernetes.Interface
}

// NewCluster connects to the API server of the kubeconfig and creates the slice's Nodes,
// ResourceSlices and DeviceClass. Slices of the same nodes (of one step and number of nodes, other
// seeds) can then be run there.
func NewCluster(ctx context.Context, kubeconfig, scheduler, dir string, s *Slice) (*Cluster, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 500, 1000
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Kubeconfig: kubeconfig, Scheduler: scheduler, Dir: dir, WaitPerPod: 3 * time.Minute, client: client}
	o := s.Objects
	// The ServiceAccount admission plugin wants the pods' ServiceAccount; no controller manager runs to
	// create it.
	sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: trace.Namespace, Name: "default"}}
	if _, err := client.CoreV1().ServiceAccounts(sa.Namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("ServiceAccount %s/%s: %w", sa.Namespace, sa.Name, err)
	}
	if _, err := client.ResourceV1().DeviceClasses().Create(ctx, o.Class, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("DeviceClass %s: %w", o.Class.Name, err)
	}
	for _, n := range o.Nodes {
		if _, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("node %s: %w", n.Name, err)
		}
	}
	for _, rs := range o.Slices {
		if _, err := client.ResourceV1().ResourceSlices().Create(ctx, rs, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("ResourceSlice %s: %w", rs.Name, err)
		}
	}
	return c, nil
}

// LiveResult is a Result and how long the tasks took from the first creation to the last decision.
type LiveResult struct {
	Result
	Elapsed time.Duration
}

// Run starts the scheduler with the profile, creates the slice's tasks one by one in arrival order (a
// ResourceClaim from the task's template and a pod using it), waits for each until it is bound or
// unschedulable (an unschedulable task is deleted, as the offline replay forgets it), reads the GPUs
// left unallocated from the claims' allocations, then stops the scheduler and deletes the pods and
// claims so that the next Run starts on an empty cluster.
func (c *Cluster) Run(ctx context.Context, p Profile, s *Slice) (LiveResult, error) {
	stop, err := c.startScheduler(p)
	if err != nil {
		return LiveResult{}, err
	}
	res, runErr := c.tasks(ctx, s)
	stop()
	if runErr != nil {
		runErr = fmt.Errorf("%w; the scheduler's log ends:\n%s", runErr, tail(filepath.Join(c.Dir, "kube-scheduler-"+p.Name+".log"), 20))
	}
	if err := c.clean(ctx); err != nil {
		return res, errors.Join(runErr, err)
	}
	return res, runErr
}

func (c *Cluster) tasks(ctx context.Context, s *Slice) (LiveResult, error) {
	o := s.Objects
	templates := map[string]*resourceapi.ResourceClaimTemplate{}
	for _, t := range o.Templates {
		templates[t.Name] = t
	}
	res := LiveResult{Result: Result{Tasks: len(o.Trace.Tasks), GPUs: o.GPUs}}
	start := time.Now()
	for i := range o.Trace.Tasks {
		pod, err := c.claimFor(ctx, o, templates, i)
		if err != nil {
			return res, err
		}
		name := pod.Name
		if _, err := c.client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return res, fmt.Errorf("pod %s: %w", name, err)
		}
		bound, err := c.wait(ctx, pod.Namespace, name)
		if err != nil {
			return res, err
		}
		if !bound {
			res.Failed++
			zero := int64(0)
			if err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
				return res, fmt.Errorf("pod %s: %w", name, err)
			}
		}
	}
	res.Elapsed = time.Since(start)
	claims, err := c.client.ResourceV1().ResourceClaims(trace.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return res, err
	}
	var allocated float64
	for _, claim := range claims.Items {
		if claim.Status.Allocation == nil {
			continue
		}
		for _, d := range claim.Status.Allocation.Devices.Results {
			if q, ok := d.ConsumedCapacity[trace.Shares]; ok {
				allocated += float64(q.Value()) / 1000
			} else {
				allocated++
			}
		}
	}
	res.Unallocated = float64(o.GPUs) - allocated
	return res, nil
}

// Burst measures throughput: it starts the scheduler with the profile, creates every task of the slice
// (claims, then pods, in arrival order) without waiting, and polls until the scheduler has decided every
// pod once (bound, or marked unschedulable); Elapsed runs from the first pod created to that point, so
// pods/s is Tasks ÷ Elapsed. The arrival order is the queue's, not one pod at a time, so its
// Unallocated is not the paper's experiment; it is reported, Failed too. The cluster is cleaned after.
func (c *Cluster) Burst(ctx context.Context, p Profile, s *Slice) (LiveResult, error) {
	stop, err := c.startScheduler(p)
	if err != nil {
		return LiveResult{}, err
	}
	res, runErr := c.burst(ctx, s)
	stop()
	if err := c.clean(ctx); err != nil {
		return res, errors.Join(runErr, err)
	}
	return res, runErr
}

func (c *Cluster) burst(ctx context.Context, s *Slice) (LiveResult, error) {
	o := s.Objects
	templates := map[string]*resourceapi.ResourceClaimTemplate{}
	for _, t := range o.Templates {
		templates[t.Name] = t
	}
	res := LiveResult{Result: Result{Tasks: len(o.Trace.Tasks), GPUs: o.GPUs}}
	var podList []*v1.Pod
	for i := range o.Trace.Tasks {
		pod, err := c.claimFor(ctx, o, templates, i)
		if err != nil {
			return res, err
		}
		podList = append(podList, pod)
	}
	start := time.Now()
	for _, pod := range podList {
		if _, err := c.client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return res, fmt.Errorf("pod %s: %w", pod.Name, err)
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Duration(len(podList))*c.WaitPerPod/10+c.WaitPerPod, true, func(ctx context.Context) (bool, error) {
		pods, err := c.client.CoreV1().Pods(trace.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		decided, failed := 0, 0
		for _, pod := range pods.Items {
			if pod.Spec.NodeName != "" {
				decided++
				continue
			}
			for _, cond := range pod.Status.Conditions {
				if cond.Type == v1.PodScheduled && cond.Status == v1.ConditionFalse {
					decided++
					failed++
				}
			}
		}
		res.Failed = failed
		return decided == len(podList), nil
	})
	if err != nil {
		return res, fmt.Errorf("not every pod was decided: %w", err)
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// claimFor creates task i's ResourceClaim (from its template; a task without GPUs has none) and returns
// its pod, which uses that claim by name.
func (c *Cluster) claimFor(ctx context.Context, o *trace.Objects, templates map[string]*resourceapi.ResourceClaimTemplate, i int) (*v1.Pod, error) {
	name := fmt.Sprintf("task-%05d", i)
	pod := o.Pod(i, name)
	pod.UID = ""
	for j := range pod.Spec.Containers {
		pod.Spec.Containers[j].Image = "registry.k8s.io/pause:3.10" // never pulled: no kubelet runs
	}
	if len(pod.Spec.ResourceClaims) == 1 {
		t := templates[*pod.Spec.ResourceClaims[0].ResourceClaimTemplateName]
		claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: name}, Spec: t.Spec.Spec}
		if _, err := c.client.ResourceV1().ResourceClaims(pod.Namespace).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("ResourceClaim %s: %w", name, err)
		}
		pod.Spec.ResourceClaims[0] = v1.PodResourceClaim{Name: pod.Spec.ResourceClaims[0].Name, ResourceClaimName: &name}
	}
	return pod, nil
}

// wait polls the pod until it is bound (true) or the scheduler found it unschedulable (false).
func (c *Cluster) wait(ctx context.Context, namespace, name string) (bool, error) {
	var bound bool
	err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, c.WaitPerPod, true, func(ctx context.Context) (bool, error) {
		pod, err := c.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if pod.Spec.NodeName != "" {
			bound = true
			return true, nil
		}
		for _, cond := range pod.Status.Conditions {
			if cond.Type == v1.PodScheduled && cond.Status == v1.ConditionFalse && cond.Reason == v1.PodReasonUnschedulable {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return false, fmt.Errorf("pod %s/%s: neither bound nor unschedulable: %w", namespace, name, err)
	}
	return bound, nil
}

// clean deletes the pods, then frees and deletes the claims (no kube-controller-manager runs to drop
// the scheduler's finalizer), and waits until both are gone.
func (c *Cluster) clean(ctx context.Context) error {
	ns := trace.Namespace
	zero := int64(0)
	if err := c.client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{}); err != nil {
		return err
	}
	claims, err := c.client.ResourceV1().ResourceClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range claims.Items {
		claim := &claims.Items[i]
		if claim.Status.Allocation != nil || len(claim.Status.ReservedFor) > 0 {
			claim.Status = resourceapi.ResourceClaimStatus{}
			if claim, err = c.client.ResourceV1().ResourceClaims(ns).UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("ResourceClaim %s: %w", claims.Items[i].Name, err)
			}
		}
		if len(claim.Finalizers) > 0 {
			claim.Finalizers = nil
			if _, err = c.client.ResourceV1().ResourceClaims(ns).Update(ctx, claim, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("ResourceClaim %s: %w", claim.Name, err)
			}
		}
		if err := c.client.ResourceV1().ResourceClaims(ns).Delete(ctx, claim.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("ResourceClaim %s: %w", claim.Name, err)
		}
	}
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := c.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		claims, err := c.client.ResourceV1().ResourceClaims(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return len(pods.Items) == 0 && len(claims.Items) == 0, nil
	})
}

// startScheduler starts the scheduler binary with the profile and returns how to stop it (that
// process, by its id).
func (c *Cluster) startScheduler(p Profile) (func(), error) {
	cfg, err := c.config(p)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(c.Dir, "scheduler-"+p.Name+".yaml")
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(c.Dir, "kube-scheduler-"+p.Name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(c.Scheduler, "--config", path, "--authentication-kubeconfig", c.Kubeconfig,
		"--authorization-kubeconfig", c.Kubeconfig, "--bind-address", "127.0.0.1", "--secure-port", "0",
		"--feature-gates", FeatureGates)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s: %w", c.Scheduler, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	return func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		log.Close()
	}, nil
}

// config is the KubeSchedulerConfiguration of the profile, as JSON (which is YAML).
func (c *Cluster) config(p Profile) ([]byte, error) {
	prof := map[string]any{"schedulerName": "default-scheduler"}
	if p.Plugin {
		prof["plugins"] = map[string]any{"multiPoint": map[string]any{"enabled": []any{map[string]any{"name": fragscore.Name, "weight": p.Weight}}}}
		if p.Args != nil {
			prof["pluginConfig"] = []any{map[string]any{"name": fragscore.Name, "args": p.Args}}
		}
	}
	if p.Packing {
		pc, _ := prof["pluginConfig"].([]any)
		prof["pluginConfig"] = append(pc, map[string]any{"name": "NodeResourcesFit", "args": map[string]any{
			"scoringStrategy": map[string]any{"type": "MostAllocated", "resources": []any{
				map[string]any{"name": "cpu", "weight": 1}, map[string]any{"name": "memory", "weight": 1}}}}})
	}
	cfg := map[string]any{
		"apiVersion":       "kubescheduler.config.k8s.io/v1",
		"kind":             "KubeSchedulerConfiguration",
		"clientConnection": map[string]any{"kubeconfig": c.Kubeconfig, "qps": 500, "burst": 1000},
		"leaderElection":   map[string]any{"leaderElect": false},
		"profiles":         []any{prof},
	}
	if p.PercentageOfNodesToScore > 0 {
		cfg["percentageOfNodesToScore"] = p.PercentageOfNodesToScore
	}
	return json.MarshalIndent(cfg, "", "  ")
}

func tail(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	l := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(l[max(0, len(l)-lines):], "\n")
}
