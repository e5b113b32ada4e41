package scheduler_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
	"github.com/dralloc/dralloc/allocator/verify"
)

// scoreClusters is how many clusters TestSchedulerScores draws; DRALLOC_SCHEDULER_SCORE_CLUSTERS
// changes it.
const scoreClusters = 8

// scoreCluster is a cluster drawn for comparing node scores: nodes of different sizes, labels, taints
// and images, pods already bound to some of them, and pods to schedule one by one.
type scoreCluster struct {
	seed  int
	nodes []*v1.Node
	bound []*v1.Pod // created with spec.nodeName set
	pods  []*v1.Pod // created without, for kube-scheduler to place
}

// drawScoreCluster draws a cluster from the seed. Every pod to place fits on several nodes (each asks
// at most half a CPU and 1Gi, each node allocates at least 2 CPUs and 4Gi, and none has a NoSchedule
// taint), so the choice among them is kube-scheduler's scoring. The draws make the scores differ:
// allocatable from 2 to 16 CPUs and 4 to 32Gi, pods already bound with requests or none (counted at
// kube-scheduler's defaults), a label zone=a or zone=b that pods may prefer with a weight, a
// PreferNoSchedule taint that pods may tolerate, images of different sizes in status.images that pods
// may run. Each pod to place requests a different amount of cpu: kube-scheduler's OpportunisticBatching
// reuses a pod's scores for the next pod only when their signatures (requests among them) are equal,
// and here every pod is scored afresh.
func drawScoreCluster(seed int) *scoreCluster {
	r := rand.New(rand.NewPCG(uint64(seed), 0x5c0e))
	sc := &scoreCluster{seed: seed}
	images := []string{"registry.example/app:v1", "registry.example/db:v2", "registry.example/tool"}
	// An image has one size on every node that holds it, as an image of one digest does: kube-scheduler's
	// cache keeps the size of the first node it saw listing a name, which no snapshot can know (see
	// allocator/pods' Node choice).
	sizes := make([]int64, len(images))
	for i := range sizes {
		sizes[i] = int64(50+r.IntN(900)) << 20
	}
	n := 3 + r.IntN(4)
	for i := range n {
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("score-%d-%d", seed, i), Labels: map[string]string{}}}
		cpu := []string{"2", "4", "8", "16"}[r.IntN(4)]
		mem := []string{"4Gi", "8Gi", "16Gi", "32Gi"}[r.IntN(4)]
		alloc := v1.ResourceList{v1.ResourcePods: resource.MustParse("110"), v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
		node.Status.Capacity, node.Status.Allocatable = alloc.DeepCopy(), alloc
		node.Labels["zone"] = []string{"a", "b"}[r.IntN(2)]
		if r.IntN(3) == 0 {
			node.Spec.Taints = []v1.Taint{{Key: "spot", Value: "true", Effect: v1.TaintEffectPreferNoSchedule}}
		}
		for k, img := range images {
			if r.IntN(3) == 0 {
				node.Status.Images = append(node.Status.Images, v1.ContainerImage{
					Names: []string{img, img + "@sha256:" + strings.Repeat(strconv.Itoa(k), 64)}, SizeBytes: sizes[k]})
			}
		}
		sc.nodes = append(sc.nodes, node)
		for j := range r.IntN(3) {
			p := scorePod(fmt.Sprintf("bound-%d-%d", i, j), images[r.IntN(len(images))])
			if r.IntN(3) > 0 {
				p.Spec.Containers[0].Resources.Requests = v1.ResourceList{
					v1.ResourceCPU:    *resource.NewMilliQuantity(int64(100*(1+r.IntN(10))), resource.DecimalSI),
					v1.ResourceMemory: *resource.NewQuantity(int64(128*(1+r.IntN(16)))<<20, resource.BinarySI),
				}
			}
			p.Spec.NodeName = node.Name
			sc.bound = append(sc.bound, p)
		}
	}
	for k := range 6 {
		p := scorePod(fmt.Sprintf("pod-%d", k), images[r.IntN(len(images))])
		req := v1.ResourceList{v1.ResourceCPU: *resource.NewMilliQuantity(int64(50*(k+1)), resource.DecimalSI)}
		if r.IntN(3) > 0 {
			req[v1.ResourceMemory] = *resource.NewQuantity(int64(64*(1+r.IntN(16)))<<20, resource.BinarySI)
		}
		p.Spec.Containers[0].Resources.Requests = req
		if r.IntN(2) == 0 {
			p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{
				Weight:     int32(1 + r.IntN(100)),
				Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "zone", Operator: v1.NodeSelectorOpIn, Values: []string{[]string{"a", "b"}[r.IntN(2)]}}}},
			}}}}
		}
		if r.IntN(3) == 0 {
			p.Spec.Tolerations = []v1.Toleration{{Key: "spot", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectPreferNoSchedule}}
		}
		sc.pods = append(sc.pods, p)
	}
	return sc
}

func scorePod(name, image string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "main", Image: image}}}}
}

// TestSchedulerScores compares the Scheduler choice with kube-scheduler's default profile: over drawn
// clusters where each pod fits on several nodes, pod by pod, the node kube-scheduler binds the pod to
// must be one of dralloc's best-scored nodes (Placement.Best). Fewer than 100 nodes: kube-scheduler
// scores every feasible node, so its choice is always among them.
func TestSchedulerScores(t *testing.T) {
	c := client(t)
	n := scoreClusters
	if s := os.Getenv("DRALLOC_SCHEDULER_SCORE_CLUSTERS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 || v > 1000 {
			t.Fatalf("DRALLOC_SCHEDULER_SCORE_CLUSTERS=%q: want a count from 0 to 1000", s)
		}
		n = v
	}
	agree, ties := 0, 0
	for seed := range n {
		sc := drawScoreCluster(seed)
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			a, tie := runScoreCluster(t, c, sc)
			agree += a
			ties += tie
		})
	}
	t.Logf("%d clusters: kube-scheduler's node in dralloc's best for %d pods, %d of them among several best nodes", n, agree, ties)
}

// runScoreCluster creates the cluster, then its pods one by one, and checks each binding against
// dralloc's best nodes. It returns how many pods agreed and how many of those had several best nodes.
func runScoreCluster(t *testing.T, c kubernetes.Interface, sc *scoreCluster) (agree, ties int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(len(sc.pods)+2)*podTimeout)
	defer cancel()
	ns := namespace(ctx, t, c)
	scen := &scenario{name: fmt.Sprintf("scores seed %d", sc.seed), nodes: sc.nodes}
	t.Cleanup(func() { cleanup(t, c, ns, scen) })

	snap := allocator.NewSnapshot(allocator.Options{Features: ptrTo(verify.AllFeatures())})
	cl := pods.New(snap, pods.Options{Choice: pods.Scheduler})
	if err := createCluster(ctx, c, ns, scen, cl, &state{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range sc.bound {
		p = p.DeepCopy()
		if _, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create bound Pod %s: %v", p.Name, err)
		}
	}
	time.Sleep(settle)

	for _, p := range sc.pods {
		p = p.DeepCopy()
		if err := sync(ctx, c, ns, cl); err != nil {
			t.Fatal(err)
		}
		created, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create Pod %s: %v", p.Name, err)
		}
		out, err := await(ctx, c, created)
		if err != nil {
			t.Fatalf("Pod %s: %v", p.Name, err)
		}
		if out.node == "" {
			t.Fatalf("Pod %s: kube-scheduler left it pending (%s); every drawn pod fits", p.Name, out.message)
		}
		placed, err := cl.Place(ctx, created)
		if err != nil {
			t.Fatalf("Pod %s: kube-scheduler bound it to %s, dralloc: %v", p.Name, out.node, err)
		}
		if !slices.Contains(placed.Best, out.node) {
			t.Errorf("Pod %s: kube-scheduler bound it to %s, not one of dralloc's best %v; scores %s", p.Name, out.node, placed.Best, rendered(placed.Scores))
			continue
		}
		agree++
		if len(placed.Best) > 1 {
			ties++
		}
	}
	return agree, ties
}
