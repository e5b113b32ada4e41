package allocator_test

import (
	"context"
	"errors"
	"hash/fnv"
	"reflect"
	"regexp"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"pgregory.net/rapid"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/capacity"
	"github.com/dralloc/dralloc/fuzz"
)

// propOwner spreads generated claims (all in one namespace) over two owners by name.
func propOwner(c *resourceapi.ResourceClaim) string {
	h := fnv.New32a()
	h.Write([]byte(c.Name))
	if h.Sum32()%2 == 0 {
		return "tenant-0"
	}
	return "tenant-1"
}

// quotaResources are the resources generated devices have that a limit may count, with the amounts a
// drawn limit takes.
var quotaResources = []struct {
	kind    allocator.QuotaKind
	name    string
	amounts []string
}{
	{allocator.QuotaDevices, "", []string{"0", "1", "2", "3", "5"}},
	{allocator.QuotaCapacity, "memory", []string{"0", "10Gi", "40Gi", "80Gi", "200Gi"}},
	{allocator.QuotaCapacity, "cores", []string{"0", "1", "2", "4", "8"}},
	{allocator.QuotaCounter, "memory", []string{"0", "10Gi", "40Gi", "80Gi", "200Gi"}},
	{allocator.QuotaCounter, "compute", []string{"0", "1", "3", "7"}},
}

// drawQuota draws limits for some owners, classes and resources of the cluster; unlimited, every
// resource of every class and owner gets a limit no allocation reaches.
func drawQuota(t *rapid.T, c *fuzz.Cluster, unlimited bool) *allocator.Quota {
	q := &allocator.Quota{Owner: propOwner}
	for _, owner := range []string{"tenant-0", "tenant-1"} {
		for _, class := range c.Classes {
			for _, r := range quotaResources {
				max := "1P"
				if !unlimited {
					if !rapid.Bool().Draw(t, "limited") {
						continue
					}
					max = rapid.SampledFrom(r.amounts).Draw(t, "max")
				}
				q.Limits = append(q.Limits, allocator.QuotaLimit{Owner: owner, Class: class.Name, Kind: r.kind, Name: r.name, Max: resource.MustParse(max)})
			}
		}
	}
	return q
}

// searchSteps is the step count an UnsatisfiableError's reasons name.
var searchSteps = regexp.MustCompile(`\(\d+ search steps\)`)

func quotaOptions(c *fuzz.Cluster, q *allocator.Quota) allocator.Options {
	o := options(c)
	o.Quota = q
	return o
}

// With no limit, and with limits no allocation reaches on every resource of every class and owner, the
// answers are those of the search without quota: the same devices, or the same error but for the number
// of search steps it names. (Under a quota the search skips the pruning of independent requests, which
// the owner's quota links, so it may take more steps; a case in which either search runs out of its step
// budget is not compared.)
func TestPropQuotaUnlimitedAnswersAsWithout(t *testing.T) {
	var hits budgetHits
	rapid.Check(t, func(t *rapid.T) {
		c := fuzz.ClusterGen(fuzz.AllOptions()).Draw(t, "cluster")
		without := allocator.NewSnapshot(options(c))
		load(t, without, c, func(int) bool { return true })
		want := allocateOn(without, c)
		for _, q := range []*allocator.Quota{{}, drawQuota(t, c, true)} {
			s := allocator.NewSnapshot(quotaOptions(c, q))
			load(t, s, c, func(int) bool { return true })
			got := allocateOn(s, c)
			hits.add(want.outOfBudget(), got.outOfBudget())
			if want.outOfBudget() != nil || got.outOfBudget() != nil {
				return
			}
			got.err = searchSteps.ReplaceAllString(got.err, "(N search steps)")
			want.err = searchSteps.ReplaceAllString(want.err, "(N search steps)")
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("with %d limits answered\n%+v\nwithout quota\n%+v", len(q.Limits), got, want)
			}
		}
	})
	hits.check(t)
}

// classCharges is what claims charge per owner, class and resource, from their status.allocation, as
// capacity.ChargeAllocation charges each: the results of one class at a time, so that counters, which
// it sums over classes, are the class's.
func classCharges(t *rapid.T, inv *capacity.Inventory, claims []*resourceapi.ResourceClaim) map[allocator.QuotaLimit]resource.Quantity {
	out := map[allocator.QuotaLimit]resource.Quantity{}
	add := func(k allocator.QuotaLimit, q resource.Quantity) {
		v := out[k]
		v.Add(q)
		out[k] = v
	}
	for _, c := range claims {
		if c.Status.Allocation == nil {
			continue
		}
		owner := propOwner(c)
		byClass := map[string][]resourceapi.DeviceRequestAllocationResult{}
		for _, r := range c.Status.Allocation.Devices.Results {
			byClass[requestClassOf(c, r.Request)] = append(byClass[requestClassOf(c, r.Request)], r)
		}
		for class, results := range byClass {
			one := c.DeepCopy()
			one.Status.Allocation.Devices.Results = results
			ch, err := capacity.ChargeAllocation(one, inv)
			if err != nil {
				t.Fatal(err)
			}
			add(allocator.QuotaLimit{Owner: owner, Class: class, Kind: allocator.QuotaDevices}, *resource.NewQuantity(ch.Devices[class], resource.DecimalSI))
			for name, q := range ch.Capacity[class] {
				add(allocator.QuotaLimit{Owner: owner, Class: class, Kind: allocator.QuotaCapacity, Name: string(name)}, q)
			}
			for name, q := range ch.Counters {
				add(allocator.QuotaLimit{Owner: owner, Class: class, Kind: allocator.QuotaCounter, Name: name}, q)
			}
		}
	}
	return out
}

// requestClassOf is the DeviceClass of the request or subrequest a result names.
func requestClassOf(c *resourceapi.ResourceClaim, name string) string {
	for _, r := range c.Spec.Devices.Requests {
		if r.Exactly != nil && r.Name == name {
			return r.Exactly.DeviceClassName
		}
		for _, s := range r.FirstAvailable {
			if r.Name+"/"+s.Name == name {
				return s.DeviceClassName
			}
		}
	}
	return ""
}

// An allocation under a quota never takes an owner past a limit that its claims are charged against:
// what the owner held plus what the new claims charge (capacity.ChargeAllocation of their results, class
// by class) stays within every limit on which they charge anything.
func TestPropQuotaAllocationsStayWithin(t *testing.T) {
	var hits budgetHits
	rapid.Check(t, func(t *rapid.T) {
		c := fuzz.ClusterGen(fuzz.AllOptions()).Draw(t, "cluster")
		q := drawQuota(t, c, false)
		s := allocator.NewSnapshot(quotaOptions(c, q))
		load(t, s, c, func(int) bool { return true })
		results, err := s.Allocate(context.Background(), c.Node, c.Claims)
		hits.add(err)
		if err != nil {
			return
		}
		inv, err := capacity.NewInventory(c.Slices, func(string, *resourceapi.Device) ([]string, error) { return nil, nil })
		if err != nil {
			t.Fatal(err)
		}
		held := classCharges(t, inv, c.Allocated)
		var placed []*resourceapi.ResourceClaim
		for i, claim := range c.Claims {
			p := claim.DeepCopy()
			p.Status.Allocation = &results[i]
			placed = append(placed, p)
		}
		asked := classCharges(t, inv, placed)
		for _, l := range q.Limits {
			k := allocator.QuotaLimit{Owner: l.Owner, Class: l.Class, Kind: l.Kind, Name: l.Name}
			a, h := asked[k], held[k]
			if a.Sign() <= 0 {
				continue
			}
			total := h.DeepCopy()
			total.Add(a)
			if total.Cmp(l.Max) > 0 {
				t.Fatalf("%s: held %s, the allocation charges %s more", l, h.String(), a.String())
			}
		}
	})
	hits.check(t)
}

// Claims refused for their quota fit once every limit the error names is raised to what it says is
// held plus asked.
func TestPropQuotaRaisedByNamedAmountFits(t *testing.T) {
	var hits budgetHits
	refused := 0
	rapid.Check(t, func(t *rapid.T) {
		c := fuzz.ClusterGen(fuzz.AllOptions()).Draw(t, "cluster")
		q := drawQuota(t, c, false)
		s := allocator.NewSnapshot(quotaOptions(c, q))
		load(t, s, c, func(int) bool { return true })
		_, err := s.Allocate(context.Background(), c.Node, c.Claims)
		hits.add(err)
		var ue *allocator.UnsatisfiableError
		if !errors.Is(err, allocator.ErrQuotaExceeded) || !errors.As(err, &ue) {
			return
		}
		refused++
		raised := &allocator.Quota{Owner: q.Owner, Limits: append([]allocator.QuotaLimit(nil), q.Limits...)}
		for _, e := range ue.Quota {
			for i, l := range raised.Limits {
				if l.Owner == e.Limit.Owner && l.Class == e.Limit.Class && l.Kind == e.Limit.Kind && l.Name == e.Limit.Name && l.Max.Cmp(e.Limit.Max) == 0 {
					m := e.Held.DeepCopy()
					m.Add(e.Asked)
					raised.Limits[i].Max = m
				}
			}
		}
		s = allocator.NewSnapshot(quotaOptions(c, raised))
		load(t, s, c, func(int) bool { return true })
		if _, err := s.Allocate(context.Background(), c.Node, c.Claims); err != nil && !errors.Is(err, allocator.ErrSearchBudget) {
			t.Fatalf("refused with %v; after raising the limits named: %v", ue.Quota, err)
		}
	})
	t.Logf("%d refused for quota", refused)
	hits.check(t)
}
