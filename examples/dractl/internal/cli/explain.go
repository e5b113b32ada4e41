package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
)

var explainCommand = &command{
	name: "explain",
	// It reads the devices through the snapshot only.
	dropDevices: true,
	summary:     "say why pending pods fit on no node, or where they would go and with which devices",
	usage: `-f FILE|DIR|- [POD | --pod NAMESPACE/NAME | --claim NAMESPACE/NAME] [-o text|yaml|json]

POD is pod/NAME or NAME, in the namespace "default" (kubectl dra: of -n or the context).

Without --pod or --claim every pending pod (one without a node) is explained, each on its own,
against the devices in use now; the pods of a PodGroup are placed together. The nodes are checked
for what Dynamic Resource Allocation decides (devices, node selector and affinity, node taints,
extended resources) and for what kube-scheduler's NodeResourcesFit, NodePorts, NodeUnschedulable
and NodeName filters decide (CPU, memory and the node's pods, counting the pods bound there). Exit status 0 when all of them fit, 1 when one
does not. A pod of a PodGroup is placed with the group's other pending pods as kube-scheduler
places them (one pass, without going back); for a group left pending the scheduler's reason is
given, and whether any placement exists, searched for within --gang-budget tries.

Examples:
  # Why is the pod training/worker-0 pending?
  kubectl get pods,nodes,resourceslices,deviceclasses,resourceclaims,resourceclaimtemplates,devicetaintrules,podgroups -A -o yaml | dractl explain -f - --pod training/worker-0

  # Could the claim default/big-gpu be allocated, and where?
  dractl explain -f cluster.yaml --claim default/big-gpu -o yaml
`,
	flags: func(fs *flag.FlagSet) any {
		o := &explainOptions{}
		fs.StringVar(&o.pod, "pod", "", "explain only this pod (namespace/name)")
		fs.StringVar(&o.claim, "claim", "", "explain only this ResourceClaim (namespace/name)")
		gangBudgetFlag(fs, &o.gangBudget)
		quotaFlag(fs, &o.enforceQuota)
		return o
	},
	run: runExplain,
	arg: explainArg,
}

// explainArg takes the pod to explain as kubectl names it: pod/NAME (pods/NAME, po/NAME) or NAME,
// in namespace, the one of -n or of the context for kubectl dra, "default" for dractl.
func explainArg(opts any, arg, namespace string) error {
	o := opts.(*explainOptions)
	name := arg
	if kind, n, ok := strings.Cut(arg, "/"); ok {
		switch kind {
		case "pod", "pods", "po":
		default:
			return fmt.Errorf("%q: explain takes a pod, as pod/NAME or NAME (a claim with --claim NAMESPACE/NAME)", arg)
		}
		name = n
	}
	if name == "" || strings.Contains(name, "/") {
		return fmt.Errorf("%q: must be pod/NAME or NAME", arg)
	}
	if o.pod != "" {
		return fmt.Errorf("%q: the pod is given with --pod already", arg)
	}
	o.pod = namespace + "/" + name
	return nil
}

type explainOptions struct {
	pod, claim   string
	gangBudget   int
	enforceQuota bool
}

// podVerdict is the answer for one pod.
type podVerdict struct {
	Pod string `json:"pod"`
	// Group is the PodGroup the pod is placed with, all or nothing.
	Group string `json:"podGroup,omitempty"`
	Fits  bool   `json:"fits"`
	// Node is where it would go, when it fits.
	Node   string         `json:"node,omitempty"`
	Claims []claimVerdict `json:"claims,omitempty"`
	// Reason is why it fits nowhere when that does not depend on the node (a claim that does not
	// exist, a claim another pod owns).
	Reason string `json:"reason,omitempty"`
	// Summary groups the nodes by their main reason, when it fits nowhere.
	Summary string `json:"summary,omitempty"`
	// Nodes are the reasons per node when it fits nowhere.
	Nodes []nodeVerdict `json:"nodes,omitempty"`
}

// claimVerdict is one claim of a pod that fits, with the devices it would get.
type claimVerdict struct {
	// Entry is the name in pod.spec.resourceClaims; empty for the claim of extended resources.
	Entry string `json:"entry,omitempty"`
	Claim string `json:"claim"`
	// New is true for a claim that does not exist yet (from a template or for extended resources).
	New bool `json:"new,omitempty"`
	// AlreadyAllocated is true for a claim that has its devices already (shared with other pods).
	AlreadyAllocated bool          `json:"alreadyAllocated,omitempty"`
	Devices          []deviceGiven `json:"devices"`
}

// deviceGiven is one device of an allocation.
type deviceGiven struct {
	Request string `json:"request"`
	Driver  string `json:"driver"`
	Pool    string `json:"pool"`
	Device  string `json:"device"`
}

// nodeVerdict says why a pod does not fit on one node.
type nodeVerdict struct {
	Node    string   `json:"node"`
	Reasons []string `json:"reasons"`
	// Explanation is the allocator's, per request and filter, when the claims are the reason.
	Explanation *allocator.Explanation `json:"explanation,omitempty"`
}

// claimReport is the answer for --claim.
type claimReport struct {
	Claim     string        `json:"claim"`
	Fits      bool          `json:"fits"`
	Allocated bool          `json:"allocated,omitempty"`
	Node      string        `json:"node,omitempty"`
	Devices   []deviceGiven `json:"devices,omitempty"`
	UsedBy    []string      `json:"usedBy,omitempty"`
	Nodes     []nodeVerdict `json:"nodes,omitempty"`
}

func runExplain(e *env, o any) (int, error) {
	opts := o.(*explainOptions)
	ctx := context.Background()
	if opts.pod != "" && opts.claim != "" {
		return exitBadInput, errors.New("give --pod or --claim, not both")
	}
	if err := e.cluster.setGangBudget(opts.gangBudget); err != nil {
		return exitBadInput, err
	}
	if err := e.cluster.enforceQuota(opts.enforceQuota); err != nil {
		return exitBadInput, err
	}
	if opts.claim != "" {
		return explainClaim(ctx, e, opts.claim)
	}
	var list []*corev1.Pod
	if opts.pod != "" {
		ns, name, err := splitName(opts.pod)
		if err != nil {
			return exitBadInput, fmt.Errorf("--pod %w", err)
		}
		pod := e.cluster.findPod(ns, name)
		if pod == nil {
			return exitBadInput, fmt.Errorf("--pod %s: no such pod in the input", opts.pod)
		}
		if pod.Spec.NodeName != "" {
			return exitBadInput, fmt.Errorf("--pod %s: the pod is not pending, it runs on node %s", opts.pod, pod.Spec.NodeName)
		}
		list = []*corev1.Pod{pod}
	} else {
		list = e.cluster.pending
	}
	return explainPods(ctx, e, list)
}

// explainPods explains the pods in order and writes each answer as soon as it is made, so that what
// is kept is one pod's answer, not every pod's until the end: on a cluster of 1,000 nodes and 2,000
// pending pods the answers of every pod on every node are gigabytes. An error stops the output
// there (and leaves a YAML or JSON document unfinished).
func explainPods(ctx context.Context, e *env, list []*corev1.Pod) (int, error) {
	code := exitOK
	var enc *listEncoder
	if e.output != "text" {
		enc = e.list("pods")
	} else if len(list) == 0 {
		fmt.Fprintln(e.stdout, e.noPending())
	}
	fits := 0
	for i, pod := range list {
		v, err := e.cluster.explainPod(ctx, pod)
		if err != nil {
			return exitBadInput, err
		}
		if v.Fits {
			fits++
		} else {
			code = exitNotFit
		}
		if enc != nil {
			if err := enc.add(v); err != nil {
				return exitBadInput, err
			}
			continue
		}
		if i > 0 {
			fmt.Fprintln(e.stdout)
		}
		e.printPodVerdict(v)
	}
	if enc != nil {
		return code, enc.end()
	}
	if len(list) > 1 {
		fmt.Fprintf(e.stdout, "\n%d of %s fit, %d cannot be scheduled\n", fits, plural(len(list), "pending pod"), len(list)-fits)
	}
	return code, nil
}

func (c *cluster) findPod(ns, name string) *corev1.Pod {
	for _, p := range c.objs.Pods {
		if p.Namespace == ns && p.Name == name {
			return p
		}
	}
	return nil
}

// explainPod places the pod on its own against the cluster as it is, changing nothing.
func (c *cluster) explainPod(ctx context.Context, pod *corev1.Pod) (podVerdict, error) {
	v := podVerdict{Pod: pod.Namespace + "/" + pod.Name}
	if reason := gated(pod); reason != "" {
		v.Reason = reason
		return v, nil
	}
	if name := podGroupName(pod); name != "" {
		return c.explainGroupPod(ctx, pod, name)
	}
	p, err := c.pods.Place(ctx, pod)
	var nne *pods.NoNodeError
	switch {
	case err == nil:
		v.Fits, v.Node, v.Claims = true, p.Node, placedClaims(p)
		return v, nil
	case errors.As(err, &nne):
		if len(nne.Nodes) == 0 {
			v.Reason = "the input has no nodes"
			return v, nil
		}
		v.Summary, v.Nodes, err = c.whyNot(ctx, pod)
		return v, err
	}
	if reason, ok := waitReason(err); ok {
		v.Reason = reason
		return v, nil
	}
	return v, err
}

// gated says why kube-scheduler does not consider the pod yet: it has spec.schedulingGates, and
// stays SchedulingGated until every gate is removed.
func gated(pod *corev1.Pod) string {
	if len(pod.Spec.SchedulingGates) == 0 {
		return ""
	}
	names := make([]string, len(pod.Spec.SchedulingGates))
	for i, g := range pod.Spec.SchedulingGates {
		names[i] = g.Name
	}
	return "not considered by the scheduler until its scheduling gates are removed: " + strings.Join(names, ", ")
}

// waitReason says whether err is one that leaves a pod pending on every node, as in Kubernetes: a
// claim or template or PodGroup that does not exist, a claim it cannot use, input that the
// allocator refuses (a selector that does not compile, a class that does not exist), a pool being
// updated.
func waitReason(err error) (string, bool) {
	for _, target := range []error{pods.ErrClaimNotFound, pods.ErrTemplateNotFound, pods.ErrPodGroupNotFound,
		pods.ErrClaimNotUsable, allocator.ErrInvalidInput, allocator.ErrPoolNotReady} {
		if errors.Is(err, target) {
			return err.Error(), true
		}
	}
	return "", false
}

// explainGroupPod places the pod with the other pending pods of its PodGroup as kube-scheduler does
// (its one pass), and reports the pod's part; for a group the pass leaves pending, the scheduler's
// reason and whether any placement exists, which the pass does not look for.
func (c *cluster) explainGroupPod(ctx context.Context, pod *corev1.Pod, group string) (podVerdict, error) {
	v := podVerdict{Pod: pod.Namespace + "/" + pod.Name, Group: group}
	g, ok := c.groups[types.NamespacedName{Namespace: pod.Namespace, Name: group}]
	if !ok {
		v.Reason = fmt.Sprintf("its PodGroup %s/%s is not in the input; the pod waits for it", pod.Namespace, group)
		return v, nil
	}
	members := c.groupMembers(pod.Namespace, group)
	gp, err := c.pods.PlaceGroup(ctx, g, members)
	if err != nil {
		var pending *pods.GroupUnschedulableError
		if errors.As(err, &pending) {
			v.Reason = fmt.Sprintf("its PodGroup %s/%s is pending: %s; %s", pod.Namespace, group, pending.Reason, c.anyPlacement(ctx, g, members))
			return v, nil
		}
		if reason, ok := waitReason(err); ok {
			v.Reason = reason
			return v, nil
		}
		return v, err
	}
	for i, m := range members {
		if m != pod {
			continue
		}
		if p := gp.Pods[i]; p != nil {
			v.Fits, v.Node, v.Claims = true, p.Node, placedClaims(p)
		} else {
			v.Reason = "left out: its PodGroup is placed without it, as its minCount allows"
		}
	}
	return v, nil
}

// anyPlacement says whether some choice of nodes holds the PodGroup that kube-scheduler's pass leaves
// pending: then the pods wait for the pass to go otherwise (other pods leaving, or other nodes), not
// for room the cluster lacks.
func (c *cluster) anyPlacement(ctx context.Context, g *schedulingapi.PodGroup, members []*corev1.Pod) string {
	_, err := c.searchGroup(ctx, g, members)
	var gaveUp *gaveUpError
	switch {
	case err == nil:
		return "a placement exists, which kube-scheduler's one pass over the pods does not find"
	case errors.Is(err, pods.ErrGroupUnschedulable):
		return fmt.Sprintf("no choice of nodes holds its %d pending pods", len(members))
	case errors.As(err, &gaveUp):
		return gaveUp.Error()
	}
	return "the search for any placement failed: " + err.Error()
}

// whyNot explains, node by node, why the pod fits nowhere: the node's predicate reason, or what
// the allocator found about the claims there (pods.Cluster.Explain). The summary groups the nodes
// by their main reason, as the scheduler's message on the pod would.
func (c *cluster) whyNot(ctx context.Context, pod *corev1.Pod) (string, []nodeVerdict, error) {
	exp, err := c.pods.Explain(ctx, pod)
	if err != nil {
		return "", nil, err
	}
	var out []nodeVerdict
	for _, n := range exp.Nodes {
		if n.Fits {
			continue
		}
		nv := nodeVerdict{Node: n.Node, Reasons: []string{n.Reason}, Explanation: n.Claims}
		if n.Claims != nil {
			if r := n.Claims.Reasons(); len(r) > 0 {
				nv.Reasons = r
			}
		}
		out = append(out, nv)
	}
	return exp.String(), out, nil
}

// placedClaims lists the claims of a placement with their devices.
func placedClaims(p *pods.Placement) []claimVerdict {
	var out []claimVerdict
	for _, pc := range p.Claims {
		cv := claimVerdict{
			Entry:            pc.Name,
			Claim:            pc.Claim.Namespace + "/" + pc.Claim.Name,
			New:              pc.Generated,
			AlreadyAllocated: !pc.Allocated,
		}
		cv.Devices = devicesOf(pc.Claim.Status.Allocation)
		out = append(out, cv)
	}
	return out
}

func devicesOf(a *resourceapi.AllocationResult) []deviceGiven {
	if a == nil {
		return nil
	}
	out := []deviceGiven{}
	for _, r := range a.Devices.Results {
		out = append(out, deviceGiven{Request: r.Request, Driver: r.Driver, Pool: r.Pool, Device: r.Device})
	}
	return out
}

func (e *env) printPodVerdict(v podVerdict) {
	w := e.stdout
	if v.Group != "" {
		v.Pod += " (PodGroup " + v.Group + ")"
	}
	if v.Fits {
		fmt.Fprintf(w, "Pod %s %s on node %s\n", v.Pod, e.good("fits"), v.Node)
		for _, c := range v.Claims {
			e.printClaimVerdict(c)
		}
		return
	}
	fmt.Fprintf(w, "Pod %s %s\n", v.Pod, e.bad("cannot be scheduled"))
	if v.Reason != "" {
		fmt.Fprintf(w, "  %s\n", v.Reason)
	}
	e.printNodeReasons(v.Nodes, v.Summary)
}

// maxReasonLines bounds the lines of reasons printed for one pod or claim.
const maxReasonLines = 8

// printNodeReasons prints the reasons per node, nodes with the same reasons on one line (in the
// order the first of them comes), as kube-scheduler sums up "3 node(s) didn't match ...": on a
// large cluster most nodes fail for the same few reasons. Past maxReasonLines lines the rest is
// counted, after the summary (the nodes grouped by main reason), and -o yaml has them all.
func (e *env) printNodeReasons(nodes []nodeVerdict, summary string) {
	type group struct {
		nodes  []string
		reason string
	}
	var groups []*group
	byReason := map[string]*group{}
	for _, n := range nodes {
		reason := strings.Join(n.Reasons, "; ")
		g := byReason[reason]
		if g == nil {
			g = &group{reason: reason}
			byReason[reason] = g
			groups = append(groups, g)
		}
		g.nodes = append(g.nodes, n.Node)
	}
	if len(groups) > maxReasonLines && summary != "" {
		fmt.Fprintf(e.stdout, "  in short: %s\n", summary)
	}
	for i, g := range groups {
		if i == maxReasonLines {
			rest := 0
			for _, g := range groups[i:] {
				rest += len(g.nodes)
			}
			fmt.Fprintf(e.stdout, "  and %s for other reasons (-o yaml lists them all)\n", plural(rest, "more node"))
			break
		}
		names := g.nodes
		more := ""
		if len(names) > 5 {
			names, more = names[:5], fmt.Sprintf(" and %d more", len(names)-5)
		}
		label := "node "
		if len(g.nodes) > 1 {
			label = "nodes "
		}
		fmt.Fprintf(e.stdout, "  %s%s%s: %s\n", label, strings.Join(names, ", "), more, g.reason)
	}
}

func (e *env) printClaimVerdict(c claimVerdict) {
	var notes []string
	if c.Entry != "" {
		notes = append(notes, "pod claim "+c.Entry)
	} else {
		notes = append(notes, "for extended resources")
	}
	if c.New {
		notes = append(notes, "to be created")
	}
	if c.AlreadyAllocated {
		notes = append(notes, "already allocated, shared")
	}
	fmt.Fprintf(e.stdout, "  ResourceClaim %s (%s):\n", c.Claim, strings.Join(notes, ", "))
	for _, d := range c.Devices {
		fmt.Fprintf(e.stdout, "    request %s: device %s (driver %s, pool %s)\n", d.Request, d.Device, d.Driver, d.Pool)
	}
}

// explainClaim says whether one claim can be allocated, and where.
func explainClaim(ctx context.Context, e *env, name string) (int, error) {
	ns, n, err := splitName(name)
	if err != nil {
		return exitBadInput, fmt.Errorf("--claim %w", err)
	}
	claim, ok := e.cluster.snap.Claim(ns, n)
	if !ok {
		return exitBadInput, fmt.Errorf("--claim %s: no such ResourceClaim in the input", name)
	}
	rep := claimReport{Claim: ns + "/" + n}
	if a := claim.Status.Allocation; a != nil {
		rep.Fits, rep.Allocated, rep.Devices = true, true, devicesOf(a)
		for _, r := range claim.Status.ReservedFor {
			rep.UsedBy = append(rep.UsedBy, r.Resource+" "+ns+"/"+r.Name)
		}
	} else {
		for _, node := range e.cluster.snap.Nodes() {
			results, err := e.cluster.snap.Allocate(ctx, node, []*resourceapi.ResourceClaim{claim})
			switch {
			case err == nil:
				rep.Fits, rep.Node, rep.Devices = true, node.Name, devicesOf(&results[0])
			case errors.Is(err, allocator.ErrUnsatisfiable):
				nv := nodeVerdict{Node: node.Name, Reasons: []string{"the free devices on this node cannot satisfy the claim"}}
				if exp, err := e.cluster.snap.Explain(ctx, node, []*resourceapi.ResourceClaim{claim}); err == nil {
					nv.Explanation = exp
					if r := exp.Reasons(); len(r) > 0 {
						nv.Reasons = r
					}
				}
				rep.Nodes = append(rep.Nodes, nv)
				continue
			default:
				rep.Nodes = append(rep.Nodes, nodeVerdict{Node: node.Name, Reasons: []string{err.Error()}})
				continue
			}
			break
		}
		if rep.Fits {
			rep.Nodes = nil
		}
	}
	code := exitOK
	if !rep.Fits {
		code = exitNotFit
	}
	if e.output != "text" {
		return code, e.encode(rep)
	}
	w := e.stdout
	switch {
	case rep.Allocated:
		fmt.Fprintf(w, "ResourceClaim %s is %s\n", rep.Claim, e.good("allocated"))
		for _, u := range rep.UsedBy {
			fmt.Fprintf(w, "  used by %s\n", u)
		}
	case rep.Fits:
		fmt.Fprintf(w, "ResourceClaim %s %s on node %s (the first node, by name, where it fits)\n", rep.Claim, e.good("can be allocated"), rep.Node)
	default:
		fmt.Fprintf(w, "ResourceClaim %s %s on any node\n", rep.Claim, e.bad("cannot be allocated"))
	}
	for _, d := range rep.Devices {
		fmt.Fprintf(w, "  request %s: device %s (driver %s, pool %s)\n", d.Request, d.Device, d.Driver, d.Pool)
	}
	e.printNodeReasons(rep.Nodes, "")
	return code, nil
}
