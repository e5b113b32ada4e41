package cli

import (
	"context"
	"flag"
	"fmt"
	"sort"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/celenv"
	"github.com/dralloc/dralloc/taints"
)

var inventoryCommand = &command{
	name:    "inventory",
	summary: "list the devices per node and pool: their classes, and whether free, used (by whom) or tainted",
	usage: `-f FILE|DIR|- [-o text|yaml|json]

A device is used when an allocated ResourceClaim has it; the pods are those the claim is reserved
for. Taints are the device's own and those DeviceTaintRules put on it. Classes are the
DeviceClasses whose selectors accept the device. Pools are read as the allocator reads them: only
the slices of a pool's newest generation are listed (a driver republishing its pool leaves the
older ones until it deletes them), and no device of a pool whose newest generation is incomplete
(fewer slices published than spec.pool.resourceSliceCount says) is free.

Examples:
  kubectl get nodes,resourceslices,deviceclasses,resourceclaims,devicetaintrules -A -o yaml | dractl inventory -f -
  dractl inventory -f cluster.yaml -o json
`,
	flags: func(fs *flag.FlagSet) any { return nil },
	run:   runInventory,
}

// inventoryReport is the whole inventory.
type inventoryReport struct {
	Nodes   []nodeInventory `json:"nodes"`
	Classes []classSummary  `json:"classes"`
}

type nodeInventory struct {
	// Node is the node name, or how a slice not bound to one node reaches nodes.
	Node  string          `json:"node"`
	Pools []poolInventory `json:"pools"`
}

type poolInventory struct {
	Driver string `json:"driver"`
	Pool   string `json:"pool"`
	// Incomplete says how many of the slices of the pool's newest generation are published when not
	// all are: the allocator gives none of its devices then.
	Incomplete string            `json:"incomplete,omitempty"`
	Devices    []deviceInventory `json:"devices"`
}

type deviceInventory struct {
	Name    string      `json:"name"`
	Classes []string    `json:"classes"`
	UsedBy  []deviceUse `json:"usedBy,omitempty"`
	Taints  []string    `json:"taints,omitempty"`
	// TaintRules are the DeviceTaintRules that put some of the taints there.
	TaintRules []string `json:"taintRules,omitempty"`
	// Blocked says why a device that no claim has cannot be allocated now: the shared counters it
	// consumes are taken by other devices of its pool.
	Blocked string `json:"blocked,omitempty"`

	device *resourceapi.Device // the device as its slice publishes it, for top
	// taintBlocks: one of the taints keeps claims that do not tolerate it off the device (as the
	// allocator's taint filter: with DRADeviceTaints on, an effect NoSchedule or NoExecute).
	taintBlocks bool
}

type deviceUse struct {
	Claim string   `json:"claim"`
	Pods  []string `json:"pods,omitempty"`
}

type classSummary struct {
	Class   string `json:"class"`
	Devices int    `json:"devices"`
	// Free are the devices that can be allocated now: no claim has them, no NoSchedule or NoExecute
	// taint keeps claims off them, their pool is complete, and their shared counters allow them.
	Free    int `json:"free"`
	Used    int `json:"used"`
	Tainted int `json:"tainted"`
}

func runInventory(e *env, _ any) (int, error) {
	rep, _, err := e.inventory()
	if err != nil {
		return exitBadInput, err
	}
	if e.output != "text" {
		return exitOK, e.encode(rep)
	}
	e.printInventory(rep)
	return exitOK, nil
}

// inventory is the inventory of the input's devices, with what is left of every shared counter. It
// reads the devices as the allocator gives them, through the snapshot: each pool's newest generation
// ([allocator.Snapshot.PoolStatus], which also says whether the pool is complete) and the effective
// taints of the DeviceTaintRules in force ([allocator.Snapshot.TaintRules]), which keep claims off a
// device only while DRADeviceTaints is on; so that a device is free here exactly when headroom counts
// it free.
func (e *env) inventory() (inventoryReport, map[counterKey]*counterLeft, error) {
	ctx := context.Background()
	objs := e.cluster.objs
	snap := e.cluster.snap
	cel, err := celenv.NewEnv(celenv.Options{})
	if err != nil {
		return inventoryReport{}, nil, err
	}
	ev := snap.TaintRules()
	taintsOn := snap.Features().DRADeviceTaints
	pools := map[allocator.PoolID]allocator.PoolStatus{}
	var current []*resourceapi.ResourceSlice // the slices the allocator reads devices from, or would once complete
	for _, s := range objs.Slices {
		id := allocator.PoolID{Driver: s.Spec.Driver, Pool: s.Spec.Pool.Name}
		p, ok := pools[id]
		if !ok {
			p, _ = snap.PoolStatus(id)
			pools[id] = p
		}
		if s.Spec.Pool.Generation == p.Generation {
			current = append(current, s)
		}
	}
	classSels := map[string][]*celenv.Selector{}
	for _, cl := range objs.Classes {
		for i, s := range cl.Spec.Selectors {
			if s.CEL == nil {
				continue
			}
			sel, err := cel.Compile(s.CEL.Expression)
			if err != nil {
				return inventoryReport{}, nil, e.cluster.at(cl, fmt.Errorf("DeviceClass %s: spec.selectors[%d].cel.expression: %w", cl.Name, i, err))
			}
			classSels[cl.Name] = append(classSels[cl.Name], sel)
		}
	}
	uses := map[taints.DeviceID][]deviceUse{}
	for _, cl := range objs.Claims {
		a := cl.Status.Allocation
		if a == nil {
			continue
		}
		use := deviceUse{Claim: cl.Namespace + "/" + cl.Name}
		for _, r := range cl.Status.ReservedFor {
			use.Pods = append(use.Pods, cl.Namespace+"/"+r.Name)
		}
		for _, r := range a.Devices.Results {
			id := taints.DeviceID{Driver: r.Driver, Pool: r.Pool, Device: r.Device}
			uses[id] = append(uses[id], use)
		}
	}

	left := countersLeft(current, uses)

	byNode := map[string]map[string]*poolInventory{}
	summaries := map[string]*classSummary{}
	for _, cl := range objs.Classes {
		summaries[cl.Name] = &classSummary{Class: cl.Name}
	}
	for _, s := range current {
		status := pools[allocator.PoolID{Driver: s.Spec.Driver, Pool: s.Spec.Pool.Name}]
		node := sliceReach(s)
		if byNode[node] == nil {
			byNode[node] = map[string]*poolInventory{}
		}
		key := s.Spec.Driver + "/" + s.Spec.Pool.Name
		pool := byNode[node][key]
		if pool == nil {
			pool = &poolInventory{Driver: s.Spec.Driver, Pool: s.Spec.Pool.Name}
			if !status.Complete() {
				pool.Incomplete = fmt.Sprintf("%d of %d ResourceSlices of generation %d published", status.Slices, status.ResourceSliceCount, status.Generation)
			}
			byNode[node][key] = pool
		}
		for i := range s.Spec.Devices {
			d := &s.Spec.Devices[i]
			id := taints.DeviceID{Driver: s.Spec.Driver, Pool: s.Spec.Pool.Name, Device: d.Name}
			di := deviceInventory{Name: d.Name, Classes: []string{}, UsedBy: uses[id], device: d}
			effective := ev.Taints(s.Spec.Driver, s.Spec.Pool.Name, d)
			for _, t := range effective {
				di.Taints = append(di.Taints, formatTaint(t))
			}
			_, taintBlocks := taints.Blocking(effective, nil)
			taintBlocks = taintBlocks && taintsOn
			di.taintBlocks = taintBlocks
			if names := ev.RuleNames(id); len(names) > 0 {
				di.TaintRules = names
			}
			if len(di.UsedBy) == 0 {
				di.Blocked = blocked(left, s.Spec.Driver, s.Spec.Pool.Name, d)
			}
			view := celenv.NewDevice(s.Spec.Driver, d)
			for _, cl := range sortedKeys(summaries) {
				ok := true
				for _, sel := range classSels[cl] {
					if m, err := sel.Matches(ctx, view); err != nil || !m {
						ok = false
						break
					}
				}
				if !ok {
					continue
				}
				di.Classes = append(di.Classes, cl)
				sum := summaries[cl]
				sum.Devices++
				if len(di.UsedBy) > 0 {
					sum.Used++
				} else if di.Blocked == "" && !taintBlocks && status.Complete() {
					sum.Free++
				}
				if len(di.Taints) > 0 {
					sum.Tainted++
				}
			}
			pool.Devices = append(pool.Devices, di)
		}
	}
	var rep inventoryReport
	for _, node := range sortedKeys(byNode) {
		ni := nodeInventory{Node: node}
		for _, key := range sortedKeys(byNode[node]) {
			p := byNode[node][key]
			sort.SliceStable(p.Devices, func(i, j int) bool { return p.Devices[i].Name < p.Devices[j].Name })
			ni.Pools = append(ni.Pools, *p)
		}
		rep.Nodes = append(rep.Nodes, ni)
	}
	for _, cl := range sortedKeys(summaries) {
		rep.Classes = append(rep.Classes, *summaries[cl])
	}
	return rep, left, nil
}

// printInventory writes the inventory as text.
func (e *env) printInventory(rep inventoryReport) {
	w := e.stdout
	for _, n := range rep.Nodes {
		fmt.Fprintf(w, "%s\n", n.Node)
		for _, p := range n.Pools {
			incomplete := ""
			if p.Incomplete != "" {
				incomplete = ", " + e.warn("incomplete: "+p.Incomplete)
			}
			fmt.Fprintf(w, "  driver %s, pool %s%s\n", p.Driver, p.Pool, incomplete)
			for _, d := range p.Devices {
				state := e.good("free")
				if d.Blocked != "" || d.taintBlocks || p.Incomplete != "" {
					state = "not in use"
				}
				if len(d.UsedBy) > 0 {
					var by []string
					for _, u := range d.UsedBy {
						s := "claim " + u.Claim
						if len(u.Pods) > 0 {
							s += " (pods " + strings.Join(u.Pods, ", ") + ")"
						}
						by = append(by, s)
					}
					state = "used by " + strings.Join(by, ", ")
				}
				if d.Blocked != "" {
					state += ", but " + e.warn(d.Blocked)
				}
				if len(d.Taints) > 0 {
					state += ", " + e.warn("tainted "+strings.Join(d.Taints, ", "))
					if len(d.TaintRules) > 0 {
						state += " (by DeviceTaintRule " + strings.Join(d.TaintRules, ", ") + ")"
					}
				}
				classes := "no class"
				if len(d.Classes) > 0 {
					classes = "class " + strings.Join(d.Classes, ", ")
				}
				fmt.Fprintf(w, "    %s: %s; %s\n", d.Name, classes, state)
			}
		}
	}
	if len(rep.Nodes) == 0 {
		fmt.Fprintln(w, "No ResourceSlices in the input.")
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Per DeviceClass:")
	if len(rep.Classes) == 0 {
		fmt.Fprintln(w, "  no DeviceClasses in the input")
	}
	for _, c := range rep.Classes {
		fmt.Fprintf(w, "  %s: %s, %d free, %d used, %d tainted\n", c.Class, plural(c.Devices, "device"), c.Free, c.Used, c.Tainted)
	}
}

// sliceReach is the node a slice's devices are on, or how they reach nodes.
func sliceReach(s *resourceapi.ResourceSlice) string {
	switch {
	case s.Spec.NodeName != nil && *s.Spec.NodeName != "":
		return "node " + *s.Spec.NodeName
	case s.Spec.AllNodes != nil && *s.Spec.AllNodes:
		return "all nodes"
	case s.Spec.NodeSelector != nil:
		return "nodes selected by ResourceSlice " + s.Name
	}
	return "nodes of ResourceSlice " + s.Name
}

func formatTaint(t resourceapi.DeviceTaint) string {
	s := t.Key
	if t.Value != "" {
		s += "=" + t.Value
	}
	return s + ":" + string(t.Effect)
}

// counterKey names one counter of one counter set of a pool.
type counterKey struct {
	driver, pool, set, counter string
}

// countersLeft is what is left of every shared counter once the devices allocated now take their
// share, as the allocator counts it: each allocated device consumes its consumesCounters.
func countersLeft(slices []*resourceapi.ResourceSlice, uses map[taints.DeviceID][]deviceUse) map[counterKey]*counterLeft {
	left := map[counterKey]*counterLeft{}
	for _, s := range slices {
		for _, cs := range s.Spec.SharedCounters {
			for name, c := range cs.Counters {
				left[counterKey{s.Spec.Driver, s.Spec.Pool.Name, cs.Name, name}] = &counterLeft{total: c.Value, left: c.Value.DeepCopy()}
			}
		}
	}
	for _, s := range slices {
		for _, d := range s.Spec.Devices {
			if len(uses[taints.DeviceID{Driver: s.Spec.Driver, Pool: s.Spec.Pool.Name, Device: d.Name}]) == 0 {
				continue
			}
			for _, cc := range d.ConsumesCounters {
				for name, c := range cc.Counters {
					if l := left[counterKey{s.Spec.Driver, s.Spec.Pool.Name, cc.CounterSet, name}]; l != nil {
						l.left.Sub(c.Value)
					}
				}
			}
		}
	}
	return left
}

type counterLeft struct{ total, left resource.Quantity }

// blocked says which counter keeps a free device from being allocated, or "".
func blocked(left map[counterKey]*counterLeft, driver, pool string, d *resourceapi.Device) string {
	for _, cc := range d.ConsumesCounters {
		for _, name := range sortedKeys(cc.Counters) {
			need := cc.Counters[name].Value
			l := left[counterKey{driver, pool, cc.CounterSet, name}]
			if l != nil && l.left.Cmp(need) < 0 {
				return fmt.Sprintf("cannot be allocated now: it needs %s of %s in counter set %s, and %s of %s are left", need.String(), name, cc.CounterSet, l.left.String(), l.total.String())
			}
		}
	}
	return ""
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
