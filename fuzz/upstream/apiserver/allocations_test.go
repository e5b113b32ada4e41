package apiserver_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/fuzz"
	"github.com/dralloc/dralloc/inventory"
)

// writeAllocations creates the claims in namespace ns, writes each allocation result with a pod reserving the
// claim and the status.devices entries a driver reports (withDeviceStatuses) through UpdateStatus, and checks
// that the status reads back unchanged.
func writeAllocations(t fataler, c kubernetes.Interface, ns string, claims []*resourceapi.ResourceClaim, results []resourceapi.AllocationResult) {
	t.Helper()
	ctx := context.Background()
	if len(results) != len(claims) {
		t.Fatalf("%d results for %d claims", len(results), len(claims))
	}
	for i, claim := range claims {
		claim = claim.DeepCopy()
		claim.Name = uniqueName("allocated")
		claim.Namespace = ns
		claim.ResourceVersion, claim.UID = "", ""
		claim.Status = resourceapi.ResourceClaimStatus{}
		created, err := c.ResourceV1().ResourceClaims(ns).Create(ctx, claim, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create ResourceClaim %s/%s: %v", ns, claim.Name, err)
		}
		created.Status = resourceapi.ResourceClaimStatus{
			Allocation:  results[i].DeepCopy(),
			ReservedFor: []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: "pod-" + claim.Name, UID: types.UID("uid-" + claim.Name)}},
		}
		created = withDeviceStatuses(t, created)
		sent := created.Status.DeepCopy()
		got, err := c.ResourceV1().ResourceClaims(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("write allocation of ResourceClaim %s/%s:\n%s\nkube-apiserver: %v", ns, claim.Name, toYAML(sent), err)
		}
		if !equality.Semantic.DeepEqual(&got.Status, sent) {
			t.Fatalf("ResourceClaim %s/%s: status read back:\n%s\nsent:\n%s", ns, claim.Name, toYAML(got.Status), toYAML(sent))
		}
	}
}

// TestGeneratedAllocationsAreAccepted: what dralloc's allocator allocates for generated clusters — whole
// devices, partitions consuming shared counters, shares of consumable capacity, admin access, prioritized
// alternatives, tolerated taints — is accepted as claim status and read back unchanged.
func TestGeneratedAllocationsAreAccepted(t *testing.T) {
	c := client(t)
	cases := []struct {
		name string
		opts fuzz.Options
		// want names what the results must show at least once, so that the case tests what it says.
		want func(resourceapi.DeviceRequestAllocationResult) bool
	}{
		{"plain", fuzz.Options{}, nil},
		{"partitionable", fuzz.Options{Partitionable: true, CompatibilityGroups: true}, nil},
		{"consumable capacity", fuzz.Options{ConsumableCapacity: true, NetworkAttached: true},
			func(r resourceapi.DeviceRequestAllocationResult) bool {
				return r.ShareID != nil && len(r.ConsumedCapacity) > 0
			}},
		{"admin access", fuzz.Options{AdminAccess: true},
			func(r resourceapi.DeviceRequestAllocationResult) bool { return r.AdminAccess != nil && *r.AdminAccess }},
		{"firstAvailable and tolerations", fuzz.Options{FirstAvailable: true, Taints: true, Constraints: true},
			func(r resourceapi.DeviceRequestAllocationResult) bool { return len(r.Tolerations) > 0 }},
		{"all features", fuzz.AllOptions(), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			allocated, shown := 0, 0
			// try allocates one cluster and writes what it allocated; it reports whether a result shows the
			// feature under test.
			try := func(rt fataler, cl *fuzz.Cluster) bool {
				s, err := cl.Snapshot(allocator.Options{})
				if err != nil {
					rt.Fatalf("snapshot: %v", err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				results, err := s.Allocate(ctx, cl.Node, cl.Claims)
				if err != nil {
					// Not allocated (does not fit, or the search gave up): nothing to write. No skip, which
					// rapid would count against the run when most clusters with every feature do not fit.
					return false
				}
				ns := createCluster(rt, c, cl)
				writeAllocations(rt, c, ns, cl.Claims, results)
				allocated++
				found := false
				for _, r := range results {
					if tc.want != nil && slices.ContainsFunc(r.Devices.Results, tc.want) {
						shown++
						found = true
					}
				}
				return found
			}
			gen := fuzz.ClusterGen(tc.opts)
			rapid.Check(t, func(rt *rapid.T) { try(rt, gen.Draw(rt, "cluster")) })
			// rapid's draws are random: where none of them happened to show the feature (a few in a
			// hundred do), more examples of the same generator are written until one does.
			for i := 0; tc.want != nil && shown == 0 && i < 300; i++ {
				try(t, gen.Example(i))
			}
			if allocated == 0 {
				t.Errorf("no generated cluster was allocated")
			}
			if tc.want != nil && shown == 0 {
				t.Errorf("no allocation shows the feature under test")
			}
			t.Logf("%d clusters allocated and written", allocated)
			if tc.want != nil {
				t.Logf("%d claims show the feature under test", shown)
			}
		})
	}
}

// TestInventoryAllocationsAreAccepted: claims for whole GPUs, MIG partitions of a dynamically partitioned DGX
// H100 and admin access to its GPUs, allocated by dralloc, are accepted as claim status.
func TestInventoryAllocationsAreAccepted(t *testing.T) {
	c := client(t)
	ns := namespace(t, c)
	ctx := context.Background()
	tmpl, err := inventory.Profile("dgxh100")
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: uniqueName("dgxh100")}}
			slices, err := inventory.Slices(tmpl.Node, inventory.Options{NodeName: node.Name, Mode: mode})
			if err != nil {
				t.Fatal(err)
			}
			classes := []*resourceapi.DeviceClass{
				nvidiaClass("gpu.nvidia.com", inventory.TypeGPU),
				nvidiaClass("mig.nvidia.com", inventory.TypeMIG),
			}
			s := allocator.NewSnapshot(allocator.Options{})
			if err := s.AddOrUpdateNode(node); err != nil {
				t.Fatal(err)
			}
			for _, x := range slices {
				if err := s.AddOrUpdateSlice(x); err != nil {
					t.Fatal(err)
				}
			}
			for _, x := range classes {
				if err := s.AddOrUpdateClass(x); err != nil {
					t.Fatal(err)
				}
			}
			claims := []*resourceapi.ResourceClaim{
				nvidiaClaim("two-gpus", "gpu.nvidia.com", 2, "", false),
				nvidiaClaim("admin", "gpu.nvidia.com", 1, "", true),
			}
			if hasMIG(slices) {
				claims = append(claims,
					nvidiaClaim("small-mig", "mig.nvidia.com", 2, "1g.10gb", false),
					nvidiaClaim("large-mig", "mig.nvidia.com", 1, "3g.40gb", false))
			} else if mode == inventory.ModeDynamicMIG {
				t.Fatalf("dynamic MIG published no MIG devices")
			}
			results, err := s.Allocate(ctx, node, claims)
			if err != nil {
				t.Fatalf("allocate: %v", err)
			}
			writeAllocations(t, c, ns, claims, results)
		})
	}
}

func nvidiaClass(name, typ string) *resourceapi.DeviceClass {
	return &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: resourceapi.DeviceClassSpec{
		Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf(
			`device.driver == %q && device.attributes[%q].type == %q`, inventory.DefaultDriver, inventory.DefaultDriver, typ)}}},
	}}
}

func nvidiaClaim(name, class string, count int64, profile string, adminAccess bool) *resourceapi.ResourceClaim {
	r := &resourceapi.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count}
	if profile != "" {
		r.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf(
			`device.attributes[%q].profile == %q`, inventory.DefaultDriver, profile)}}}
	}
	if adminAccess {
		r.AdminAccess = ptr.To(true)
	}
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
	c.Spec.Devices.Requests = []resourceapi.DeviceRequest{{Name: "req", Exactly: r}}
	return c
}

func hasMIG(slices []*resourceapi.ResourceSlice) bool {
	for _, s := range slices {
		for _, d := range s.Spec.Devices {
			if a, ok := d.Attributes[inventory.AttrType]; ok && a.StringValue != nil && *a.StringValue == inventory.TypeMIG {
				return true
			}
		}
	}
	return false
}
