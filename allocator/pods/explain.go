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
}

// ReasonGroup is nodes that do not fit for the same main reason.
type ReasonGroup struct {
	// Reason is the node's predicate reason ("node(s) didn't match Pod's node affinity/selector") or the
	// claims' [allocator.Explanation.Headline].
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
// [allocator.Snapshot.Explain]), and the nodes grouped by that reason. It explains on the Cluster's
// snapshot and changes nothing in it; like Place it may resolve a template's claim name. Errors are
// those of Place, except that fitting nowhere is no error.
func (c *Cluster) Explain(ctx context.Context, pod *v1.Pod) (*Explanation, error) {
	snap := c.snap
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
	out := &Explanation{Pod: pod.Namespace + "/" + pod.Name, Nodes: make([]NodeExplanation, len(nodes))}
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	work := make(chan int)
	for range min(c.opts.Workers, len(nodes)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				out.Nodes[i], errs[i] = c.explainNode(ctx, snap, r, nodes[i], extName)
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
	byReason := map[string]int{}
	for _, n := range out.Nodes {
		if n.Fits {
			out.FitsOn = append(out.FitsOn, n.Node)
			continue
		}
		gi, ok := byReason[n.Reason]
		if !ok {
			gi = len(out.Groups)
			byReason[n.Reason] = gi
			out.Groups = append(out.Groups, ReasonGroup{Reason: n.Reason})
		}
		g := &out.Groups[gi]
		g.Nodes++
		if len(g.Examples) < maxExamples {
			g.Examples = append(g.Examples, n.Node)
		}
	}
	slices.SortStableFunc(out.Groups, func(x, y ReasonGroup) int {
		if c := cmp.Compare(y.Nodes, x.Nodes); c != 0 {
			return c
		}
		return cmp.Compare(x.Reason, y.Reason)
	})
	return out, nil
}

func (c *Cluster) explainNode(ctx context.Context, snap *allocator.Snapshot, r *request, node *v1.Node, extName string) (NodeExplanation, error) {
	ne := NodeExplanation{Node: node.Name}
	nc, reason, err := c.check(r, node, extName)
	switch {
	case err != nil:
		return ne, err
	case nc == nil:
		ne.Reason = reason
		return ne, nil
	case len(nc.claims) == 0:
		ne.Fits = true
		return ne, nil
	}
	e, err := snap.Explain(ctx, node, nc.claims)
	if err != nil {
		return ne, err
	}
	ne.Claims, ne.Fits, ne.Reason = e, e.Fits, e.Headline()
	return ne, nil
}

// String is the groups in one line, most nodes first: `712 nodes: claim default/train, request "gpus":
// class gpu-h100 matched no device; 40 nodes: …`, cut to about 1 KiB; "fits on N nodes" when the pod fits
// somewhere.
func (e *Explanation) String() string {
	if len(e.FitsOn) > 0 {
		return "fits on " + plural(len(e.FitsOn), "node")
	}
	if len(e.Groups) == 0 {
		return "no nodes"
	}
	var b strings.Builder
	for i, g := range e.Groups {
		part := plural(g.Nodes, "node") + ": " + g.Reason
		if i > 0 {
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
