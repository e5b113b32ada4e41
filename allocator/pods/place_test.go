package pods_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/dralloc/dralloc/allocator/pods"
)

func nodes(n int) []*v1.Node {
	out := make([]*v1.Node, n)
	for i := range out {
		out[i] = node(fmt.Sprintf("n%d", i+1), map[string]string{"zone": []string{"a", "b"}[i%2]})
	}
	return out
}

func devices(p *pods.Placement) []string {
	var out []string
	for _, pc := range p.Claims {
		for _, r := range pc.Claim.Status.Allocation.Devices.Results {
			out = append(out, r.Pool+"/"+r.Device)
		}
	}
	return out
}

func TestPlace(t *testing.T) {
	tests := []struct {
		name       string
		opts       pods.Options
		gpus       int
		nodes      []*v1.Node
		before     []*v1.Pod // placed and assumed first
		pod        *v1.Pod
		wantNode   string
		wantDevice []string
		wantErr    error
	}{
		{name: "FirstFit takes the first node by name", gpus: 1, nodes: nodes(3), pod: pod("p", "gpu=template:one-gpu"),
			wantNode: "n1", wantDevice: []string{"n1/gpu-0"}},
		{name: "the next pod sees the devices of the assumed one", gpus: 1, nodes: nodes(3),
			before: []*v1.Pod{pod("a", "gpu=template:one-gpu")}, pod: pod("p", "gpu=template:one-gpu"),
			wantNode: "n2", wantDevice: []string{"n2/gpu-0"}},
		{name: "no node fits", gpus: 1, nodes: nodes(2), pod: pod("p", "gpu=template:two-gpus"), wantErr: pods.ErrNoNode},
		{name: "BestFit packs the fullest node", opts: pods.Options{Choice: pods.BestFit}, gpus: 2, nodes: nodes(3),
			before: []*v1.Pod{pod("a", "gpu=template:one-gpu"), pod("b", "gpu=template:two-gpus")}, pod: pod("p", "gpu=template:one-gpu"),
			// a is on n1 (FirstFit order with an empty fleet: BestFit ties go by name), b on n2: n1 has one GPU left.
			wantNode: "n1", wantDevice: []string{"n1/gpu-1"}},
		{name: "Spread takes the emptiest node", opts: pods.Options{Choice: pods.Spread}, gpus: 2, nodes: nodes(3),
			before: []*v1.Pod{pod("a", "gpu=template:one-gpu")}, pod: pod("p", "gpu=template:one-gpu"),
			wantNode: "n2", wantDevice: []string{"n2/gpu-0"}},
		{name: "nodeSelector is a built-in predicate", gpus: 1, nodes: nodes(3), pod: func() *v1.Pod {
			p := pod("p", "gpu=template:one-gpu")
			p.Spec.NodeSelector = map[string]string{"zone": "b"}
			return p
		}(), wantNode: "n2", wantDevice: []string{"n2/gpu-0"}},
		{name: "an untolerated NoSchedule taint keeps the pod off", gpus: 1, nodes: func() []*v1.Node {
			ns := nodes(2)
			ns[0].Spec.Taints = []v1.Taint{{Key: "maintenance", Effect: v1.TaintEffectNoSchedule}}
			return ns
		}(), pod: pod("p", "gpu=template:one-gpu"), wantNode: "n2", wantDevice: []string{"n2/gpu-0"}},
		{name: "a tolerated taint does not", gpus: 1, nodes: func() []*v1.Node {
			ns := nodes(2)
			ns[0].Spec.Taints = []v1.Taint{{Key: "maintenance", Effect: v1.TaintEffectNoSchedule}}
			return ns
		}(), pod: func() *v1.Pod {
			p := pod("p", "gpu=template:one-gpu")
			p.Spec.Tolerations = []v1.Toleration{{Key: "maintenance", Operator: v1.TolerationOpExists}}
			return p
		}(), wantNode: "n1", wantDevice: []string{"n1/gpu-0"}},
		{name: "a PreferNoSchedule taint is no filter", gpus: 1, nodes: func() []*v1.Node {
			ns := nodes(2)
			ns[0].Spec.Taints = []v1.Taint{{Key: "soft", Effect: v1.TaintEffectPreferNoSchedule}}
			return ns
		}(), pod: pod("p", "gpu=template:one-gpu"), wantNode: "n1", wantDevice: []string{"n1/gpu-0"}},
		{name: "built-in predicates can be switched off", opts: pods.Options{NoBuiltinPredicates: true}, gpus: 1, nodes: nodes(2), pod: func() *v1.Pod {
			p := pod("p", "gpu=template:one-gpu")
			p.Spec.NodeSelector = map[string]string{"zone": "b"}
			return p
		}(), wantNode: "n1", wantDevice: []string{"n1/gpu-0"}},
		{name: "the caller's predicate", opts: pods.Options{Predicate: func(_ *v1.Pod, n *v1.Node) error {
			if n.Name != "n3" {
				return errors.New("not n3")
			}
			return nil
		}}, gpus: 1, nodes: nodes(3), pod: pod("p", "gpu=template:one-gpu"), wantNode: "n3", wantDevice: []string{"n3/gpu-0"}},
		{name: "a pod without claims goes to the first node", gpus: 0, nodes: nodes(2), pod: pod("p"), wantNode: "n1"},
		{name: "an allocated shared claim is reused on the node its allocation selects", gpus: 1, nodes: nodes(3),
			before: []*v1.Pod{pod("x", "gpu=template:one-gpu"), pod("a", "gpu=claim:shared")}, pod: pod("p", "gpu=claim:shared"),
			wantNode: "n2", wantDevice: []string{"n2/gpu-0"}},
		{name: "extended resource backed by DRA through the implicit class name", gpus: 2, nodes: nodes(2),
			pod: withExtended(pod("p"), "deviceclass.resource.kubernetes.io/gpu", 2), wantNode: "n1", wantDevice: []string{"n1/gpu-0", "n1/gpu-1"}},
		{name: "a node whose device plugin advertises the resource serves it there", gpus: 0, nodes: func() []*v1.Node {
			ns := nodes(2)
			ns[1].Status.Allocatable = allocatable("deviceclass.resource.kubernetes.io/gpu=4")
			return ns
		}(), pod: withExtended(pod("p"), "deviceclass.resource.kubernetes.io/gpu", 2), wantNode: "n2"},
		{name: "an extended resource nothing serves fits nowhere", gpus: 1, nodes: nodes(2),
			pod: withExtended(pod("p"), "deviceclass.resource.kubernetes.io/gpu", 2), wantErr: pods.ErrNoNode},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster(t, tt.opts, tt.gpus, tt.nodes...)
			must(t, c.AddOrUpdateTemplate(template("one-gpu", 1)))
			must(t, c.AddOrUpdateTemplate(template("two-gpus", 2)))
			must(t, c.Snapshot().AddOrUpdateClaim(claim("shared", 1)))
			ctx := context.Background()
			for _, b := range tt.before {
				p, err := c.Place(ctx, b)
				must(t, err)
				must(t, c.Assume(p))
			}
			before := tt.pod.DeepCopy()
			p, err := c.Place(ctx, tt.pod)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if !equality.Semantic.DeepEqual(before, tt.pod) {
				t.Error("pod modified")
			}
			if err != nil {
				return
			}
			if p.Node != tt.wantNode || !slices.Equal(devices(p), tt.wantDevice) {
				t.Errorf("placed on %s with %v, want %s with %v", p.Node, devices(p), tt.wantNode, tt.wantDevice)
			}
			for _, pc := range p.Claims {
				cl := pc.Claim
				if !slices.Contains(cl.Finalizers, resourceapi.Finalizer) {
					t.Errorf("claim %s without the finalizer", cl.Name)
				}
				if !slices.ContainsFunc(cl.Status.ReservedFor, func(r resourceapi.ResourceClaimConsumerReference) bool {
					return r.Resource == "pods" && r.Name == tt.pod.Name && r.UID == tt.pod.UID
				}) {
					t.Errorf("claim %s not reserved for the pod: %+v", cl.Name, cl.Status.ReservedFor)
				}
			}
		})
	}
}

func TestPlaceWritesClaimsAndStatus(t *testing.T) {
	c := cluster(t, pods.Options{}, 4, nodes(1)...)
	must(t, c.AddOrUpdateTemplate(template("one-gpu", 1)))
	must(t, c.Snapshot().AddOrUpdateClaim(claim("shared", 1)))
	p := withExtended(pod("train", "mine=template:one-gpu", "team=claim:shared"), "deviceclass.resource.kubernetes.io/gpu", 1)
	pl, err := c.Place(context.Background(), p)
	must(t, err)

	type row struct {
		name, claim      string
		generated, alloc bool
	}
	var got []row
	for _, pc := range pl.Claims {
		got = append(got, row{pc.Name, pc.Claim.Name, pc.Generated, pc.Allocated})
	}
	want := []row{
		{"mine", "train-mine-aaaa0", true, true},
		{"team", "shared", false, true},
		{"", "train-extended-resources-aaaa1", true, true},
	}
	if !slices.Equal(got, want) {
		t.Errorf("claims %+v, want %+v", got, want)
	}
	wantStatus := []v1.PodResourceClaimStatus{{Name: "mine", ResourceClaimName: ptr("train-mine-aaaa0")}}
	if !equality.Semantic.DeepEqual(pl.ResourceClaimStatuses, wantStatus) {
		t.Errorf("resourceClaimStatuses %+v, want %+v", pl.ResourceClaimStatuses, wantStatus)
	}
	wantExt := &v1.PodExtendedResourceClaimStatus{
		ResourceClaimName: "train-extended-resources-aaaa1",
		RequestMappings:   []v1.ContainerExtendedResourceRequest{{ContainerName: "main", ResourceName: "deviceclass.resource.kubernetes.io/gpu", RequestName: "container-0-request-0"}},
	}
	if !equality.Semantic.DeepEqual(pl.ExtendedResourceClaimStatus, wantExt) {
		t.Errorf("extendedResourceClaimStatus %+v, want %+v", pl.ExtendedResourceClaimStatus, wantExt)
	}
	ext := pl.Claims[2].Claim
	if ext.Annotations[resourceapi.ExtendedResourceClaimAnnotation] != "true" || ext.GenerateName != "train-extended-resources-" ||
		ext.OwnerReferences[0].UID != p.UID || !*ext.OwnerReferences[0].Controller {
		t.Errorf("extended-resource claim metadata %+v", ext.ObjectMeta)
	}
	if devs := devices(pl); !slices.Equal(devs, []string{"n1/gpu-0", "n1/gpu-1", "n1/gpu-2"}) {
		t.Errorf("devices %v, want three distinct GPUs", devs)
	}
}

func TestAssumeAndRemove(t *testing.T) {
	c := cluster(t, pods.Options{}, 1, nodes(1)...)
	must(t, c.AddOrUpdateTemplate(template("one-gpu", 1)))
	must(t, c.Snapshot().AddOrUpdateClaim(claim("shared", 1)))
	ctx := context.Background()
	a, b := pod("a", "gpu=claim:shared"), pod("b", "gpu=claim:shared")
	place := func(p *v1.Pod) {
		pl, err := c.Place(ctx, p)
		must(t, err)
		must(t, c.Assume(pl))
	}
	place(a)
	place(b)
	shared, _ := c.Snapshot().Claim("default", "shared")
	if len(shared.Status.ReservedFor) != 2 {
		t.Fatalf("shared claim reserved for %+v, want a and b", shared.Status.ReservedFor)
	}
	must(t, c.Remove(a))
	shared, _ = c.Snapshot().Claim("default", "shared")
	if len(shared.Status.ReservedFor) != 1 || shared.Status.Allocation == nil {
		t.Fatalf("after removing a: reservedFor %+v, allocated %v; want b, allocated", shared.Status.ReservedFor, shared.Status.Allocation != nil)
	}
	must(t, c.Remove(b))
	shared, _ = c.Snapshot().Claim("default", "shared")
	if len(shared.Status.ReservedFor) != 0 || shared.Status.Allocation != nil || slices.Contains(shared.Finalizers, resourceapi.Finalizer) {
		t.Fatalf("after removing both: %+v; want deallocated without finalizer", shared.Status)
	}

	// A generated claim is deleted with its pod, and its GPU is free again.
	g := pod("g", "gpu=template:one-gpu")
	place(g)
	if _, err := c.Place(ctx, pod("h", "gpu=template:one-gpu")); !errors.Is(err, pods.ErrNoNode) {
		t.Fatalf("second pod placed while the only GPU is taken: %v", err)
	}
	must(t, c.Remove(g))
	if len(c.Snapshot().Claims("default")) != 1 {
		t.Errorf("claims left %d, want only shared", len(c.Snapshot().Claims("default")))
	}
	if _, err := c.Place(ctx, pod("h", "gpu=template:one-gpu")); err != nil {
		t.Errorf("after removal: %v", err)
	}
}

func TestMixedNodes(t *testing.T) {
	ns := nodes(3)
	ns[0].Status.Allocatable = allocatable("example.com/gpu=2") // plugin and DRA devices
	ns[1].Status.Allocatable = allocatable("example.com/gpu=2") // plugin, no DRA devices
	c := cluster(t, pods.Options{}, 0, ns...)
	must(t, c.Snapshot().AddOrUpdateClass(gpuClass("gpu", "example.com/gpu")))
	must(t, c.Snapshot().AddOrUpdateSlice(gpus("n1", 1)))
	must(t, c.Snapshot().AddOrUpdateSlice(gpus("n3", 1))) // DRA only
	got, err := c.MixedNodes(context.Background())
	must(t, err)
	want := []pods.MixedNode{{Node: "n1", Resource: "example.com/gpu", Class: "gpu"}}
	if !slices.Equal(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
