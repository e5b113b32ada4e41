package fragscore

import (
	"context"
	"errors"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/dralloc/dralloc/allocator/headroom/trace"
	"github.com/dralloc/dralloc/allocator/pods"
)

// traceData is allocator/headroom/trace's copy of Alibaba's openb trace.
const traceData = "../../../allocator/headroom/trace/testdata/"

// benchCluster is the replay's 300-node slice of the openb trace (every fourth node of the list, 1,528
// GPUs) with the first GPU tasks of the pod list placed by the library's FGD until half the GPUs are
// asked for: the DRA manager's objects as the scheduler would list them, the nodes with their pods, and
// the pending pods (the next tasks) with their claims, unallocated.
type benchCluster struct {
	dra     *fakeDRA
	nodes   []fwk.NodeInfo
	pending []*v1.Pod
	mix     []MixShape
}

func newBenchCluster(b *testing.B) *benchCluster {
	b.Helper()
	t, err := trace.Open(traceData+"openb_node_list_gpu_node.csv", traceData+"openb_pod_list_default.csv", trace.ReadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	s := &trace.Trace{}
	for i := 0; i < len(t.Nodes) && len(s.Nodes) < 300; i += 4 {
		if t.Nodes[i].GPUs > 0 {
			s.Nodes = append(s.Nodes, t.Nodes[i])
		}
	}
	for _, task := range t.Tasks {
		if task.GPUs > 0 && task.Models == nil {
			s.Tasks = append(s.Tasks, task)
		}
	}
	o, err := s.Objects()
	if err != nil {
		b.Fatal(err)
	}
	strategies, err := o.Strategies()
	if err != nil {
		b.Fatal(err)
	}
	c, err := o.Cluster(strategies[len(strategies)-1].Options) // FGD
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	podsOn := map[string][]*v1.Pod{}
	bc := &benchCluster{dra: &fakeDRA{slices: o.Slices, classes: []*resourceapi.DeviceClass{o.Class}}, mix: MixOf(o.Mix)}
	var asked float64
	for i, task := range s.Tasks {
		pod := o.Pod(i, fmt.Sprintf("task-%d", i))
		if asked >= float64(o.GPUs)/2 {
			// A pending pod: its claim created from the template by name, not yet allocated.
			tmpl := *pod.Spec.ResourceClaims[0].ResourceClaimTemplateName
			for _, tm := range o.Templates {
				if tm.Name == tmpl {
					claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: types.UID("claim-" + pod.Name)}, Spec: tm.Spec.Spec}
					bc.dra.claims = append(bc.dra.claims, claim)
					pod.Spec.ResourceClaims[0] = v1.PodResourceClaim{Name: pod.Spec.ResourceClaims[0].Name, ResourceClaimName: &claim.Name}
				}
			}
			bc.pending = append(bc.pending, pod)
			if len(bc.pending) == 64 {
				break
			}
			continue
		}
		asked += task.GPU()
		pl, err := c.Place(ctx, pod)
		if errors.Is(err, pods.ErrNoNode) {
			continue
		}
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Assume(pl); err != nil {
			b.Fatal(err)
		}
		podsOn[pl.Node] = append(podsOn[pl.Node], pod)
	}
	for _, claim := range c.Snapshot().Claims(trace.Namespace) {
		if claim.Status.Allocation != nil {
			bc.dra.claims = append(bc.dra.claims, claim)
		}
	}
	for _, n := range o.Nodes { // GPU nodes only: the slice took no others
		ni := framework.NewNodeInfo(podsOn[n.Name]...)
		ni.SetNode(n)
		bc.nodes = append(bc.nodes, ni)
	}
	return bc
}

// BenchmarkPlugin measures the plugin's cost in a scheduling cycle on a half-used 300-node slice of the
// openb trace, with the slice's mix configured (the replay's profile): PreScore for a pod with the DRA
// state unchanged since the last pod (the view's sync finds nothing to do), Score per node (one
// feasible node rated: the pod's claim allocated there and FGD's growth measured), and a whole pod
// (PreScore, Score on each node where it fits, NormalizeScore), the pods taken in turn from 64
// pending ones. The view is built before the timer starts.
func BenchmarkPlugin(b *testing.B) {
	bc := newBenchCluster(b)
	args := Args{Mode: Fragmentation, Mix: bc.mix}
	p := &Plugin{handle: fakeHandle{dra: bc.dra}, args: args, view: newView(), mix: args.shapes()}
	ctx := context.Background()
	preScore := func(pod *v1.Pod) fwk.CycleState {
		state := framework.NewCycleState()
		if s := p.PreScore(ctx, state, pod, bc.nodes); !s.IsSuccess() {
			b.Fatalf("PreScore: %v", s)
		}
		return state
	}
	// The view, FGD's memos of the nodes' states, and each pending pod's feasible nodes: the scheduler
	// scores only the nodes its filters passed (here, where the pod's claim can be allocated).
	feasible := make([][]fwk.NodeInfo, len(bc.pending))
	for k, pod := range bc.pending {
		state := preScore(pod)
		d, err := readDemand(state)
		if err != nil {
			b.Fatal(err)
		}
		for _, ni := range bc.nodes {
			if _, err := d.snap.Allocate(ctx, ni.Node(), d.claims); err != nil {
				continue
			}
			if _, s := p.Score(ctx, state, pod, ni); !s.IsSuccess() {
				b.Fatalf("Score: %v", s)
			}
			feasible[k] = append(feasible[k], ni)
		}
	}
	var pairs int
	for _, f := range feasible {
		pairs += len(f)
	}
	b.Run("PreScore", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			preScore(bc.pending[i%len(bc.pending)])
		}
	})
	b.Run("ScorePerNode", func(b *testing.B) {
		states := make([]fwk.CycleState, len(bc.pending))
		for i, pod := range bc.pending {
			states[i] = preScore(pod)
		}
		b.ReportAllocs()
		k, j := 0, 0
		for b.Loop() {
			for j == len(feasible[k]) {
				k, j = (k+1)%len(feasible), 0
			}
			if _, s := p.Score(ctx, states[k], bc.pending[k], feasible[k][j]); !s.IsSuccess() {
				b.Fatalf("Score: %v", s)
			}
			j++
		}
	})
	b.Run("Pod", func(b *testing.B) {
		list := make(fwk.NodeScoreList, len(bc.nodes))
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			k := i % len(bc.pending)
			pod := bc.pending[k]
			state := preScore(pod)
			list = list[:len(feasible[k])]
			for j, ni := range feasible[k] {
				v, s := p.Score(ctx, state, pod, ni)
				if !s.IsSuccess() {
					b.Fatalf("Score: %v", s)
				}
				list[j] = fwk.NodeScore{Name: ni.Node().Name, Score: v}
			}
			if s := p.NormalizeScore(ctx, state, pod, list); !s.IsSuccess() {
				b.Fatalf("NormalizeScore: %v", s)
			}
		}
		b.ReportMetric(float64(pairs)/float64(len(bc.pending)), "feasible-nodes/pod")
	})
}
