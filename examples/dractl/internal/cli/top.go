package cli

import (
	"cmp"
	"flag"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dralloc/dralloc/taints"
)

// top is what KEP-5677 (DRA resource availability visibility) promises to show of a cluster's
// devices: per DeviceClass, per pool and per device, how many are free, used (by which claims),
// tainted or shared, and what is left of shared counters and of consumable capacity. It counts
// from the same inventory as the inventory command, so the two always agree.
var topCommand = &command{
	name:    "top",
	summary: "show devices per class, pool and node: free, used (by which claim), tainted, shares and counters left",
	usage: `-f FILE|DIR|- [-o text|yaml|json]

Three tables, as kubectl top prints them: per DeviceClass (devices, free, used, tainted), per node
and pool (the same counts, the devices claims share, and what is left of each shared counter as
LEFT/TOTAL), and per device (its state, the claims that have it, and what is left of the
consumable capacity of a device that several claims may share).

A device is free when the allocator could give it to a claim now: no claim has it, no NoSchedule
or NoExecute taint keeps claims off it, its pool is complete and its shared counters allow it, as
capacity counts it FREE. "shared" is a device that allows multiple allocations and that claims
have; "incomplete" one of a pool that has not published all the slices of its newest generation
yet; "blocked" one whose shared counters other devices of its pool took. Only the newest
generation of a pool is shown: a driver republishing its pool leaves the older slices until it
deletes them, and the allocator reads none of them.

Examples:
  kubectl get nodes,resourceslices,deviceclasses,resourceclaims,devicetaintrules -A -o yaml | dractl top -f -
  dractl top -f cluster.yaml -o json
`,
	flags: func(fs *flag.FlagSet) any { return nil },
	run:   runTop,
}

// topReport is the whole of top.
type topReport struct {
	Classes []classSummary `json:"classes"`
	Pools   []poolTop      `json:"pools"`
	Devices []deviceTop    `json:"devices"`
}

// poolTop counts the devices of one pool on one node (or of one way slices reach nodes).
type poolTop struct {
	Node    string `json:"node"`
	Driver  string `json:"driver"`
	Pool    string `json:"pool"`
	Devices int    `json:"devices"`
	Free    int    `json:"free"`
	Used    int    `json:"used"`
	// Shared are the used devices that allow multiple allocations.
	Shared   int           `json:"shared"`
	Tainted  int           `json:"tainted"`
	Counters []quantityTop `json:"counters,omitempty"`
}

// quantityTop is what is left of a shared counter ("counterSet/counter") or of a device's capacity.
type quantityTop struct {
	Name  string            `json:"name"`
	Left  resource.Quantity `json:"left"`
	Total resource.Quantity `json:"total"`
}

type deviceTop struct {
	Node   string `json:"node"`
	Driver string `json:"driver"`
	Pool   string `json:"pool"`
	Device string `json:"device"`
	// State is free, used, shared, tainted, incomplete or blocked; a used device that is tainted is
	// "used,tainted".
	State  string   `json:"state"`
	Claims []string `json:"claims,omitempty"`
	// Capacity is what is left of the capacity of a device that allows multiple allocations, once
	// the claims that have it took what they consume.
	Capacity []quantityTop `json:"capacity,omitempty"`
}

func runTop(e *env, _ any) (int, error) {
	inv, left, err := e.inventory()
	if err != nil {
		return exitBadInput, err
	}
	consumed := consumedCapacity(e.cluster.objs.Claims)
	rep := topReport{Classes: inv.Classes, Pools: []poolTop{}, Devices: []deviceTop{}}
	for _, n := range inv.Nodes {
		node := strings.TrimPrefix(n.Node, "node ")
		for _, p := range n.Pools {
			pt := poolTop{Node: node, Driver: p.Driver, Pool: p.Pool, Devices: len(p.Devices)}
			for _, key := range sortedCounterKeys(left, p.Driver, p.Pool) {
				l := left[key]
				pt.Counters = append(pt.Counters, quantityTop{Name: key.set + "/" + key.counter, Left: l.left, Total: l.total})
			}
			for _, d := range p.Devices {
				dt := deviceTop{Node: node, Driver: p.Driver, Pool: p.Pool, Device: d.Name}
				for _, u := range d.UsedBy {
					dt.Claims = append(dt.Claims, u.Claim)
				}
				multi := d.device.AllowMultipleAllocations != nil && *d.device.AllowMultipleAllocations
				switch {
				case len(d.UsedBy) > 0 && multi:
					dt.State = "shared"
					pt.Used++
					pt.Shared++
				case len(d.UsedBy) > 0:
					dt.State = "used"
					pt.Used++
				case d.taintBlocks:
					dt.State = "tainted"
				case p.Incomplete != "":
					dt.State = "incomplete"
				case d.Blocked != "":
					dt.State = "blocked"
				default:
					dt.State = "free"
					pt.Free++
				}
				if len(d.Taints) > 0 {
					pt.Tainted++
					if dt.State != "tainted" {
						dt.State += ",tainted"
					}
				}
				if multi {
					id := taints.DeviceID{Driver: p.Driver, Pool: p.Pool, Device: d.Name}
					for _, name := range sortedKeys(d.device.Capacity) {
						total := d.device.Capacity[name].Value
						l := total.DeepCopy()
						if c, ok := consumed[id][name]; ok {
							l.Sub(c)
						}
						dt.Capacity = append(dt.Capacity, quantityTop{Name: string(name), Left: l, Total: total})
					}
				}
				rep.Devices = append(rep.Devices, dt)
			}
			rep.Pools = append(rep.Pools, pt)
		}
	}
	if e.output != "text" {
		return exitOK, e.encode(rep)
	}
	e.printTop(rep)
	return exitOK, nil
}

// printTop writes the three tables, columns aligned as kubectl aligns them (two spaces apart).
func (e *env) printTop(rep topReport) {
	tw := tabwriter.NewWriter(e.stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "CLASS\tDEVICES\tFREE\tUSED\tTAINTED")
	for _, c := range rep.Classes {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\n", c.Class, c.Devices, c.Free, c.Used, c.Tainted)
	}
	if len(rep.Classes) == 0 {
		fmt.Fprintln(tw, "<none>\t\t\t\t")
	}
	tw.Flush()
	fmt.Fprintln(e.stdout)
	fmt.Fprintln(tw, "NODE\tDRIVER\tPOOL\tDEVICES\tFREE\tUSED\tSHARED\tTAINTED\tCOUNTERS LEFT")
	for _, p := range rep.Pools {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\n", p.Node, p.Driver, p.Pool, p.Devices, p.Free, p.Used, p.Shared, p.Tainted, quantities(p.Counters))
	}
	if len(rep.Pools) == 0 {
		fmt.Fprintln(tw, "<none>\t\t\t\t\t\t\t\t")
	}
	tw.Flush()
	fmt.Fprintln(e.stdout)
	fmt.Fprintln(tw, "NODE\tDRIVER\tPOOL\tDEVICE\tSTATE\tCLAIMS\tCAPACITY LEFT")
	for _, d := range rep.Devices {
		claims := "-"
		if len(d.Claims) > 0 {
			claims = strings.Join(d.Claims, ",")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", d.Node, d.Driver, d.Pool, d.Device, d.State, claims, quantities(d.Capacity))
	}
	if len(rep.Devices) == 0 {
		fmt.Fprintln(tw, "<none>\t\t\t\t\t\t")
	}
	tw.Flush()
}

// quantities formats "name LEFT/TOTAL" pairs, "-" for none.
func quantities(list []quantityTop) string {
	if len(list) == 0 {
		return "-"
	}
	out := make([]string, len(list))
	for i, q := range list {
		out[i] = q.Name + " " + q.Left.String() + "/" + q.Total.String()
	}
	return strings.Join(out, ", ")
}

// sortedCounterKeys are the counters of one pool, by counter set and name.
func sortedCounterKeys(left map[counterKey]*counterLeft, driver, pool string) []counterKey {
	var keys []counterKey
	for k := range left {
		if k.driver == driver && k.pool == pool {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b counterKey) int {
		return cmp.Or(cmp.Compare(a.set, b.set), cmp.Compare(a.counter, b.counter))
	})
	return keys
}

// consumedCapacity sums, per device, the capacity the allocated claims consume of it, as the
// allocator charges it (status.allocation.devices.results[].consumedCapacity).
func consumedCapacity(claims []*resourceapi.ResourceClaim) map[taints.DeviceID]map[resourceapi.QualifiedName]resource.Quantity {
	out := map[taints.DeviceID]map[resourceapi.QualifiedName]resource.Quantity{}
	for _, cl := range claims {
		if cl.Status.Allocation == nil {
			continue
		}
		for _, r := range cl.Status.Allocation.Devices.Results {
			id := taints.DeviceID{Driver: r.Driver, Pool: r.Pool, Device: r.Device}
			for name, q := range r.ConsumedCapacity {
				if out[id] == nil {
					out[id] = map[resourceapi.QualifiedName]resource.Quantity{}
				}
				sum := out[id][name]
				sum.Add(q)
				out[id][name] = sum
			}
		}
	}
	return out
}
