package pods

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dralloc/dralloc/allocator"
)

// Explanation says, node by node, why a pod fits there or not, and groups the nodes where it does not
// fit by their main reason. String is short enough for a pod condition's message; the JSON tags give the
// whole tree.
type Explanation struct {
	// Pod is "namespace/name".
	Pod string `json:"pod"`
	// FitsOn are the nodes where the pod fits, by name.
	FitsOn []string `json:"fitsOn,omitempty"`
	// Groups are the nodes where it does not fit, grouped by their main reason, most nodes first (ties
	// by reason).
	Groups []ReasonGroup `json:"groups,omitempty"`
	// Nodes are all nodes, by name.
	Nodes []NodeExplanation `json:"nodes"`
	// SchedulingGates are the pod's spec.schedulingGates, by name, when the SchedulingGates filter is on:
	// kube-scheduler does not try such a pod, so no node is explained.
	SchedulingGates []string `json:"schedulingGates,omitempty"`
	// TooFew are the requests that no node could serve even with every device free: on each node where
	// the pod's claims were explained, fewer devices match the request than it needs. When it is not
	// empty, the pod does not fit even on an empty node.
	TooFew []RequestShortfall `json:"tooFew,omitempty"`
	// FitsOnceFreed are the nodes, by name, where the pod would fit once the claims of Holders release
	// the devices they hold there: what keeps it off them is devices in use, nothing else.
	FitsOnceFreed []string `json:"fitsOnceFreed,omitempty"`
	// Holders are the claims ("namespace/name") holding matching devices on the FitsOnceFreed nodes,
	// sorted.
	Holders []string `json:"holders,omitempty"`
}

// RequestShortfall is a request that needs more devices than any node has that match it.
type RequestShortfall struct {
	Request allocator.RequestRef `json:"request"`
	// Needs is how many devices the request needs.
	Needs int `json:"needs"`
	// Most is the most devices matching the request on one node, and Node the first node with that
	// many ("" when no device matches anywhere).
	Most int    `json:"most"`
	Node string `json:"node,omitempty"`
}

// ReasonGroup is nodes that do not fit for the same main reason: the same predicate, or the same kind of
// reason for the same request and blocking object (class, selector, constraint, taint rule, capacity,
// counter), whatever the counts on each node.
type ReasonGroup struct {
	// Reason is the nodes' predicate reason ("node(s) didn't match Pod's node affinity/selector"), or the
	// claims' [allocator.Explanation.Headline] with what differs between the nodes summed up: counts as a
	// range (`claim default/train, request "gpus": 2–8 of 8 matching devices allocated to …`), the
	// objects of each node (the claims holding its devices, its slices and pools) as the first and how
	// many others, free capacity or counters left as a range. For a group of one node it is that node's
	// Reason.
	Reason string `json:"reason"`
	// Nodes is how many nodes; Examples names the first few, by name.
	Nodes    int      `json:"nodes"`
	Examples []string `json:"examples"`
}

// NodeExplanation is one node's answer.
type NodeExplanation struct {
	Node string `json:"node"`
	Fits bool   `json:"fits"`
	// Reason is why the pod does not fit: a predicate's reason, or the claims' headline.
	Reason string `json:"reason,omitempty"`
	// Claims explains the pod's claims on the node; nil when a predicate ruled the node out first or the
	// pod has no claims to allocate there.
	Claims *allocator.Explanation `json:"claims,omitempty"`
}

// maxExamples is how many node names a group keeps.
const maxExamples = 3

// maxMessage bounds String: a pod condition's message is meant to be read at a glance.
const maxMessage = 1024

// Explain says why the pod fits on which nodes and not on the others: for each node the reason Place
// would see (its predicates, the claims allocated already, the extended resources, then the claims'
// [allocator.Snapshot.Explain]), and the nodes grouped by that reason whatever its counts ([ReasonGroup]). It explains on the Cluster's
// snapshot and changes nothing in it; like Place it may resolve a template's claim name. Errors are
// those of Place, except that fitting nowhere is no error, and a pod with scheduling gates is explained
// by its gates ([Explanation.SchedulingGates]) instead of [ErrSchedulingGated].
func (c *Cluster) Explain(ctx context.Context, pod *v1.Pod) (*Explanation, error) {
	snap := c.snap
	if pod != nil && c.gatedError(pod) != nil {
		return &Explanation{Pod: pod.Namespace + "/" + pod.Name, Nodes: []NodeExplanation{}, SchedulingGates: gateNames(pod)}, nil
	}
	r, err := c.prepare(snap, pod, nil)
	if err != nil {
		return nil, err
	}
	extName := ""
	if r.ext != nil {
		// Only named in the explanation: no suffix is drawn for a claim that is not created.
		extName = pod.Name + "-extended-resources"
	}
	nodes := snap.Nodes()
	// Nodes the claims cannot tell apart are explained once, where the explanation names nothing of
	// the node (see classExplanations).
	var classes []int // by node; nil: none
	if len(r.pending) > 0 && len(nodes) > 1 && !c.perNode {
		nc, err := snap.NodeClasses(ctx, r.pending)
		if err == nil {
			// All at once: the snapshot finds what it remembers of each node at its position.
			classes, err = nc.AppendClasses(make([]int, 0, len(nodes)), nodes)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", podName(pod), err)
		}
	}
	var shared classExplanations
	out := &Explanation{Pod: pod.Namespace + "/" + pod.Name, Nodes: make([]NodeExplanation, len(nodes))}
	errs := make([]error, len(nodes))
	claims := make([]*nodeClaims, len(nodes))
	var wg sync.WaitGroup
	work := make(chan int)
	for range min(c.opts.Workers, len(nodes)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				class := -1
				if classes != nil {
					class = classes[i]
				}
				out.Nodes[i], claims[i], errs[i] = c.explainNode(ctx, snap, class, &shared, r, nodes[i], extName)
			}
		}()
	}
	for i := range nodes {
		work <- i
	}
	close(work)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("%s: node %s: %w", podName(pod), nodes[i].Name, err)
		}
	}
	// Nodes are grouped by what their reason says, not by its counts: a headline names per-node counts
	// and objects, and grouping by its text split 1,000 nodes failing one way into as many groups as
	// there were counts.
	byKey := map[string]int{}
	var sums []*reasonSum
	for _, n := range out.Nodes {
		if n.Fits {
			out.FitsOn = append(out.FitsOn, n.Node)
			continue
		}
		t := nodeReason(n)
		key := t.key()
		gi, ok := byKey[key]
		if !ok {
			gi = len(out.Groups)
			byKey[key] = gi
			out.Groups = append(out.Groups, ReasonGroup{})
			sums = append(sums, newReasonSum(t))
		}
		sums[gi].add(t)
		g := &out.Groups[gi]
		g.Nodes++
		if len(g.Examples) < maxExamples {
			g.Examples = append(g.Examples, n.Node)
		}
	}
	for i := range out.Groups {
		out.Groups[i].Reason = sums[i].String()
	}
	slices.SortStableFunc(out.Groups, func(x, y ReasonGroup) int {
		if c := cmp.Compare(y.Nodes, x.Nodes); c != 0 {
			return c
		}
		return cmp.Compare(x.Reason, y.Reason)
	})
	if len(out.FitsOn) == 0 {
		out.TooFew = tooFew(out.Nodes)
		if len(out.TooFew) == 0 {
			if err := c.fitsOnceFreed(ctx, snap, r, nodes, claims, out); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// explainNode explains the pod on one node; the node's claims are those to allocate there, when its
// predicates let the pod on and it has claims to allocate.
func (c *Cluster) explainNode(ctx context.Context, snap *allocator.Snapshot, class int, shared *classExplanations, r *request, node *v1.Node, extName string) (NodeExplanation, *nodeClaims, error) {
	ne := NodeExplanation{Node: node.Name}
	nc, reason, err := c.check(r, node, extName)
	switch {
	case err != nil:
		return ne, nil, err
	case nc == nil:
		ne.Reason = reason
		return ne, nil, nil
	case len(nc.claims) == 0:
		ne.Fits = true
		return ne, nil, nil
	}
	e, err := shared.explain(ctx, snap, class, node, nc)
	if err != nil {
		return ne, nil, err
	}
	ne.Claims, ne.Fits, ne.Reason = e, e.Fits, e.Headline()
	return ne, nc, nil
}

// classExplanations are the claims' explanations per class of nodes (allocator.NodeClasses) in one
// Explain. Nodes of a class meet the same thing at every step of the search but for names: the same
// counts, filters, obstacles and steps. What differs is the names an explanation may hold: the devices,
// slices and pools of causes and pool errors, and the claims holding the node's devices (which a class
// does not compare: it compares which devices are in use, not by whom). So the explanation of the first
// node of a class asked serves the others, under their own name, only when it holds no name of its own:
// no pool error, no filter (each names the devices it removed, and their objects), no obstacle, no quota.
// That is where most nodes of a fleet end up when a pod fits: every device a candidate.
type classExplanations struct {
	mu sync.Mutex
	m  map[int]*classExplanation
}

type classExplanation struct {
	once sync.Once
	e    *allocator.Explanation // nil: each node is explained on its own
}

// explain is the node's [allocator.Snapshot.Explain] of its claims: a copy of its class's when that
// names nothing of the node it was asked on, the node's own otherwise (or when the node's claims are
// its own, with an extended-resource claim, or the claims are not classified: class -1).
func (v *classExplanations) explain(ctx context.Context, snap *allocator.Snapshot, class int, node *v1.Node, nc *nodeClaims) (*allocator.Explanation, error) {
	if class < 0 || nc.ext != nil {
		return snap.Explain(ctx, node, nc.claims)
	}
	v.mu.Lock()
	if v.m == nil {
		v.m = map[int]*classExplanation{}
	}
	ce := v.m[class]
	if ce == nil {
		ce = &classExplanation{}
		v.m[class] = ce
	}
	v.mu.Unlock()
	var own *allocator.Explanation
	ce.once.Do(func() {
		e, err := snap.Explain(ctx, node, nc.claims)
		if err == nil && nameless(e) {
			ce.e = e
		}
		own = e // nil on an error: asked again below, so that the error is the node's own
	})
	switch {
	case own != nil:
		return own, nil
	case ce.e != nil:
		return renamed(ce.e, node.Name), nil
	}
	return snap.Explain(ctx, node, nc.claims)
}

// nameless reports whether the explanation names nothing of its node but the node itself.
func nameless(e *allocator.Explanation) bool {
	if len(e.Pools) > 0 || len(e.Obstacles) > 0 || len(e.Quota) > 0 {
		return false
	}
	for _, c := range e.Claims {
		for _, r := range c.Requests {
			if len(r.Filters) > 0 {
				return false
			}
		}
	}
	return true
}

// renamed is a copy of a nameless explanation for another node of its class.
func renamed(e *allocator.Explanation, node string) *allocator.Explanation {
	cp := *e
	cp.Node = node
	cp.Claims = slices.Clone(e.Claims)
	for i := range cp.Claims {
		cp.Claims[i].Requests = slices.Clone(cp.Claims[i].Requests)
	}
	return &cp
}

// String is the groups in one line, most nodes first: `712 nodes: claim default/train, request "gpus":
// class gpu-h100 matched no device; 40 nodes: …`, cut to about 1 KiB; "fits on N nodes" when the pod fits
// somewhere. Before the groups it says what the pod would need, when known: that it does not fit even on
// an empty node ([Explanation.TooFew]), or on which nodes it would fit once which claims release their
// devices ([Explanation.FitsOnceFreed]).
func (e *Explanation) String() string {
	if len(e.SchedulingGates) > 0 {
		// The SchedulingGates plugin's words.
		return fmt.Sprintf("waiting for scheduling gates: %v", e.SchedulingGates)
	}
	if len(e.FitsOn) > 0 {
		return "fits on " + plural(len(e.FitsOn), "node")
	}
	if len(e.Groups) == 0 {
		return "no nodes"
	}
	var b strings.Builder
	b.WriteString(e.summary())
	for i, g := range e.Groups {
		part := plural(g.Nodes, "node") + ": " + g.Reason
		if i > 0 || b.Len() > 0 {
			part = "; " + part
		}
		if b.Len()+len(part) > maxMessage {
			rest := 0
			for _, g := range e.Groups[i:] {
				rest += g.Nodes
			}
			fmt.Fprintf(&b, "; %s more", plural(rest, "node"))
			break
		}
		b.WriteString(part)
	}
	return b.String()
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// reasonTemplate is a node's reason split into what names the reason (the text between the slots: the
// kind of reason, the request, the class, selector, constraint, taint rule, capacity or counter) and what
// may differ between nodes failing for that reason (the slots: counts, the node's own objects, what is
// free there).
type reasonTemplate struct {
	text  []string // len(slots)+1 pieces
	slots []slot
}

type slotKind uint8

const (
	countSlot    slotKind = iota // a number; a group shows the range
	nounSlot                     // a noun after a number: singular only when every node's number is 1
	nameSlot                     // an object of the node: the first and how many others
	quantitySlot                 // capacity free or a counter left: the range
	detailSlot                   // a detail of the node (a pool's message, candidates by value): shown when all agree
	mostSlot                     // how many devices the node has: "the node has n", or the most of a group's nodes
	totalSlot                    // the total a count is out of: the number, or "the" when nodes differ (one range, not a range of a range)
)

type slot struct {
	kind  slotKind
	n     int
	s     string
	names []string // every name of a nameSlot (s is the first)
}

func (t *reasonTemplate) lit(s string) {
	if len(t.text) == 0 {
		t.text = append(t.text, "")
	}
	t.text[len(t.text)-1] += s
}

func (t *reasonTemplate) add(k slotKind, n int, s string) {
	if len(t.text) == 0 {
		t.text = append(t.text, "")
	}
	t.slots = append(t.slots, slot{kind: k, n: n, s: s})
	t.text = append(t.text, "")
}

// names is a name slot of several of the node's objects (the claims holding its devices): the first
// and how many others.
func (t *reasonTemplate) names(names []string) {
	t.add(nameSlot, 0, names[0])
	t.slots[len(t.slots)-1].names = names
}

// key identifies the reason: the text and the kinds of the slots (the noun of a noun slot included).
func (t *reasonTemplate) key() string {
	var b strings.Builder
	for i, s := range t.text {
		b.WriteString(strconv.Quote(s))
		if i < len(t.slots) {
			b.WriteByte(byte('0' + t.slots[i].kind))
			if t.slots[i].kind == nounSlot {
				b.WriteString(strconv.Quote(t.slots[i].s))
			}
		}
	}
	return b.String()
}

// nodeReason is the node's Reason as a template. The claims' reason is built as
// [allocator.Explanation.Headline] words it (TestPropExplainAgreesWithPlace checks that a group of one
// node reads as its node), marking the parts that differ from node to node.
func nodeReason(n NodeExplanation) *reasonTemplate {
	t := &reasonTemplate{}
	e := n.Claims
	if e == nil || e.Fits {
		t.lit(n.Reason)
		return t
	}
	if len(e.Quota) > 0 {
		// The owner's quota is the same on every node: nodes refused for it group by the limit.
		t.lit(e.Quota[0].String())
		return t
	}
	for _, c := range e.Claims {
		for i := range c.Requests {
			if r := &c.Requests[i]; r.Short() {
				t.lit(allocator.RequestRef{Claim: c.Claim, Request: r.Request}.String() + ": ")
				t.request(r)
				return t
			}
		}
	}
	if len(e.Obstacles) > 0 {
		t.obstacle(&e.Obstacles[0])
		return t
	}
	t.lit("claims do not fit")
	return t
}

// request is the main reason a short request is short: what its selectors leave, that fewer devices
// match than it needs, or the largest cause that removed matching devices, the claims holding devices
// counting as one cause (as [allocator.Explanation.Headline]).
func (t *reasonTemplate) request(r *allocator.RequestExplanation) {
	matching := r.Devices
	var top, topStatic *allocator.Cause
	var topReason, topStaticReason allocator.Reason
	var held allocator.Cause
	var holders []string
	for fi := range r.Filters {
		f := &r.Filters[fi]
		if f.Reason == allocator.ReasonAllocated && len(f.Causes) > 0 {
			held = f.Causes[0]
			held.Devices = f.Removed
			for _, c := range f.Causes {
				holders = append(holders, c.Object)
			}
			if top == nil || held.Devices > top.Devices {
				top, topReason = &held, f.Reason
			}
			continue
		}
		st := staticFilter(f.Reason)
		for ci := range f.Causes {
			c := &f.Causes[ci]
			switch {
			case st && (topStatic == nil || c.Devices > topStatic.Devices):
				topStatic, topStaticReason = c, f.Reason
			case !st && (top == nil || c.Devices > top.Devices):
				top, topReason = c, f.Reason
			}
		}
		if st {
			matching -= f.Removed
		}
	}
	switch {
	case r.Devices == 0:
		t.lit("no device of the node's pools")
	case matching == 0 && topStaticReason == allocator.ReasonClassSelector:
		t.lit("class " + r.Class + " matched no device")
	case matching == 0 && topStaticReason == allocator.ReasonRequestSelector:
		t.lit("the request's selectors matched no device of class " + r.Class)
	case matching == 0 && topStatic != nil:
		t.lit("no device usable: ")
		t.cause(topStatic, topStaticReason, nil)
	case !r.All && matching < r.Needs:
		t.lit("needs ")
		t.add(countSlot, r.Needs, "")
		t.lit(" ")
		t.add(nounSlot, r.Needs, "device")
		t.lit(", ")
		// Not a range: what tells nodes too small apart is the most any of them has.
		t.add(mostSlot, matching, "")
		t.lit(" matching")
	case top != nil:
		t.add(countSlot, top.Devices, "")
		t.lit(" of ")
		t.add(totalSlot, matching, "")
		t.lit(" matching ")
		t.add(nounSlot, matching, "device")
		t.lit(" ")
		t.cause(top, topReason, holders)
	default:
		t.lit("needs ")
		t.add(countSlot, r.Needs, "")
		t.lit(" ")
		t.add(nounSlot, r.Needs, "device")
		t.lit(", ")
		t.add(countSlot, matching, "")
		t.lit(" match")
	}
}

// staticFilter reports the filters that decide what a device is, before what the cluster does with it
// (the allocator's split, for the main reason).
func staticFilter(r allocator.Reason) bool {
	switch r {
	case allocator.ReasonPoolIncomplete, allocator.ReasonPoolInvalid, allocator.ReasonBindingConditions, allocator.ReasonClassSelector,
		allocator.ReasonRequestSelector, allocator.ReasonCELError, allocator.ReasonNotOnNode:
		return true
	}
	return false
}

// cause is what a cause did to its devices. The node's own objects (its pools and slices, the claims
// holding its devices) are slots; cluster-wide ones (classes, selectors, taint rules) name the reason.
// holders are the claims holding devices, for ReasonAllocated.
func (t *reasonTemplate) cause(c *allocator.Cause, r allocator.Reason, holders []string) {
	switch r {
	case allocator.ReasonPoolIncomplete, allocator.ReasonPoolInvalid:
		t.lit("in ")
		t.add(nameSlot, 0, c.Object)
		t.lit(", ")
		t.add(detailSlot, 0, c.Message)
	case allocator.ReasonBindingConditions:
		t.lit("with binding conditions, which are disabled")
	case allocator.ReasonClassSelector, allocator.ReasonRequestSelector:
		t.lit("rejected by " + c.Object + " " + c.Field + " (" + c.Expression + ")")
	case allocator.ReasonCELError:
		t.lit("where " + c.Object + " " + c.Field + " failed: " + c.Message)
	case allocator.ReasonNotOnNode:
		t.lit("not available on this node (")
		t.add(nameSlot, 0, c.Object)
		t.lit(")")
	case allocator.ReasonAllocated:
		t.lit("allocated to ")
		t.names(holders)
	case allocator.ReasonCapacity:
		if c.Available == "" {
			t.lit("cannot serve capacity " + c.Name + " " + c.Needed)
			return
		}
		t.lit("short of capacity " + c.Name + ": need " + c.Needed + ", ")
		t.add(quantitySlot, 0, c.Available)
		t.lit(" free")
	case allocator.ReasonNodeOperations:
		t.lit("skip node operations, which this node does not support")
	case allocator.ReasonCounters:
		if c.Name == "" {
			t.lit("would consume counters, which are disabled")
			return
		}
		t.lit("short of counter " + c.CounterSet + "/" + c.Name + ": need " + c.Needed + ", ")
		t.add(quantitySlot, 0, c.Available)
		t.lit(" left")
	case allocator.ReasonCompatibilityGroup:
		t.lit("not compatible with the devices drawing on counter set " + c.CounterSet)
	case allocator.ReasonTaint:
		t.lit("tainted " + c.Name + ":" + c.Effect + " by ")
		if strings.HasPrefix(c.Object, "DeviceTaintRule ") {
			t.lit(c.Object)
		} else {
			t.add(nameSlot, 0, c.Object) // the node's own slice
		}
	default:
		t.lit(string(r))
	}
}

// obstacle is what keeps requests from fitting together, without the search's steps.
func (t *reasonTemplate) obstacle(o *allocator.Obstacle) {
	refs := make([]string, len(o.Requests))
	for i, r := range o.Requests {
		refs[i] = r.String()
	}
	who := strings.Join(refs, "; ")
	switch o.Reason {
	case allocator.ReasonTooManyResults:
		t.lit(who + ": the claim would hold ")
		t.add(countSlot, o.Needed, "")
		t.lit(" ")
		t.add(nounSlot, o.Needed, "device")
		t.lit(", more than 32")
	case allocator.ReasonConstraint:
		t.lit(who + ": constraint " + o.Field + " on " + o.Attribute + ": at most ")
		t.add(countSlot, o.Largest, "")
		t.lit(" of the ")
		t.add(countSlot, o.Needed, "")
		t.lit(" ")
		t.add(nounSlot, o.Needed, "device")
		t.lit(" needed together (candidates by value: ")
		var vals []string
		for i, v := range o.Values {
			if i == 5 {
				vals = append(vals, "…")
				break
			}
			val := v.Value
			if val == "" {
				val = "(none)"
			}
			vals = append(vals, val+": "+strconv.Itoa(v.Devices))
		}
		t.add(detailSlot, 0, strings.Join(vals, ", "))
		t.lit(")")
	case allocator.ReasonCompeting:
		t.lit(who + ": together need ")
		t.add(countSlot, o.Needed, "")
		t.lit(" ")
		t.add(nounSlot, o.Needed, "device")
		t.lit(" and share ")
		t.add(countSlot, o.Largest, "")
		t.lit(" ")
		t.add(nounSlot, o.Largest, "candidate")
	case allocator.ReasonSearchGaveUp:
		t.lit("search gave up")
	case allocator.ReasonNoCombination:
		t.lit("no combination of the candidates satisfies every request together")
	default:
		t.lit(who + ": " + string(o.Reason))
	}
}

// reasonSum sums up the slots of the nodes of one group.
type reasonSum struct {
	text  []string
	slots []slotSum
}

type slotSum struct {
	kind     slotKind
	noun     string
	min, max int
	first    string
	names    map[string]struct{}
	low, top resource.Quantity // the range of quantities, while every one parses
	parsed   bool
}

func newReasonSum(t *reasonTemplate) *reasonSum {
	s := &reasonSum{text: t.text, slots: make([]slotSum, len(t.slots))}
	for i, sl := range t.slots {
		s.slots[i] = slotSum{kind: sl.kind, noun: sl.s, min: sl.n, max: sl.n, first: sl.s, names: map[string]struct{}{}, parsed: true}
		if q, err := resource.ParseQuantity(sl.s); sl.kind == quantitySlot && err == nil {
			s.slots[i].low, s.slots[i].top = q, q
		} else {
			s.slots[i].parsed = false
		}
	}
	return s
}

// add sums up one node's template, which has the same key.
func (s *reasonSum) add(t *reasonTemplate) {
	for i, sl := range t.slots {
		ss := &s.slots[i]
		ss.min, ss.max = min(ss.min, sl.n), max(ss.max, sl.n)
		switch {
		case ss.kind == nameSlot && len(sl.names) > 0:
			for _, n := range sl.names {
				ss.names[n] = struct{}{}
			}
		case ss.kind == nameSlot || ss.kind == quantitySlot || ss.kind == detailSlot:
			ss.names[sl.s] = struct{}{}
		}
		if ss.kind == quantitySlot && ss.parsed {
			q, err := resource.ParseQuantity(sl.s)
			switch {
			case err != nil:
				ss.parsed = false
			case q.Cmp(ss.low) < 0:
				ss.low = q
			case q.Cmp(ss.top) > 0:
				ss.top = q
			}
		}
	}
}

// String is the group's reason; with one node, or nodes that agree on every slot, the node's reason.
func (s *reasonSum) String() string {
	var b strings.Builder
	for i, text := range s.text {
		b.WriteString(text)
		if i == len(s.slots) {
			break
		}
		ss := &s.slots[i]
		switch {
		case ss.kind == countSlot && ss.min == ss.max:
			b.WriteString(strconv.Itoa(ss.min))
		case ss.kind == countSlot:
			fmt.Fprintf(&b, "%d–%d", ss.min, ss.max)
		case ss.kind == totalSlot && ss.min == ss.max:
			b.WriteString(strconv.Itoa(ss.min))
		case ss.kind == totalSlot:
			b.WriteString("the")
		case ss.kind == mostSlot && ss.min == ss.max:
			b.WriteString("the node has " + strconv.Itoa(ss.max))
		case ss.kind == mostSlot:
			b.WriteString("the nodes have at most " + strconv.Itoa(ss.max))
		case ss.kind == nounSlot && ss.min == 1 && ss.max == 1:
			b.WriteString(ss.noun)
		case ss.kind == nounSlot:
			b.WriteString(ss.noun + "s")
		case len(ss.names) <= 1:
			b.WriteString(ss.first)
		case ss.kind == quantitySlot && ss.parsed:
			b.WriteString(ss.low.String() + "–" + ss.top.String())
		case ss.kind == detailSlot:
			b.WriteString("different per node")
		default:
			b.WriteString(ss.first + " and " + plural(len(ss.names)-1, "other"))
		}
	}
	return b.String()
}
