package allocator_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator"
)

// rqCluster is a small cluster kept in a Snapshot and a Requeue side by side.
type rqCluster struct {
	snap   *allocator.Snapshot
	rq     *allocator.Requeue
	nodes  []string
	slices map[string]*resourceapi.ResourceSlice // by node
	// counters is the slice with node n0's shared counters when its GPUs are partitions.
	counters *resourceapi.ResourceSlice
	holders  []*resourceapi.ResourceClaim
	rules    []string
	pending  []*resourceapi.ResourceClaim
}

// Selectors the generator draws from: some select by model or memory, one fails on devices without the
// ecc attribute.
var rqExprs = []string{rqModelA, rqModelB, rqBig, rqNeedsECC, `device.attributes["gpu.example.com"].model != "a"`, "true"}

var rqClassNames = []string{"gpu", "gpu-a", "gpu-b", "gpu-ecc", "gpu-big"}

func rqGenDevice(t *rapid.T, name string) resourceapi.Device {
	d := rqGPU(name, rapid.SampledFrom([]string{"a", "b"}).Draw(t, "model"), rapid.SampledFrom([]int64{40, 80}).Draw(t, "memGi"))
	if rapid.Bool().Draw(t, "hasECC") {
		ecc := rapid.Bool().Draw(t, "ecc")
		d.Attributes["ecc"] = resourceapi.DeviceAttribute{BoolValue: &ecc}
	}
	if rapid.IntRange(0, 4).Draw(t, "tainted") == 0 {
		d.Taints = []resourceapi.DeviceTaint{{Key: "example.com/slow", Effect: resourceapi.DeviceTaintEffectNoSchedule}}
	}
	return d
}

func rqGenSlice(t *rapid.T, node string, partitioned bool) *resourceapi.ResourceSlice {
	n := rapid.IntRange(1, 3).Draw(t, "devices")
	var devs []resourceapi.Device
	for i := range n {
		devs = append(devs, rqGenPartition(t, rqGenDevice(t, fmt.Sprintf("gpu-%d", i)), partitioned))
	}
	s := rqSlice(node, devs...)
	if partitioned {
		s.Spec.Pool.ResourceSliceCount = 2
	}
	return s
}

// rqGenPartition makes a device of a partitioned pool draw 20Gi or 40Gi from the pool's counter set.
func rqGenPartition(t *rapid.T, d resourceapi.Device, partitioned bool) resourceapi.Device {
	if partitioned {
		gi := rapid.SampledFrom([]int64{20, 40}).Draw(t, "partitionGi")
		d.ConsumesCounters = []resourceapi.DeviceCounterConsumption{{
			CounterSet: "gpu-0",
			Counters:   map[string]resourceapi.Counter{"mem": {Value: *resource.NewQuantity(gi<<30, resource.BinarySI)}},
		}}
	}
	return d
}

// rqCounterSlice publishes node's counter set "gpu-0" with memGi of memory.
func rqCounterSlice(node string, memGi int64) *resourceapi.ResourceSlice {
	return &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-counters"},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   rqDriver,
			Pool:     resourceapi.ResourcePool{Name: node, ResourceSliceCount: 2},
			NodeName: &node,
			SharedCounters: []resourceapi.CounterSet{{
				Name:     "gpu-0",
				Counters: map[string]resourceapi.Counter{"mem": {Value: *resource.NewQuantity(memGi<<30, resource.BinarySI)}},
			}},
		},
	}
}

func rqGenClass(t *rapid.T, name string) *resourceapi.DeviceClass {
	switch name {
	case "gpu":
		return rqClass(name, "")
	case "gpu-a":
		return rqClass(name, rqModelA)
	case "gpu-b":
		return rqClass(name, rqModelB)
	case "gpu-ecc":
		return rqClass(name, rqNeedsECC)
	}
	return rqClass(name, rapid.SampledFrom(rqExprs).Draw(t, "classExpr"))
}

func rqGenRequest(t *rapid.T) rqRequest {
	q := rqRequest{
		class: rapid.SampledFrom(rqClassNames).Draw(t, "class"),
		count: int64(rapid.IntRange(1, 2).Draw(t, "count")),
		all:   rapid.IntRange(0, 3).Draw(t, "all") == 0,
		admin: rapid.IntRange(0, 5).Draw(t, "admin") == 0,
	}
	if rapid.Bool().Draw(t, "hasSelector") {
		q.exprs = []string{rapid.SampledFrom(rqExprs).Draw(t, "expr")}
	}
	return q
}

func rqGenPending(t *rapid.T, name string) *resourceapi.ResourceClaim {
	var reqs []rqRequest
	for i := range rapid.IntRange(1, 2).Draw(t, "requests") {
		if rapid.IntRange(0, 3).Draw(t, "prioritized") == 0 {
			reqs = append(reqs, rqRequest{name: fmt.Sprintf("r%d", i), alternatives: []rqRequest{rqGenRequest(t), rqGenRequest(t)}})
			continue
		}
		q := rqGenRequest(t)
		q.name = fmt.Sprintf("r%d", i)
		reqs = append(reqs, q)
	}
	return rqClaim("ns", name, reqs...)
}

func rqMust(t *rapid.T, err error) {
	if err != nil {
		t.Fatal(err)
	}
}

func rqGenCluster(t *rapid.T) *rqCluster {
	ctx := context.Background()
	// The Requeue shares the Snapshot's devices or keeps its own; the answers must be the same.
	snap := allocator.NewSnapshot(allocator.Options{StepBudget: propStepBudget, NoCopy: rapid.Bool().Draw(t, "noCopy")})
	var opts allocator.RequeueOptions
	if rapid.Bool().Draw(t, "shared") {
		opts.Snapshot = snap
	}
	rq, err := allocator.NewRequeue(opts)
	rqMust(t, err)
	c := &rqCluster{
		snap:   snap,
		rq:     rq,
		nodes:  []string{"n0", "n1", "n2"},
		slices: map[string]*resourceapi.ResourceSlice{},
	}
	for _, name := range rqClassNames {
		// "gpu" always exists: the holders use it. The others may be missing until an event adds them.
		if name != "gpu" && rapid.IntRange(0, 4).Draw(t, "classMissing") == 0 {
			continue
		}
		class := rqGenClass(t, name)
		rqMust(t, c.snap.AddOrUpdateClass(class))
		_, err := c.rq.AddOrUpdateClass(ctx, class)
		rqMust(t, err)
	}
	if rapid.Bool().Draw(t, "partitioned") {
		c.counters = rqCounterSlice("n0", 40)
		rqMust(t, c.snap.AddOrUpdateSlice(c.counters))
		_, err := c.rq.AddOrUpdateSlice(ctx, c.counters)
		rqMust(t, err)
	}
	for _, node := range c.nodes[:2] {
		s := rqGenSlice(t, node, node == "n0" && c.counters != nil)
		c.slices[node] = s
		rqMust(t, c.snap.AddOrUpdateSlice(s))
		_, err := c.rq.AddOrUpdateSlice(ctx, s)
		rqMust(t, err)
	}
	// Holders take devices the way the scheduler would have given them.
	for i := range rapid.IntRange(0, 3).Draw(t, "holders") {
		h := rqClaim("held", fmt.Sprintf("h%d", i), rqRequest{class: "gpu", count: int64(rapid.IntRange(1, 2).Draw(t, "holdCount"))})
		node := rapid.SampledFrom(c.nodes[:2]).Draw(t, "holdNode")
		res, err := c.snap.Allocate(ctx, rqNode(node), []*resourceapi.ResourceClaim{h})
		if err != nil {
			continue
		}
		h.Status.Allocation = &res[0]
		rqMust(t, c.snap.AddOrUpdateClaim(h))
		c.holders = append(c.holders, h)
	}
	if rapid.Bool().Draw(t, "rule") {
		node := rapid.SampledFrom(c.nodes[:2]).Draw(t, "ruleNode")
		dev := rapid.SampledFrom(c.slices[node].Spec.Devices).Draw(t, "ruleDevice").Name
		effect := rapid.SampledFrom([]resourceapi.DeviceTaintEffect{resourceapi.DeviceTaintEffectNoSchedule, resourceapi.DeviceTaintEffectNone}).Draw(t, "ruleEffect")
		rule := rqRule("rule", node, dev, effect)
		rqMust(t, c.snap.AddOrUpdateTaintRule(rule))
		_, err := c.rq.AddOrUpdateTaintRule(ctx, rule)
		rqMust(t, err)
		c.rules = append(c.rules, rule.Name)
	}
	for i := range rapid.IntRange(1, 4).Draw(t, "pending") {
		p := rqGenPending(t, fmt.Sprintf("p%d", i))
		rqMust(t, c.rq.AddPending(p))
		c.pending = append(c.pending, p)
	}
	return c
}

func rqNode(name string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// fits tells, per pending claim, whether it can be allocated alone on some node.
func (c *rqCluster) fits(t *rapid.T) []bool {
	out := make([]bool, len(c.pending))
	for i, p := range c.pending {
		for _, node := range c.nodes {
			_, err := c.snap.Allocate(context.Background(), rqNode(node), []*resourceapi.ResourceClaim{p})
			if err == nil {
				out[i] = true
				break
			}
			if errors.Is(err, allocator.ErrSearchBudget) {
				t.Fatalf("claim %s on %s: %v", p.Name, node, err)
			}
			if errors.Is(err, allocator.ErrSearchBudget) {
				t.Fatalf("claim %s on %s: %v", p.Name, node, err)
			}
		}
	}
	return out
}

// event applies one random change to the snapshot and the Requeue and returns the Requeue's answer.
func (c *rqCluster) event(t *rapid.T) (string, []types.NamespacedName) {
	ctx := context.Background()
	kinds := []string{"update slice", "delete slice", "new slice", "change class", "delete class"}
	if c.counters != nil {
		kinds = append(kinds, "change counters")
	}
	if len(c.holders) > 0 {
		kinds = append(kinds, "deallocate")
	}
	if len(c.rules) > 0 {
		kinds = append(kinds, "delete rule")
	}
	kind := rapid.SampledFrom(kinds).Draw(t, "event")
	switch kind {
	case "update slice":
		node := rapid.SampledFrom(c.nodes[:2]).Draw(t, "node")
		old := c.slices[node]
		if old == nil {
			return kind, nil
		}
		s := old.DeepCopy()
		change := 3
		i := 0
		if len(s.Spec.Devices) > 0 {
			i = rapid.IntRange(0, len(s.Spec.Devices)-1).Draw(t, "device")
			change = rapid.IntRange(0, 3).Draw(t, "change")
		}
		switch change {
		case 0:
			s.Spec.Devices[i] = rqGenPartition(t, rqGenDevice(t, s.Spec.Devices[i].Name), node == "n0" && c.counters != nil)
		case 1:
			s.Spec.Devices[i].Taints = nil
		case 2:
			s.Spec.Devices = slices.Delete(s.Spec.Devices, i, i+1)
		case 3:
			// A name no device of the slice has: after a deletion the count alone would repeat one.
			name := ""
			for k := len(s.Spec.Devices) + 10; name == "" || slices.ContainsFunc(s.Spec.Devices, func(d resourceapi.Device) bool { return d.Name == name }); k++ {
				name = fmt.Sprintf("gpu-%d", k)
			}
			s.Spec.Devices = append(s.Spec.Devices, rqGenPartition(t, rqGenDevice(t, name), node == "n0" && c.counters != nil))
		}
		c.slices[node] = s
		rqMust(t, c.snap.AddOrUpdateSlice(s))
		got, err := c.rq.AddOrUpdateSlice(ctx, s)
		rqMust(t, err)
		return kind, got
	case "delete slice":
		node := rapid.SampledFrom(c.nodes[:2]).Draw(t, "node")
		s := c.slices[node]
		if s == nil {
			return kind, nil
		}
		delete(c.slices, node)
		rqMust(t, c.snap.DeleteSlice(s.Name))
		return kind, c.rq.DeleteSlice(ctx, s.Name)
	case "change counters":
		old := c.counters.Spec.SharedCounters[0].Counters["mem"].Value
		gi := int64(20)
		if old.Cmp(*resource.NewQuantity(20<<30, resource.BinarySI)) == 0 {
			gi = 60
		}
		c.counters = rqCounterSlice("n0", gi)
		rqMust(t, c.snap.AddOrUpdateSlice(c.counters))
		got, err := c.rq.AddOrUpdateSlice(ctx, c.counters)
		rqMust(t, err)
		return kind, got
	case "new slice":
		s := rqGenSlice(t, "n2", false)
		c.slices["n2"] = s
		rqMust(t, c.snap.AddOrUpdateSlice(s))
		got, err := c.rq.AddOrUpdateSlice(ctx, s)
		rqMust(t, err)
		return kind, got
	case "change class":
		class := rqGenClass(t, rapid.SampledFrom(rqClassNames[1:]).Draw(t, "changedClass"))
		if rapid.Bool().Draw(t, "newExpr") {
			class = rqClass(class.Name, rapid.SampledFrom(rqExprs).Draw(t, "newClassExpr"))
		}
		rqMust(t, c.snap.AddOrUpdateClass(class))
		got, err := c.rq.AddOrUpdateClass(ctx, class)
		rqMust(t, err)
		return kind, got
	case "delete class":
		// Deleting a class never lets a claim fit, but the events that follow must see it missing.
		name := rapid.SampledFrom(rqClassNames[1:]).Draw(t, "deletedClass")
		rqMust(t, c.snap.DeleteClass(name))
		rqMust(t, c.rq.DeleteClass(ctx, name))
		return kind, nil
	case "deallocate":
		i := rapid.IntRange(0, len(c.holders)-1).Draw(t, "holder")
		h := c.holders[i]
		c.holders = slices.Delete(c.holders, i, i+1)
		rqMust(t, c.snap.DeleteClaim(h.Namespace, h.Name))
		got, err := c.rq.ClaimDeallocated(ctx, h)
		rqMust(t, err)
		return kind, got
	case "delete rule":
		name := c.rules[0]
		c.rules = c.rules[1:]
		rqMust(t, c.snap.DeleteTaintRule(name))
		return kind, c.rq.DeleteTaintRule(ctx, name)
	}
	t.Fatalf("unknown event %q", kind)
	return "", nil
}

func TestPropRequeueNeverMissesAClaimThatNowFits(t *testing.T) {
	woken, fitsNow := 0, 0
	fitsAfter := map[string]int{}
	rapid.Check(t, func(t *rapid.T) {
		c := rqGenCluster(t)
		for range rapid.IntRange(1, 4).Draw(t, "events") {
			before := c.fits(t)
			kind, got := c.event(t)
			after := c.fits(t)
			if !slices.IsSortedFunc(got, func(a, b types.NamespacedName) int {
				return cmpNamespacedName(a, b)
			}) {
				t.Fatalf("%s: answer %v is not sorted", kind, got)
			}
			for i, p := range c.pending {
				key := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
				if !before[i] && slices.Contains(got, key) {
					woken++
				}
				if !before[i] && after[i] {
					fitsNow++
					fitsAfter[kind]++
					if !slices.Contains(got, key) {
						t.Fatalf("%s: claim %s fits now but was not woken (woken: %v)\nclaim: %+v", kind, key, got, p.Spec.Devices.Requests)
					}
				}
			}
		}
	})
	// A property that never sees a claim start to fit proves nothing; the generator is tuned so it does.
	if fitsNow == 0 {
		t.Errorf("no event let a claim fit in any run; the generator needs adjusting")
	}
	// woken counts only claims that did not fit before the event: the answer's precision is fitsNow/woken.
	t.Logf("claims that started to fit: %d %v; claims woken that did not fit before: %d", fitsNow, fitsAfter, woken)
}

func cmpNamespacedName(a, b types.NamespacedName) int {
	if a.Namespace != b.Namespace {
		if a.Namespace < b.Namespace {
			return -1
		}
		return 1
	}
	switch {
	case a.Name < b.Name:
		return -1
	case a.Name > b.Name:
		return 1
	}
	return 0
}

// fitTogether tells whether the claims (a pod's claims) can be allocated together on some node.
func (c *rqCluster) fitTogether(t *rapid.T, claims []*resourceapi.ResourceClaim) bool {
	for _, node := range c.nodes {
		_, err := c.snap.Allocate(context.Background(), rqNode(node), claims)
		if err == nil {
			return true
		}
		if errors.Is(err, allocator.ErrSearchBudget) {
			t.Fatalf("claims on %s: %v", node, err)
		}
	}
	return false
}

// A scheduler requeues a pod when any of its claims is woken, so the answer must also never miss a pod
// whose claims did not fit together before the event and do after it.
//
// About one run in a hundred draws no event that lets the pod fit (about five in a hundred cases do); such
// a run is followed by more, up to ten, so that the property is still shown to have been exercised.
func TestPropRequeueWakesAPodWhoseClaimsNowFitTogether(t *testing.T) {
	podsNow := 0
	for round := 0; round < 10 && podsNow == 0 && !t.Failed(); round++ {
		requeueWakesFitTogether(t, &podsNow)
	}
	if podsNow == 0 {
		t.Errorf("no event let a pod fit in any run; the generator needs adjusting")
	}
	t.Logf("pods whose claims started to fit together: %d", podsNow)
}

// requeueWakesFitTogether is one rapid run of TestPropRequeueWakesAPodWhoseClaimsNowFitTogether; it counts
// in podsNow the cases where an event let the pod's claims fit together.
func requeueWakesFitTogether(t *testing.T, podsNow *int) {
	rapid.Check(t, func(t *rapid.T) {
		c := rqGenCluster(t)
		// The pod's two claims ask for plain devices, so that events often decide whether they fit together.
		var pod []*resourceapi.ResourceClaim
		for i := range 2 {
			p := rqClaim("pod", fmt.Sprintf("claim-%d", i), rqRequest{
				class: rapid.SampledFrom(rqClassNames[:3]).Draw(t, "podClass"),
				count: int64(rapid.IntRange(1, 2).Draw(t, "podCount")),
			})
			rqMust(t, c.rq.AddPending(p))
			pod = append(pod, p)
		}
		for range rapid.IntRange(1, 4).Draw(t, "events") {
			before := c.fitTogether(t, pod)
			kind, got := c.event(t)
			if before || !c.fitTogether(t, pod) {
				continue
			}
			*podsNow++
			if !slices.ContainsFunc(pod, func(p *resourceapi.ResourceClaim) bool {
				return slices.Contains(got, types.NamespacedName{Namespace: p.Namespace, Name: p.Name})
			}) {
				t.Fatalf("%s: the pod's claims fit together now but neither was woken (woken: %v)", kind, got)
			}
		}
	})
}
