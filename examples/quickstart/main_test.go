package main

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/verify"
	"github.com/dralloc/dralloc/capacity"
	"github.com/dralloc/dralloc/inventory"
)

// The story's outcomes, each derived from the fleet (inventory's profiles) and the order of the scenes:
// nodes are tried in name order (a100-a, h100-a, h100-b, h100-c, h200-a) and devices in their slices'
// order (gpu-0 first), which is FirstFit.

func allocated(c *resourceapi.ResourceClaim) []resourceapi.DeviceRequestAllocationResult {
	if c.Status.Allocation == nil {
		return nil
	}
	return c.Status.Allocation.Devices.Results
}

func deviceNames(rs []resourceapi.DeviceRequestAllocationResult) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Pool+"/"+r.Device)
	}
	return out
}

func TestStory(t *testing.T) {
	s, err := tell(io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	device := func(pool, name string) *resourceapi.Device {
		d, ok := s.snap.Device(allocator.DeviceID{Driver: inventory.DefaultDriver, Pool: pool, Device: name})
		if !ok {
			t.Fatalf("no device %s/%s", pool, name)
		}
		return d
	}
	typeOf := func(d *resourceapi.Device) string { return *d.Attributes[inventory.AttrType].StringValue }

	// 1. Every H100 node publishes its 8 GPUs whole (dynamic MIG, MIG off); the A100 profile has MIG on,
	// and an Ampere GPU in MIG mode is published without its whole GPU; the H200 is published whole and
	// shared.
	whole := map[string]int{}
	for _, sl := range s.slices {
		for _, d := range sl.Spec.Devices {
			if typeOf(&d) == inventory.TypeGPU {
				whole[sl.Spec.Pool.Name]++
				if shared := d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations; shared != (sl.Spec.Pool.Name == "h200-a") {
					t.Errorf("%s/%s shared = %v", sl.Spec.Pool.Name, d.Name, shared)
				}
			}
		}
	}
	if want := map[string]int{"h100-a": 8, "h100-b": 8, "h100-c": 8, "h200-a": 8}; !equalMaps(whole, want) {
		t.Errorf("whole GPUs per node = %v, want %v", whole, want)
	}

	// 2. a100-a comes first but has no whole GPU for gpu.nvidia.com: the extended resource pod goes to
	// h100-a, on its first two GPUs, through a claim the scheduler generates.
	if s.legacy.Node != "h100-a" || len(s.legacy.Claims) != 1 || !s.legacy.Claims[0].Generated {
		t.Fatalf("legacy pod: node %s, claims %+v", s.legacy.Node, s.legacy.Claims)
	}
	if got := deviceNames(allocated(s.legacy.Claims[0].Claim)); !slices.Equal(got, []string{"h100-a/gpu-0", "h100-a/gpu-1"}) {
		t.Errorf("legacy pod devices %v", got)
	}
	if m := s.legacy.ExtendedResourceClaimStatus.RequestMappings; len(m) != 1 || m[0].ResourceName != "nvidia.com/gpu" {
		t.Errorf("extended resource mapping %+v", m)
	}

	// 3. On the H100 pool the first choice (a whole GPU of 80Gi, the next free one on h100-a); on the A100
	// pool only MIG devices exist, so the second, and the device has at least 10Gi.
	train := allocated(s.train.Claims[0].Claim)
	if len(train) != 1 || train[0].Request != "gpu/whole" || deviceNames(train)[0] != "h100-a/gpu-2" {
		t.Errorf("train: %+v", train)
	}
	nb := allocated(s.notebook.Claims[0].Claim)
	if len(nb) != 1 || nb[0].Request != "gpu/mig" || nb[0].Pool != "a100-a" {
		t.Fatalf("notebook: %+v", nb)
	}
	d := device("a100-a", nb[0].Device)
	if memory := d.Capacity[inventory.CapMemory].Value; typeOf(d) != "mig" || memory.Cmp(resource.MustParse("10Gi")) < 0 {
		t.Errorf("notebook device %s: type %s, memory %s", nb[0].Device, typeOf(d), memory.String())
	}

	// 4. Both inference servers share the first H200 GPU; each asked for at least 10Gi (the policy's 4Gi
	// steps would round that to 12Gi) and prefers 24Gi, a valid amount (a multiple of 4Gi) that fits
	// twice in 141GB: each records 24Gi, under its own share ID.
	var shares []types.UID
	for _, pl := range s.serve {
		r := allocated(pl.Claims[0].Claim)
		if len(r) != 1 || deviceNames(r)[0] != "h200-a/gpu-0" || r[0].ShareID == nil {
			t.Fatalf("%s: %+v", pl.Pod.Name, r)
		}
		if m := r[0].ConsumedCapacity[inventory.CapMemory]; m.Cmp(resource.MustParse("24Gi")) != 0 {
			t.Errorf("%s consumes %s, want 24Gi", pl.Pod.Name, m.String())
		}
		shares = append(shares, *r[0].ShareID)
	}
	if shares[0] == shares[1] {
		t.Errorf("one share ID for two shares: %v", shares)
	}
	h200 := device("h200-a", "gpu-0").Capacity[inventory.CapMemory]
	if twice := resource.MustParse("48Gi"); h200.Value.Cmp(twice) < 0 || !capacity.Valid(resource.MustParse("24Gi"), h200, capacity.Options{}) {
		t.Errorf("two shares of 24Gi do not fit in %s or 24Gi is not valid for its policy", h200.Value.String())
	}

	// 5. Rack r1 holds the H100 nodes; h100-a has 5 free GPUs, too few for 6, so the gang takes h100-b and
	// h100-c, GPUs 0 to 5 of each.
	if s.gang.Domain != "r1" || len(s.gang.Pods) != 2 {
		t.Fatalf("gang in %q with %d pods", s.gang.Domain, len(s.gang.Pods))
	}
	for i, node := range []string{"h100-b", "h100-c"} {
		pl := s.gang.Pods[i]
		want := []string{}
		for g := range 6 {
			want = append(want, node+"/"+inventory.GPUDeviceName(g))
		}
		if got := deviceNames(allocated(pl.Claims[0].Claim)); pl.Node != node || !slices.Equal(got, want) {
			t.Errorf("gang pod %s on %s: %v, want %s: %v", pl.Pod.Name, pl.Node, got, node, want)
		}
	}

	// 6. The rule names h100-c/gpu-0, which trainer-1 holds without a toleration: effect None evicts no
	// one but counts that pod; NoExecute evicts its claim now; new claims see the GPU as blocked.
	if len(s.dryRun.Now)+len(s.dryRun.Later) != 0 || !strings.HasPrefix(s.dryRun.RuleStatus[s.rule.Name].Conditions[0].Message,
		"1 published device selected. 1 allocated device selected. 1 pod would be evicted in 1 namespace ") {
		t.Errorf("dry run: %+v", s.dryRun)
	}
	trainer1 := s.gang.Pods[1].Claims[0].Claim
	if ev := s.evictions.Now; len(ev) != 1 || ev[0].Claim.Name != trainer1.Name || len(ev[0].Pods) != 1 || ev[0].Pods[0].Name != "trainer-1" {
		t.Errorf("evictions now: %+v", ev)
	}
	if !slices.Equal(s.blocked, []string{"h100-c/gpu-0"}) {
		t.Errorf("blocked %v", s.blocked)
	}

	// 7. Six whole GPUs: h100-a has 5 free (2 legacy, 1 train), h100-b and h100-c 2 each, a100-a and
	// h200-a none the class accepts.
	if len(s.why.FitsOn) != 0 || len(s.why.Nodes) != 5 {
		t.Errorf("explanation fits on %v, %d nodes", s.why.FitsOn, len(s.why.Nodes))
	}
	for _, n := range s.why.Nodes {
		if n.Fits || n.Claims == nil {
			t.Errorf("node %s: fits %v, claims %v", n.Node, n.Fits, n.Claims)
			continue
		}
		reasons := strings.Join(n.Claims.Reasons(), "; ")
		want := map[string]string{"a100-a": "0 of 200 are candidates", "h100-a": "5 of 232 are candidates",
			"h100-b": "2 of 232 are candidates", "h100-c": "2 of 232 are candidates", "h200-a": "0 of 8 are candidates"}[n.Node]
		if !strings.Contains(reasons, want) {
			t.Errorf("node %s: %s, want %q", n.Node, reasons, want)
		}
	}

	// 8. Freeing train's h100-a/gpu-2 wakes the pending claim (it asks for that class), and h100-a then
	// has exactly six free GPUs, 2 to 7.
	if !slices.Contains(s.requeued, types.NamespacedName{Namespace: namespace, Name: "finetune"}) {
		t.Errorf("requeued %v", s.requeued)
	}
	if got := deviceNames(allocated(s.big.Claims[0].Claim)); s.big.Node != "h100-a" || len(got) != 6 || got[0] != "h100-a/gpu-2" {
		t.Errorf("finetune on %s: %v", s.big.Node, got)
	}

	// Every allocation the story holds at the end passes the independent checker, node by node.
	ctx := context.Background()
	claims := s.snap.Claims(namespace)
	for _, node := range s.nodes {
		var mine []*resourceapi.ResourceClaim
		var res []resourceapi.AllocationResult
		for _, c := range claims {
			if rs := allocated(c); len(rs) > 0 && rs[0].Pool == node.Name {
				mine = append(mine, c)
				res = append(res, *c.Status.Allocation)
			}
		}
		// The taint rule came after the gang's allocation; it is the eviction controller's business.
		// The inference shares record the preferred amount (24Gi), an SDK extension the checker accepts
		// with RangedShares: at least the point amount (12Gi) and on the device's 4Gi steps.
		v, err := verify.Check(ctx, verify.Input{Slices: s.slices, Classes: s.snap.Classes(), Claims: claims, Node: node, RangedShares: true}, mine, res)
		if err != nil || len(v) > 0 {
			t.Errorf("node %s: %v %v", node.Name, err, v)
		}
	}
}

func equalMaps(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestShowPrintsObjectsAsYAML(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"-show", "claim/ml/train", "-show", "class/gpu.nvidia.com"}, &out); err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(strings.TrimPrefix(out.String(), "---\n"), "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("%d documents:\n%s", len(docs), out.String())
	}
	var claim resourceapi.ResourceClaim
	if err := yaml.UnmarshalStrict([]byte(docs[0]), &claim); err != nil {
		t.Fatal(err)
	}
	if claim.Kind != "ResourceClaim" || claim.APIVersion != "resource.k8s.io/v1" || claim.Name != "train" || claim.Status.Allocation == nil {
		t.Errorf("claim %s %s %s allocated %v", claim.APIVersion, claim.Kind, claim.Name, claim.Status.Allocation != nil)
	}
	var class resourceapi.DeviceClass
	if err := yaml.UnmarshalStrict([]byte(docs[1]), &class); err != nil {
		t.Fatal(err)
	}
	if class.Spec.ExtendedResourceName == nil || *class.Spec.ExtendedResourceName != "nvidia.com/gpu" {
		t.Errorf("class %+v", class.Spec)
	}

	out.Reset()
	if err := run([]string{"-show", "list"}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"node/h100-a\n", "rule/firmware-h100-c-gpu-0\n", "podgroup/ml/trainer\n", "template/ml/kv-cache\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("-show list lacks %q", want)
		}
	}
	if err := run([]string{"-show", "claim/ml/nope"}, io.Discard); err == nil || !strings.Contains(err.Error(), "no such object") {
		t.Errorf("unknown object: %v", err)
	}
}

func TestStoryPrintsEverySection(t *testing.T) {
	var out bytes.Buffer
	if err := run(nil, &out); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 8; i++ {
		if !strings.Contains(out.String(), "\n== "+string(rune('0'+i))+". ") {
			t.Errorf("section %d missing:\n%s", i, out.String())
		}
	}
}
