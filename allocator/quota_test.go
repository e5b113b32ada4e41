package allocator_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/inventory"
)

// inNamespace puts a claim into a namespace, the quota's default owner.
func inNamespace(ns string, c *resourceapi.ResourceClaim) *resourceapi.ResourceClaim {
	c.Namespace = ns
	return c
}

func devicesLimit(owner, class string, max string) allocator.QuotaLimit {
	return allocator.QuotaLimit{Owner: owner, Class: class, Kind: allocator.QuotaDevices, Max: quantity(max)}
}

// quotaSnapshot is a snapshot of node-1 with devices dev-0..dev-3 of class "any", the quota given and the
// claims added (allocated ones hold their devices).
func quotaSnapshot(t *testing.T, q *allocator.Quota, devs []resourceapi.Device, claims ...*resourceapi.ResourceClaim) *allocator.Snapshot {
	t.Helper()
	s := allocator.NewSnapshot(allocator.Options{Quota: q, ShareIDs: sequentialShareIDs()})
	if err := s.AddOrUpdateSlice(nodeSlice("s1", node1, driverA, "pool-1", devs...)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*resourceapi.DeviceClass{class("any"), class("other")} {
		if err := s.AddOrUpdateClass(c); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range claims {
		if err := s.AddOrUpdateClaim(c); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// TestQuotaRefusalNamesLimitHeldAndAsked: a tenant holding one device under a limit of two asks for
// two more; the node has them, the quota does not. The error is "does not fit" (ErrUnsatisfiable) and
// ErrQuotaExceeded, and names the limit, the one held and the two asked; raising the limit to
// held+asked lets the claim fit. Another tenant's claim is not limited.
func TestQuotaRefusalNamesLimitHeldAndAsked(t *testing.T) {
	held := inNamespace("team-a", allocatedClaim("held", result(driverA, "pool-1", "dev-0")))
	ask := inNamespace("team-a", claim("ask", exact("gpus", "any", 2)))
	q := &allocator.Quota{Limits: []allocator.QuotaLimit{devicesLimit("team-a", "any", "2")}}
	s := quotaSnapshot(t, q, devices("dev-0", "dev-1", "dev-2", "dev-3"), held)
	ctx := context.Background()

	_, err := s.Allocate(ctx, node(node1, nil), []*resourceapi.ResourceClaim{ask})
	var ue *allocator.UnsatisfiableError
	if !errors.Is(err, allocator.ErrQuotaExceeded) || !errors.Is(err, allocator.ErrUnsatisfiable) || !errors.As(err, &ue) {
		t.Fatalf("Allocate: %v, want an UnsatisfiableError wrapping ErrQuotaExceeded", err)
	}
	if len(ue.Quota) != 1 || ue.Quota[0].Held.Value() != 1 || ue.Quota[0].Asked.Value() != 2 || ue.Quota[0].Limit.Max.Value() != 2 {
		t.Fatalf("Quota = %v, want the limit of 2 with 1 held and 2 asked", ue.Quota)
	}
	want := "quota owner team-a, DeviceClass any, devices ≤ 2: holds 1, asks for 2 more"
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("Allocate: %v, want it to say %q", err, want)
	}
	if fits, err := s.Fits(ctx, node(node1, nil), []*resourceapi.ResourceClaim{ask}); fits || err != nil {
		t.Fatalf("Fits: %v, %v; want false without error", fits, err)
	}

	other := inNamespace("team-b", claim("other", exact("gpus", "any", 3)))
	if _, err := s.Allocate(ctx, node(node1, nil), []*resourceapi.ResourceClaim{other}); err != nil {
		t.Fatalf("Allocate for a tenant without a limit: %v", err)
	}

	raised := &allocator.Quota{Limits: []allocator.QuotaLimit{devicesLimit("team-a", "any", "3")}}
	s = quotaSnapshot(t, raised, devices("dev-0", "dev-1", "dev-2", "dev-3"), held)
	if _, err := s.Allocate(ctx, node(node1, nil), []*resourceapi.ResourceClaim{ask}); err != nil {
		t.Fatalf("Allocate with the limit raised to held+asked: %v", err)
	}
}

// TestQuotaNotFittingTheNodeIsNotAQuotaError: claims that do not fit the node whatever the quota get the
// answer they get without it.
func TestQuotaNotFittingTheNodeIsNotAQuotaError(t *testing.T) {
	q := &allocator.Quota{Limits: []allocator.QuotaLimit{devicesLimit("team-a", "any", "1")}}
	s := quotaSnapshot(t, q, devices("dev-0", "dev-1"))
	ask := inNamespace("team-a", claim("ask", exact("gpus", "any", 3)))
	_, err := s.Allocate(context.Background(), node(node1, nil), []*resourceapi.ResourceClaim{ask})
	if !errors.Is(err, allocator.ErrUnsatisfiable) || errors.Is(err, allocator.ErrQuotaExceeded) {
		t.Fatalf("Allocate: %v, want ErrUnsatisfiable without ErrQuotaExceeded", err)
	}
}

// TestQuotaClaimsOfOneCallChargeTogether: two claims of one owner in one call share its quota.
func TestQuotaClaimsOfOneCallChargeTogether(t *testing.T) {
	q := &allocator.Quota{Limits: []allocator.QuotaLimit{devicesLimit("team-a", "any", "3")}}
	s := quotaSnapshot(t, q, devices("dev-0", "dev-1", "dev-2", "dev-3"))
	claims := []*resourceapi.ResourceClaim{
		inNamespace("team-a", claim("one", exact("gpus", "any", 2))),
		inNamespace("team-a", claim("two", exact("gpus", "any", 2))),
	}
	_, err := s.Allocate(context.Background(), node(node1, nil), claims)
	var ue *allocator.UnsatisfiableError
	if !errors.As(err, &ue) || len(ue.Quota) != 1 || ue.Quota[0].Asked.Value() != 4 || ue.Quota[0].Held.Value() != 0 {
		t.Fatalf("Allocate: %v, want a quota error asking for 4 with none held", err)
	}
}

// TestQuotaFirstAvailableTakesTheAlternativeWithinQuota: with its quota of class "any" used up, a
// request falls back to its second alternative, of class "other"; without the quota it takes the
// first.
func TestQuotaFirstAvailableTakesTheAlternativeWithinQuota(t *testing.T) {
	held := inNamespace("team-a", allocatedClaim("held", result(driverA, "pool-1", "dev-0")))
	ask := inNamespace("team-a", claim("ask", firstAvailable("gpu", sub("whole", "any", 1), sub("slice", "other", 1))))
	for _, tc := range []struct {
		name  string
		quota *allocator.Quota
		want  string
	}{
		{"no quota", nil, "gpu/whole"},
		{"quota left", &allocator.Quota{Limits: []allocator.QuotaLimit{devicesLimit("team-a", "any", "2")}}, "gpu/whole"},
		{"quota used up", &allocator.Quota{Limits: []allocator.QuotaLimit{devicesLimit("team-a", "any", "1")}}, "gpu/slice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := quotaSnapshot(t, tc.quota, devices("dev-0", "dev-1"), held)
			res, err := s.Allocate(context.Background(), node(node1, nil), []*resourceapi.ResourceClaim{ask})
			if err != nil {
				t.Fatal(err)
			}
			if got := res[0].Devices.Results[0].Request; got != tc.want {
				t.Fatalf("request %q, want %q", got, tc.want)
			}
		})
	}
}

// TestQuotaAllIsChargedWhatItTakes: a request for all devices is charged the devices of the node it
// takes, not Kubernetes' admission-time worst case of 32.
func TestQuotaAllIsChargedWhatItTakes(t *testing.T) {
	ask := inNamespace("team-a", claim("ask", allOf("all", "any")))
	for _, tc := range []struct {
		max  string
		fits bool
	}{{"3", true}, {"2", false}} {
		q := &allocator.Quota{Limits: []allocator.QuotaLimit{devicesLimit("team-a", "any", tc.max)}}
		s := quotaSnapshot(t, q, devices("dev-0", "dev-1", "dev-2"))
		_, err := s.Allocate(context.Background(), node(node1, nil), []*resourceapi.ResourceClaim{ask})
		var ue *allocator.UnsatisfiableError
		switch {
		case tc.fits && err != nil:
			t.Fatalf("limit %s: %v, want a fit", tc.max, err)
		case !tc.fits && (!errors.As(err, &ue) || len(ue.Quota) != 1 || ue.Quota[0].Asked.Value() != 3):
			t.Fatalf("limit %s: %v, want a quota error asking for 3", tc.max, err)
		}
	}
}

// TestQuotaAdminAccessChargesNothing: a request with adminAccess takes nothing from other users and is
// not charged, even at a limit of zero.
func TestQuotaAdminAccessChargesNothing(t *testing.T) {
	r := exact("admin", "any", 1)
	r.Exactly.AdminAccess = ptr(true)
	ask := inNamespace("team-a", claim("ask", r))
	q := &allocator.Quota{Limits: []allocator.QuotaLimit{devicesLimit("team-a", "any", "0")}}
	s := quotaSnapshot(t, q, devices("dev-0"))
	if _, err := s.Allocate(context.Background(), node(node1, nil), []*resourceapi.ResourceClaim{ask}); err != nil {
		t.Fatalf("Allocate with adminAccess at a limit of 0: %v", err)
	}
}

// TestQuotaSharesChargeRoundedCapacity: a share asking for 5Gi of a device whose request policy rounds
// up to steps of 8Gi is charged 8Gi; under a limit of 12Gi the first share fits and the second, held
// 8Gi, is refused naming 8Gi asked.
func TestQuotaSharesChargeRoundedCapacity(t *testing.T) {
	policy := &resourceapi.CapacityRequestPolicy{
		Default:    ptr(quantity("8Gi")),
		ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: ptr(quantity("8Gi")), Step: ptr(quantity("8Gi"))},
	}
	devs := []resourceapi.Device{shareable("shared-0", "80Gi", policy)}
	q := &allocator.Quota{Limits: []allocator.QuotaLimit{{Owner: "team-a", Class: "any", Kind: allocator.QuotaCapacity, Name: "memory", Max: quantity("12Gi")}}}
	s := quotaSnapshot(t, q, devs)
	ctx := context.Background()
	first := inNamespace("team-a", claim("first", withCapacity(exact("mem", "any", 1), "5Gi")))
	res, err := s.Allocate(ctx, node(node1, nil), []*resourceapi.ResourceClaim{first})
	if err != nil {
		t.Fatal(err)
	}
	if got := res[0].Devices.Results[0].ConsumedCapacity["memory"]; got.Cmp(quantity("8Gi")) != 0 {
		t.Fatalf("consumed %s, want 8Gi", got.String())
	}
	first.Status.Allocation = &res[0]
	if err := s.AddOrUpdateClaim(first); err != nil {
		t.Fatal(err)
	}
	second := inNamespace("team-a", claim("second", withCapacity(exact("mem", "any", 1), "1Gi")))
	_, err = s.Allocate(ctx, node(node1, nil), []*resourceapi.ResourceClaim{second})
	var ue *allocator.UnsatisfiableError
	if !errors.As(err, &ue) || len(ue.Quota) != 1 || ue.Quota[0].Held.Cmp(quantity("8Gi")) != 0 || ue.Quota[0].Asked.Cmp(quantity("8Gi")) != 0 {
		t.Fatalf("Allocate: %v, want a quota error with 8Gi held and 8Gi asked", err)
	}
}

// TestQuotaInvalidLimit: a limit the quota cannot apply fails every call with an InputError naming the
// field.
func TestQuotaInvalidLimit(t *testing.T) {
	for _, tc := range []struct {
		limit allocator.QuotaLimit
		field string
	}{
		{devicesLimit("a", "any", "-1"), "Quota.Limits[0].Max"},
		{devicesLimit("a", "", "1"), "Quota.Limits[0].Class"},
		{allocator.QuotaLimit{Owner: "a", Class: "any", Kind: allocator.QuotaCounter, Max: quantity("1")}, "Quota.Limits[0].Name"},
		{allocator.QuotaLimit{Owner: "a", Class: "any", Kind: 7, Max: quantity("1")}, "Quota.Limits[0].Kind"},
	} {
		s := allocator.NewSnapshot(allocator.Options{Quota: &allocator.Quota{Limits: []allocator.QuotaLimit{tc.limit}}})
		_, err := s.Allocate(context.Background(), node(node1, nil), nil)
		var in *allocator.InputError
		if !errors.As(err, &in) || in.Field != tc.field || !errors.Is(err, allocator.ErrInvalidInput) {
			t.Fatalf("limit %v: %v, want an InputError naming %s", tc.limit, err, tc.field)
		}
	}
}

// TestQuotaCountersOfPartitions: on a DGX H100 in dynamic MIG, a tenant limited to 2 copy engines of
// class "mig" gets one 1g.10gb partition (one copy engine) and one 2g.20gb (two) does not fit beside
// it; the explanation names the counter, one held, two asked.
func TestQuotaCountersOfPartitions(t *testing.T) {
	q := &allocator.Quota{Limits: []allocator.QuotaLimit{{Owner: "team-a", Class: "mig", Kind: allocator.QuotaCounter, Name: "copy-engines", Max: quantity("2")}}}
	s, n := mixedNodeWith(t, "dgxh100", inventory.ModeDynamicMIG, allocator.Options{Quota: q}, 0)
	ctx := context.Background()
	small := inNamespace("team-a", claim("small", exact("mig", "mig", 1, `device.attributes["gpu.nvidia.com"].profile == "1g.10gb"`)))
	res, err := s.Allocate(ctx, n, []*resourceapi.ResourceClaim{small})
	if err != nil {
		t.Fatal(err)
	}
	small.Status.Allocation = &res[0]
	if err := s.AddOrUpdateClaim(small); err != nil {
		t.Fatal(err)
	}
	big := inNamespace("team-a", claim("big", exact("mig", "mig", 1, `device.attributes["gpu.nvidia.com"].profile == "2g.20gb"`)))
	_, err = s.Allocate(ctx, n, []*resourceapi.ResourceClaim{big})
	var ue *allocator.UnsatisfiableError
	if !errors.As(err, &ue) || len(ue.Quota) != 1 || ue.Quota[0].Held.Value() != 1 || ue.Quota[0].Asked.Value() != 2 {
		t.Fatalf("Allocate: %v, want a quota error on copy-engines with 1 held and 2 asked", err)
	}
	e, err := s.Explain(ctx, n, []*resourceapi.ResourceClaim{big})
	if err != nil || e.Fits || len(e.Quota) != 1 || !strings.Contains(e.Dominant(), "counter copy-engines ≤ 2: holds 1, asks for 2 more") {
		t.Fatalf("Explain: %+v, %v; want the quota as the dominant reason", e, err)
	}
}

// TestQuotaFromResourceQuotas: the keys kube-apiserver v1.37.2's claim evaluator matches become limits
// on devices per class and namespace; scoped quotas and other keys are skipped; bad input is an error
// naming the object.
func TestQuotaFromResourceQuotas(t *testing.T) {
	rq := func(ns, name string, hard v1.ResourceList) *v1.ResourceQuota {
		return &v1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.ResourceQuotaSpec{Hard: hard}}
	}
	scoped := rq("team-c", "scoped", v1.ResourceList{"gpu.deviceclass.resource.k8s.io/devices": quantity("1")})
	scoped.Spec.Scopes = []v1.ResourceQuotaScope{v1.ResourceQuotaScopeBestEffort}
	ext := class("fast")
	ext.Spec.ExtendedResourceName = ptr("example.com/gpu")
	q, err := allocator.QuotaFromResourceQuotas([]*v1.ResourceQuota{
		rq("team-a", "q", v1.ResourceList{
			"gpu.deviceclass.resource.k8s.io/devices":         quantity("2"),
			"requests.deviceclass.resource.kubernetes.io/mig": quantity("7"),
			"requests.example.com/gpu":                        quantity("3"),
			"requests.cpu":                                    quantity("8"),
			"count/resourceclaims.resource.k8s.io":            quantity("10"),
			"requests.example.com/unknown-extended-resource":  quantity("1"),
		}),
		rq("team-b", "q", v1.ResourceList{"gpu.deviceclass.resource.k8s.io/devices": quantity("0")}),
		scoped,
	}, []*resourceapi.DeviceClass{ext, class("gpu")})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range q.Limits {
		got = append(got, l.String())
	}
	want := []string{
		"owner team-a, DeviceClass gpu, devices ≤ 2",
		"owner team-a, DeviceClass mig, devices ≤ 7",
		"owner team-a, DeviceClass fast, devices ≤ 3",
		"owner team-b, DeviceClass gpu, devices ≤ 0",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("limits:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	for _, tc := range []struct {
		quotas []*v1.ResourceQuota
		object string
	}{
		{[]*v1.ResourceQuota{nil}, "quotas[0]"},
		{[]*v1.ResourceQuota{rq("ns", "neg", v1.ResourceList{"gpu.deviceclass.resource.k8s.io/devices": quantity("-1")})}, "ResourceQuota ns/neg"},
		{[]*v1.ResourceQuota{rq("ns", "empty", v1.ResourceList{".deviceclass.resource.k8s.io/devices": quantity("1")})}, "ResourceQuota ns/empty"},
	} {
		_, err := allocator.QuotaFromResourceQuotas(tc.quotas, nil)
		var in *allocator.InputError
		if !errors.As(err, &in) || in.Object != tc.object {
			t.Fatalf("%v: want an InputError naming %s", err, tc.object)
		}
	}
}

// TestSetQuota: a quota set after the snapshot was filled applies to the calls that follow, an invalid
// one is refused and leaves the quota as it was, and nil removes it.
func TestSetQuota(t *testing.T) {
	s := quotaSnapshot(t, nil, devices("dev-0", "dev-1"))
	ask := []*resourceapi.ResourceClaim{inNamespace("team-a", claim("ask", exact("gpus", "any", 2)))}
	ctx := context.Background()
	n := node(node1, nil)
	if _, err := s.Allocate(ctx, n, ask); err != nil {
		t.Fatalf("without quota: %v", err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.SetQuota(&allocator.Quota{Limits: []allocator.QuotaLimit{devicesLimit("team-a", "any", "1")}}))
	if _, err := s.Allocate(ctx, n, ask); !errors.Is(err, allocator.ErrQuotaExceeded) {
		t.Fatalf("under a quota of 1: %v, want ErrQuotaExceeded", err)
	}
	var in *allocator.InputError
	if err := s.SetQuota(&allocator.Quota{Limits: []allocator.QuotaLimit{devicesLimit("team-a", "any", "-1")}}); !errors.As(err, &in) {
		t.Fatalf("SetQuota with a negative limit: %v, want an InputError", err)
	}
	if _, err := s.Allocate(ctx, n, ask); !errors.Is(err, allocator.ErrQuotaExceeded) {
		t.Fatalf("after a refused SetQuota: %v, want the quota of 1 still", err)
	}
	fork := s.Fork()
	must(fork.SetQuota(nil))
	if _, err := fork.Allocate(ctx, n, ask); err != nil {
		t.Fatalf("fork without quota: %v", err)
	}
	if _, err := s.Allocate(ctx, n, ask); !errors.Is(err, allocator.ErrQuotaExceeded) {
		t.Fatalf("parent after the fork's SetQuota(nil): %v, want the quota of 1 still", err)
	}
}
