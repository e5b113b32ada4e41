package allocator_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/fuzz"
)

// topologyMeasure is Topology's measure of an allocation, computed here from the published slices,
// independently of the allocator: per attribute of allocator.DefaultTopologyAttributes (the NUMA node,
// then the PCIe root), the number of distinct values among the allocated devices, a device without the
// attribute counting as a value of its own.
func topologyMeasure(c *fuzz.Cluster, results []resourceapi.AllocationResult) []int {
	attrs := allocator.DefaultTopologyAttributes()
	devices := map[string]*resourceapi.Device{}
	for _, d := range c.Devices() {
		devices[d.ID.Driver+"/"+d.ID.Pool+"/"+d.ID.Device] = d.Device
	}
	out := make([]int, len(attrs))
	for k, name := range attrs {
		seen := map[string]bool{}
		for _, res := range results {
			for _, r := range res.Devices.Results {
				id := r.Driver + "/" + r.Pool + "/" + r.Device
				key := "device " + id
				if v, ok := devices[id].Attributes[resourceapi.QualifiedName(name)]; ok {
					switch {
					case v.IntValue != nil:
						key = fmt.Sprintf("int %d", *v.IntValue)
					case v.StringValue != nil:
						key = "string " + *v.StringValue
					}
				}
				seen[key] = true
			}
		}
		out[k] = len(seen)
	}
	return out
}

// alternatives names the requests and subrequests an allocation took, claim by claim: two allocations
// with the same names took the same alternatives of every firstAvailable request.
func alternatives(results []resourceapi.AllocationResult) string {
	var out []string
	for _, res := range results {
		var names []string
		for _, r := range res.Devices.Results {
			if !slices.Contains(names, r.Request) {
				names = append(names, r.Request)
			}
		}
		slices.Sort(names)
		out = append(out, strings.Join(names, ","))
	}
	return strings.Join(out, ";")
}

// closerMeasure: x is smaller than y, the first attribute that differs deciding.
func closerMeasure(x, y []int) bool { return slices.Compare(x, y) < 0 }

// allocateTopology allocates the cluster's claims under FirstFit, with the topology preference of the
// default attributes and the given improvement budget (nil: none).
func allocateTopology(ctx context.Context, c *fuzz.Cluster, topo *allocator.Topology) ([]resourceapi.AllocationResult, error) {
	s, err := c.Snapshot(allocator.Options{StepBudget: strategyStepBudget, Topology: topo})
	if err != nil {
		return nil, err
	}
	return s.Allocate(ctx, c.Node, c.Claims)
}

// topologyCase builds the DGX-like node of TopologyClusterGen (8 GPUs and 8 NICs, GPU and NIC i on PCIe
// root i/2, NUMA node i/4) with the named devices in use, and the pod's claims.
func topologyCase(t testing.TB, used []string, claims ...*resourceapi.ResourceClaim) *fuzz.Cluster {
	t.Helper()
	// The generator's node; what it draws at random (used devices, shareable NICs, NICs without their
	// NUMA node, the claims) is set here.
	c := fuzz.TopologyClusterGen(fuzz.TopologyOptions{}).Example(0)
	c.Allocated, c.Claims = nil, claims
	for _, s := range c.Slices {
		for i := range s.Spec.Devices {
			s.Spec.Devices[i].AllowMultipleAllocations = nil
			if s.Spec.Driver == fuzz.NICDriver {
				numa := int64(i / 4)
				s.Spec.Devices[i].Attributes[fuzz.AttributeNUMANode] = resourceapi.DeviceAttribute{IntValue: &numa}
			}
		}
	}
	for i, name := range used {
		class, driver := "gpu", fuzz.GPUDriver
		if strings.HasPrefix(name, "nic") {
			class, driver = "nic", fuzz.NICDriver
		}
		held := podClaim(fmt.Sprintf("running-%d", i), gpuNIC{class, 1})
		held.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
			Results: []resourceapi.DeviceRequestAllocationResult{{Request: class, Driver: driver, Pool: "node-0", Device: name}}}}
		c.Allocated = append(c.Allocated, held)
	}
	return c
}

type gpuNIC struct {
	class string
	count int64
}

// podClaim is a claim with one request per entry, named after its class.
func podClaim(name string, reqs ...gpuNIC) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{}
	c.Namespace, c.Name = "default", name
	for _, r := range reqs {
		c.Spec.Devices.Requests = append(c.Spec.Devices.Requests, resourceapi.DeviceRequest{Name: r.class, Exactly: &resourceapi.ExactDeviceRequest{
			DeviceClassName: r.class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: r.count}})
	}
	return c
}

func deviceNames(results []resourceapi.AllocationResult) string {
	var names []string
	for _, res := range results {
		for _, r := range res.Devices.Results {
			names = append(names, r.Device)
		}
	}
	return strings.Join(names, " ")
}

// The cases where a preference that orders one request at a time went wrong: with the whole placement
// judged, each gets the closest placement there is, never farther than upstream's order.
func TestTopologyJudgesTheWholePlacement(t *testing.T) {
	cases := []struct {
		name    string
		used    []string
		claims  []*resourceapi.ResourceClaim
		want    string // the devices, in the order of the results
		measure []int  // their NUMA nodes and PCIe roots
	}{{
		// The smallest free GPU domain is gpu-3 (NUMA node 0, root 01), whose root has no free NIC; the
		// GPU, requested first, takes it without looking at the NIC.
		name:    "GPU requested first, a GPU and NIC pair free on one root",
		used:    []string{"gpu-0", "gpu-1", "gpu-2", "nic-2", "nic-3"},
		claims:  []*resourceapi.ResourceClaim{podClaim("pod", gpuNIC{"gpu", 1}, gpuNIC{"nic", 1})},
		want:    "gpu-4 nic-4",
		measure: []int{1, 1},
	}, {
		// The NIC, requested first, would go to the smaller NIC domain, NUMA node 1, where no GPU is
		// free; upstream's order takes nic-0 and gpu-0, on one root.
		name:    "NIC requested first lands on the NUMA node that has a free GPU",
		used:    []string{"gpu-4", "gpu-5", "gpu-6", "gpu-7", "nic-5", "nic-6", "nic-7"},
		claims:  []*resourceapi.ResourceClaim{podClaim("pod", gpuNIC{"nic", 1}, gpuNIC{"gpu", 1})},
		want:    "nic-0 gpu-0",
		measure: []int{1, 1},
	}, {
		// Two claims of one pod, allocated in one call: the NIC claim follows the GPU claim's root.
		name:    "GPU claim and NIC claim of one pod linked",
		used:    []string{"nic-0", "nic-1", "nic-4", "nic-5", "nic-6"},
		claims:  []*resourceapi.ResourceClaim{podClaim("pod-gpu", gpuNIC{"gpu", 1}), podClaim("pod-nic", gpuNIC{"nic", 1})},
		want:    "gpu-2 nic-2",
		measure: []int{1, 1},
	}, {
		// Eight GPUs span both NUMA nodes and every root whatever the choice: the first placement is
		// the closest, and the search proves it within its budget.
		name:    "a pod of every GPU",
		claims:  []*resourceapi.ResourceClaim{podClaim("pod", gpuNIC{"gpu", 8})},
		want:    "gpu-0 gpu-1 gpu-2 gpu-3 gpu-4 gpu-5 gpu-6 gpu-7",
		measure: []int{2, 4},
	}}
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := topologyCase(t, tc.used, tc.claims...)
			res, err := allocateTopology(ctx, c, &allocator.Topology{})
			if err != nil {
				t.Fatal(err)
			}
			if got := deviceNames(res); got != tc.want {
				t.Errorf("devices %q, want %q", got, tc.want)
			}
			verifyAll(t, c, res)
			plain, err := allocateTopology(ctx, c, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, none := topologyMeasure(c, res), topologyMeasure(c, plain)
			if !slices.Equal(got, tc.measure) {
				t.Errorf("measure %v, want %v", got, tc.measure)
			}
			if closerMeasure(none, got) {
				t.Errorf("measure %v, farther than %v without the preference (%s)", got, none, deviceNames(plain))
			}
		})
	}
}

// verifyAll fails the test when allocator/verify finds a violation in the results.
func verifyAll(t *testing.T, c *fuzz.Cluster, results []resourceapi.AllocationResult) {
	t.Helper()
	violations, err := c.Verify(context.Background(), results)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range violations {
		t.Errorf("%s", v)
	}
}

// On generated DGX-like nodes (8 GPUs, 8 NICs, 4 PCIe roots, 2 NUMA nodes, partly used) the preference
// never changes whether the pod's claims fit, every allocation it makes passes allocator/verify, and its
// placement is never farther than the one made without it where both take the same alternatives of
// firstAvailable requests (the preference keeps those its search takes first), with the default budget
// and with a budget of a single step.
func TestPropTopologyOnDGXNodes(t *testing.T) {
	ctx := context.Background()
	rapid.Check(t, func(rt *rapid.T) {
		c := fuzz.TopologyClusterGen(fuzz.TopologyOptions{}).Draw(rt, "cluster")
		before := c.DeepCopy()
		plain, plainErr := allocateTopology(ctx, c, nil)
		for _, topo := range []*allocator.Topology{{}, {Steps: 1}} {
			res, err := allocateTopology(ctx, c, topo)
			if (plainErr == nil) != (err == nil) || plainErr != nil && errors.Is(plainErr, allocator.ErrUnsatisfiable) != errors.Is(err, allocator.ErrUnsatisfiable) {
				rt.Fatalf("steps %d: without the preference %v, with it %v", topo.Steps, plainErr, err)
			}
			if err != nil {
				continue
			}
			violations, verr := c.Verify(ctx, res)
			if verr != nil {
				rt.Fatal(verr)
			}
			for _, v := range violations {
				rt.Errorf("steps %d: %s", topo.Steps, v)
			}
			if alternatives(res) != alternatives(plain) {
				continue
			}
			if got, none := topologyMeasure(c, res), topologyMeasure(c, plain); closerMeasure(none, got) {
				rt.Fatalf("steps %d: %s spans %v, farther than %s (%v) without the preference", topo.Steps, deviceNames(res), got, deviceNames(plain), none)
			}
		}
		if !equalClusters(before, c) {
			rt.Fatalf("the cluster was mutated")
		}
	})
}

// On small generated nodes (4 GPUs, 4 NICs, 2 PCIe roots, 2 NUMA nodes), where every choice of devices
// can be tried, the placement the preference returns is as close as the closest valid choice that takes
// the same alternatives of firstAvailable requests (fuzz.ExhaustiveEach, which knows nothing of the
// allocator's search, judged by allocator/verify).
func TestPropTopologyFindsClosestPlacement(t *testing.T) {
	ctx := context.Background()
	small := fuzz.TopologyOptions{GPUs: 4, NICs: 4, Roots: 2, NUMANodes: 2}
	rapid.Check(t, func(rt *rapid.T) {
		c := fuzz.TopologyClusterGen(small).Draw(rt, "cluster")
		res, err := allocateTopology(ctx, c, &allocator.Topology{})
		var best []int
		v := fuzz.ExhaustiveEach(ctx, c, 100000, func(results []resourceapi.AllocationResult) {
			if err == nil && alternatives(results) != alternatives(res) {
				return
			}
			if m := topologyMeasure(c, results); best == nil || closerMeasure(m, best) {
				best = m
			}
		})
		switch {
		case v == fuzz.Undecided:
			rt.Skip("too many choices to try")
		case v == fuzz.DoesNotFit && err == nil:
			rt.Fatalf("no choice is valid, the allocator returns %s", deviceNames(res))
		case v == fuzz.DoesNotFit:
			return
		case err != nil:
			rt.Fatalf("a valid choice spans %v, the allocator answers %v", best, err)
		}
		if best == nil {
			rt.Fatalf("no valid choice takes the alternatives of %s", deviceNames(res))
		}
		if got := topologyMeasure(c, res); !slices.Equal(got, best) {
			rt.Fatalf("%s spans %v, the closest valid choice spans %v", deviceNames(res), got, best)
		}
	})
}

// equalClusters compares two clusters by their objects' printed form.
func equalClusters(x, y *fuzz.Cluster) bool { return x.String() == y.String() }

// A placement draws its share IDs only once it is returned: with shareable NICs, the NIC of the closest
// placement gets the deterministic source's first ID (the first placement, which the improvement drops,
// drew none), and the result passes allocator/verify.
func TestTopologyDrawsShareIDsOfTheReturnedPlacement(t *testing.T) {
	c := topologyCase(t, []string{"gpu-0", "gpu-1", "gpu-2", "nic-2", "nic-3"}, podClaim("pod", gpuNIC{"gpu", 1}, gpuNIC{"nic", 1}))
	for _, s := range c.Slices {
		if s.Spec.Driver == fuzz.NICDriver {
			for i := range s.Spec.Devices {
				s.Spec.Devices[i].AllowMultipleAllocations = ptr(true)
			}
		}
	}
	res, err := allocateTopology(context.Background(), c, &allocator.Topology{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := deviceNames(res), "gpu-4 nic-4"; got != want {
		t.Fatalf("devices %q, want %q", got, want)
	}
	nic := res[0].Devices.Results[1]
	if nic.ShareID == nil || *nic.ShareID != "00000000-0000-4000-8000-000000000001" {
		t.Errorf("share ID %v, want the source's first", nic.ShareID)
	}
	verifyAll(t, c, res)
}

// Where the improvement's budget runs out before it finds a closer placement, the call answers with
// the placement found without the preference when that one is closer: a budget of one step, on the case
// where the preference's order alone puts the NIC on the NUMA node without a free GPU.
func TestTopologyBudgetSpentFallsBackToCloserPlain(t *testing.T) {
	c := topologyCase(t, []string{"gpu-4", "gpu-5", "gpu-6", "gpu-7", "nic-5", "nic-6", "nic-7"}, podClaim("pod", gpuNIC{"nic", 1}, gpuNIC{"gpu", 1}))
	for _, steps := range []int{1, 0} {
		res, err := allocateTopology(context.Background(), c, &allocator.Topology{Steps: steps})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := deviceNames(res), "nic-0 gpu-0"; got != want {
			t.Errorf("steps %d: devices %q, want %q", steps, got, want)
		}
	}
}

// Topology.Steps is a budget: a negative one is refused, naming the field, and the snapshot keeps its
// own copy.
func TestTopologyStepsOption(t *testing.T) {
	n := node("node-a", nil)
	_, err := allocator.NewSnapshot(allocator.Options{Topology: &allocator.Topology{Steps: -1}}).Allocate(context.Background(), n, nil)
	if !errors.Is(err, allocator.ErrInvalidInput) || !strings.Contains(err.Error(), "Options.Topology.Steps") {
		t.Errorf("error %v, want ErrInvalidInput naming Options.Topology.Steps", err)
	}
	topo := &allocator.Topology{Steps: 5}
	snap := allocator.NewSnapshot(allocator.Options{Topology: topo})
	topo.Steps = -1
	if _, err := snap.Allocate(context.Background(), n, nil); err != nil {
		t.Errorf("the snapshot read the caller's changed option: %v", err)
	}
}
