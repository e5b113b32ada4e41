package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator/headroom"
)

// capacity is capacity planning on the cluster as it stands: how many more copies of a pod fit and
// where (headroom.Count), why the next one does not, and how fragmented the free devices are for the
// workload the pending pods make (headroom's FGD measure).
var capacityCommand = &command{
	name:    "capacity",
	summary: "count how many more copies of a pod fit and where, and measure stranded and fragmented devices",
	usage: `-f FILE|DIR|- [--pod NAMESPACE/NAME] [--max N] [--mix NS/NAME=W,...] [--explain] [-o text|yaml|json]

For each pod shape (the pod --pod names, any pod of the input used as a template, or else every
pending pod) the copies of it that still fit are counted one after another, each placed as the
scheduler's filters and the allocator would place it next to the copies before it, filling the
nodes by name (FirstFit; copies that share a claim go where FirstFit places them): how many fit, on which nodes, and, when the next one fits nowhere, the nodes grouped
by why (--explain: by which request and which claims hold the devices). Each shape is counted on
the cluster as it stands, not after the others. Counting stops at --max copies.

Fragmentation is FGD's measure (Weng et al., USENIX ATC '23) of the devices of the nodes'
ResourceSlices for a workload mix made of the pending pods that ask for devices, each with the same
weight, or with the weights --mix gives (pods named there, weights normalised to sum to 1), in
devices:
  FREE      the devices a claim could be given now, as top counts them free: no claim holds
            them, no NoSchedule or NoExecute taint keeps claims off them, and their pool is
            complete, counted in its newest generation only (a device that allows multiple
            allocations counts the free fraction of its capacity; a GPU cut into partitions
            the share of its counters left that a partition that could be given now draws on)
  F(M)      the part of FREE the mix's pods cannot use, weighed by their weights: on a node
            where a pod cannot run, all of the node's FREE; where it can, the devices it cannot use
  STRANDED  the part of FREE that no pod of the mix that can run on its node can use
so that STRANDED <= F(M) <= FREE.

Exit status 0 when at least one more copy of every shape fits, 1 when one fits nowhere.

Examples:
  dractl capacity -f cluster.yaml
  dractl capacity -f cluster.yaml --pod ml/train-0 --max 100 -o json
  dractl capacity -f cluster.yaml --mix ml/train-0=3,ml/infer-0=1
`,
	flags: func(fs *flag.FlagSet) any {
		o := &capacityOptions{}
		fs.StringVar(&o.pod, "pod", "", "NAMESPACE/NAME of a pod of the input to count copies of; every pending pod when empty")
		fs.IntVar(&o.max, "max", headroom.DefaultMax, "the most copies of a shape counted")
		fs.StringVar(&o.mix, "mix", "", "weights of the workload mix as NAMESPACE/NAME=WEIGHT,...; the pending pods that ask for devices, equally weighted, when empty")
		fs.BoolVar(&o.explain, "explain", false, "group the nodes that refuse the next copy by which request fails and which claims hold the devices (slower)")
		quotaFlag(fs, &o.enforceQuota)
		return o
	},
	run: runCapacity,
}

type capacityOptions struct {
	pod          string
	max          int
	mix          string
	explain      bool
	enforceQuota bool
}

// capacityReport is the whole of capacity.
type capacityReport struct {
	Pods          []podCapacity  `json:"pods"`
	Fragmentation *fragmentation `json:"fragmentation,omitempty"`
}

// podCapacity is the count for one shape.
type podCapacity struct {
	Pod string `json:"pod"`
	// Copies is how many more fit; Stop why counting stopped: ReachedMax, Full or OutOfBudget.
	Copies int             `json:"copies"`
	Stop   string          `json:"stop"`
	Nodes  []nodeCopies    `json:"nodes,omitempty"`
	Limits []capacityLimit `json:"limits,omitempty"`
}

type nodeCopies struct {
	Node   string `json:"node"`
	Copies int    `json:"copies"`
}

// capacityLimit is a group of nodes that refuse the next copy for the same reason.
type capacityLimit struct {
	Reason   string   `json:"reason"`
	Nodes    int      `json:"nodes"`
	Examples []string `json:"examples,omitempty"`
}

// fragmentation is the measure for the mix, in devices.
type fragmentation struct {
	Mix      []mixWeight `json:"mix"`
	Free     float64     `json:"free"`
	F        float64     `json:"f"`
	Stranded float64     `json:"stranded"`
	Nodes    []nodeFrag  `json:"nodes"`
	// Skipped are the pending pods left out of the mix, and why.
	Skipped []string `json:"skipped,omitempty"`
}

type mixWeight struct {
	Pod    string  `json:"pod"`
	Weight float64 `json:"weight"`
}

type nodeFrag struct {
	Node     string  `json:"node"`
	Free     float64 `json:"free"`
	F        float64 `json:"f"`
	Stranded float64 `json:"stranded"`
}

func runCapacity(e *env, o any) (int, error) {
	opts := o.(*capacityOptions)
	if opts.max <= 0 {
		return exitBadInput, fmt.Errorf("--max %d: must be positive", opts.max)
	}
	c := e.cluster
	if err := c.enforceQuota(opts.enforceQuota); err != nil {
		return exitBadInput, err
	}
	shapes := c.pending
	if opts.pod != "" {
		p, err := c.podNamed(opts.pod)
		if err != nil {
			return exitBadInput, fmt.Errorf("--pod %w", err)
		}
		shapes = []*corev1.Pod{p}
	}
	weights, err := parseMix(opts.mix)
	if err != nil {
		return exitBadInput, err
	}
	ctx := context.Background()
	rep := capacityReport{Pods: []podCapacity{}}
	code := exitOK
	for _, p := range shapes {
		res, err := headroom.Count(ctx, c.pods, p, headroom.Options{Max: opts.max, Explain: opts.explain})
		if err != nil && !errors.Is(err, headroom.ErrBudget) {
			return exitBadInput, c.at(p, err)
		}
		pc := podCapacity{Pod: p.Namespace + "/" + p.Name, Copies: res.Total, Stop: res.Stop.String()}
		for _, n := range res.Nodes {
			pc.Nodes = append(pc.Nodes, nodeCopies{Node: n.Node, Copies: n.Copies})
		}
		for _, l := range res.Limits {
			pc.Limits = append(pc.Limits, capacityLimit{Reason: l.Reason, Nodes: l.Nodes, Examples: l.Examples})
		}
		if res.Total == 0 {
			code = exitNotFit
		}
		rep.Pods = append(rep.Pods, pc)
	}
	if rep.Fragmentation, err = c.fragmentation(weights); err != nil {
		return exitBadInput, err
	}
	if e.output != "text" {
		return code, e.encode(rep)
	}
	e.printCapacity(rep, opts.pod == "")
	return code, nil
}

// podNamed is the pod of the input named "namespace/name".
func (c *cluster) podNamed(name string) (*corev1.Pod, error) {
	ns, n, err := splitName(name)
	if err != nil {
		return nil, err
	}
	if p := c.findPod(ns, n); p != nil {
		return p, nil
	}
	return nil, fmt.Errorf("%s/%s: no such pod in the input", ns, n)
}

// parseMix reads --mix: NAMESPACE/NAME=WEIGHT pairs, comma-separated, weights positive.
func parseMix(s string) (map[string]float64, error) {
	if s == "" {
		return nil, nil
	}
	out := map[string]float64{}
	for _, item := range strings.Split(s, ",") {
		name, w, ok := strings.Cut(item, "=")
		if !ok {
			return nil, fmt.Errorf("--mix %q: must be NAMESPACE/NAME=WEIGHT", item)
		}
		ns, n, err := splitName(name)
		if err != nil {
			return nil, fmt.Errorf("--mix %w", err)
		}
		f, err := strconv.ParseFloat(w, 64)
		if err != nil || !(f > 0) || f > 1e12 {
			return nil, fmt.Errorf("--mix %q: weight must be a positive number", item)
		}
		key := ns + "/" + n
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("--mix %q: %s given twice", item, key)
		}
		out[key] = f
	}
	return out, nil
}

// fragmentation measures the devices of the node-local ResourceSlices for the mix: the pods weights
// names, or the pending pods that ask for devices with equal weights. Nil when the mix is empty or
// the input has no node-local devices.
func (c *cluster) fragmentation(weights map[string]float64) (*fragmentation, error) {
	var nodeLocal []*resourceapi.ResourceSlice
	for _, s := range c.objs.Slices {
		// The measure is per node: devices a node selector or per-device node selection make available
		// are not on one node.
		if s.Spec.NodeName != nil && *s.Spec.NodeName != "" {
			nodeLocal = append(nodeLocal, s)
		}
	}
	inv, err := headroom.NewInventory(nodeLocal)
	if err != nil {
		return nil, err
	}
	fr := &fragmentation{}
	var members []*corev1.Pod
	if weights != nil {
		for _, name := range sortedKeys(weights) {
			p, err := c.podNamed(name)
			if err != nil {
				return nil, fmt.Errorf("--mix %w", err)
			}
			members = append(members, p)
		}
	} else {
		members = c.pending
	}
	var mix []headroom.Shape
	total := 0.0
	for _, p := range members {
		name := p.Namespace + "/" + p.Name
		s, err := headroom.ShapeOf(c.pods, p, 1)
		if err == nil && len(s.Requests) == 0 {
			err = errors.New("asks for no devices")
		}
		if err != nil {
			if weights != nil {
				return nil, fmt.Errorf("--mix %s: %w", name, err)
			}
			fr.Skipped = append(fr.Skipped, name+": "+err.Error())
			continue
		}
		if weights != nil {
			s.Weight = weights[name]
		}
		total += s.Weight
		mix = append(mix, s)
	}
	if len(mix) == 0 {
		if len(fr.Skipped) == 0 {
			return nil, nil
		}
		return fr, nil
	}
	for i := range mix {
		mix[i].Weight /= total
		fr.Mix = append(fr.Mix, mixWeight{Pod: mix[i].Name, Weight: mix[i].Weight})
	}
	rep, err := inv.Fragmentation(c.pods, mix)
	if err != nil {
		return nil, err
	}
	fr.Free, fr.F, fr.Stranded = rep.Free, rep.F, rep.Stranded
	for _, n := range rep.Nodes {
		fr.Nodes = append(fr.Nodes, nodeFrag{Node: n.Node, Free: n.Free, F: n.F, Stranded: n.StrandedFree})
	}
	return fr, nil
}

func (e *env) printCapacity(rep capacityReport, pending bool) {
	if len(rep.Pods) == 0 && pending {
		fmt.Fprintln(e.stdout, "no pending pods: name a pod to count copies of with --pod")
	}
	for _, p := range rep.Pods {
		verdict := e.good(fmt.Sprintf("%d more copies fit", p.Copies))
		if p.Copies == 0 {
			verdict = e.bad("no more copies fit")
		}
		why := map[string]string{"ReachedMax": "stopped at --max", "Full": "the next one fits nowhere", "OutOfBudget": "ran out of tries"}[p.Stop]
		fmt.Fprintf(e.stdout, "pod %s: %s (%s)\n", p.Pod, verdict, why)
		for _, n := range p.Nodes {
			fmt.Fprintf(e.stdout, "  %s: %d\n", n.Node, n.Copies)
		}
		for _, l := range p.Limits {
			fmt.Fprintf(e.stdout, "  %d node(s) (%s): %s\n", l.Nodes, strings.Join(l.Examples, ", "), l.Reason)
		}
	}
	fr := rep.Fragmentation
	if fr == nil {
		return
	}
	fmt.Fprintln(e.stdout)
	if len(fr.Mix) == 0 {
		fmt.Fprintln(e.stdout, "fragmentation: no pending pod asks for devices as a shape")
	} else {
		parts := make([]string, len(fr.Mix))
		for i, m := range fr.Mix {
			parts[i] = fmt.Sprintf("%s %.2f", m.Pod, m.Weight)
		}
		fmt.Fprintf(e.stdout, "fragmentation for the mix %s: free %.2f, F(M) %.2f, stranded %.2f devices\n", strings.Join(parts, ", "), fr.Free, fr.F, fr.Stranded)
		tw := tabwriter.NewWriter(e.stdout, 0, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "NODE\tFREE\tF(M)\tSTRANDED")
		for _, n := range fr.Nodes {
			fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\n", n.Node, n.Free, n.F, n.Stranded)
		}
		tw.Flush()
	}
	for _, s := range fr.Skipped {
		fmt.Fprintf(e.stdout, "not in the mix: %s\n", s)
	}
}
