package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/pods"
)

var placeCommand = &command{
	name: "place",
	// It reads the devices through the snapshot only.
	dropDevices: true,
	summary:     "decide every pending pod in scheduling order and print the claims as the scheduler would write them",
	usage: `-f FILE|DIR|- [-o yaml|json|text]

Pending pods are taken as kube-scheduler's queue takes them: higher priority first, then older
pods. Each pod that fits is assumed before the next is decided, so later pods see the devices
earlier ones took. The pods of a PodGroup are placed together when the first of them comes up, as
kube-scheduler places a PodGroup: one pass over its pods, each on the node a pod alone would get,
without going back; a gang whose pass falls short of minCount stays pending, with the scheduler's
reason, even where another choice of nodes would hold it ("dractl explain" says whether one does). The output (-o yaml, the default, or -o json) is a List of the ResourceClaims with the status
(allocation, reservedFor) the scheduler would write, to compare with
"kubectl get resourceclaims -A -o yaml"; the pods that fit nowhere are named on stderr. With
-o text each pod is listed with its node and devices, or the reasons per node it fits nowhere
(after the pods decided before it).
Exit status 0 when every pending pod fits, 1 when one does not.

Examples:
  # What would the scheduler do with the pending pods?
  dractl place -f cluster.yaml -o text

  # Within the ResourceQuotas of the input (limits on devices per namespace and DeviceClass)
  dractl place -f cluster.yaml --enforce-quota -o text

  # Compare with what the cluster has
  dractl place -f cluster.yaml > decided.yaml
  kubectl get resourceclaims -A -o yaml > actual.yaml
`,
	flags: func(fs *flag.FlagSet) any {
		o := &placeOptions{}
		quotaFlag(fs, &o.enforceQuota)
		return o
	},
	output: "yaml",
	run:    runPlace,
}

type placeOptions struct {
	enforceQuota bool
}

// placed is the decision for one pod.
type placed struct {
	Pod    string         `json:"pod"`
	Group  string         `json:"podGroup,omitempty"`
	Node   string         `json:"node,omitempty"`
	Claims []claimVerdict `json:"claims,omitempty"`
	Reason string         `json:"reason,omitempty"`
	// Summary groups the nodes by their main reason, for a pod that fits nowhere.
	Summary string `json:"summary,omitempty"`
	// Nodes are the reasons per node for a pod that fits nowhere, after the pods decided before it.
	Nodes []nodeVerdict `json:"nodes,omitempty"`
}

// gangBudgetFlag registers --gang-budget.
func gangBudgetFlag(fs *flag.FlagSet, p *int) {
	fs.IntVar(p, "gang-budget", pods.DefaultGroupBudget, "the most tries (a pod put on a node) of the search for any placement of a pending PodGroup; when they run out the search is reported as gave up")
}

// setGangBudget checks --gang-budget and gives it to the cluster.
func (c *cluster) setGangBudget(n int) error {
	if n <= 0 {
		return fmt.Errorf("--gang-budget %d: must be positive", n)
	}
	c.gangBudget = n
	return nil
}

// searchGroup searches for any placement of a PodGroup's pods within --gang-budget tries: whether the
// group can run at all, which kube-scheduler's pass (placeGroup) does not ask.
func (c *cluster) searchGroup(ctx context.Context, g *schedulingapi.PodGroup, members []*corev1.Pod) (*pods.GroupPlacement, error) {
	b := &pods.Budget{Limit: c.gangBudget}
	gp, err := c.pods.SearchGroupPlacement(ctx, g, members, b)
	if errors.Is(err, allocator.ErrSearchBudget) {
		return nil, &gaveUpError{tries: b.Used, pods: len(members), err: err}
	}
	return gp, err
}

// gaveUpError is a PodGroup whose search ran out of --gang-budget: neither "fits" nor "does not fit".
type gaveUpError struct {
	tries, pods int
	err         error
}

func (e *gaveUpError) Error() string {
	return fmt.Sprintf("gave up: --gang-budget %d ran out before deciding whether the %d pending pods of the PodGroup fit together", e.tries, e.pods)
}

func (e *gaveUpError) Unwrap() error { return e.err }

func runPlace(e *env, o any) (int, error) {
	ctx := context.Background()
	c := e.cluster
	if err := c.enforceQuota(o.(*placeOptions).enforceQuota); err != nil {
		return exitBadInput, err
	}
	var decisions []placed
	claims := map[types.NamespacedName]*resourceapi.ResourceClaim{}
	var claimOrder []types.NamespacedName
	record := func(p *pods.Placement, group string) {
		decisions = append(decisions, placed{Pod: p.Pod.Namespace + "/" + p.Pod.Name, Group: group, Node: p.Node, Claims: placedClaims(p)})
		for _, pc := range p.Claims {
			key := types.NamespacedName{Namespace: pc.Claim.Namespace, Name: pc.Claim.Name}
			if _, ok := claims[key]; !ok {
				claimOrder = append(claimOrder, key)
			}
			claims[key] = pc.Claim
		}
	}
	done := map[*corev1.Pod]bool{}
	for _, pod := range c.pending {
		if done[pod] {
			continue
		}
		if reason := gated(pod); reason != "" {
			done[pod] = true
			decisions = append(decisions, placed{Pod: pod.Namespace + "/" + pod.Name, Reason: reason})
			continue
		}
		if gname := podGroupName(pod); gname != "" {
			members := c.groupMembers(pod.Namespace, gname)
			for _, m := range members {
				done[m] = true
			}
			g, ok := c.groups[types.NamespacedName{Namespace: pod.Namespace, Name: gname}]
			if !ok {
				for _, m := range members {
					decisions = append(decisions, placed{Pod: m.Namespace + "/" + m.Name, Group: gname, Reason: fmt.Sprintf("PodGroup %s/%s is not in the input", pod.Namespace, gname)})
				}
				continue
			}
			// What kube-scheduler does: its pass, not a search for any placement.
			gp, err := c.pods.PlaceGroup(ctx, g, members)
			if err == nil {
				err = c.pods.AssumeGroup(gp)
			}
			if err != nil {
				if !errors.Is(err, pods.ErrGroupUnschedulable) && !errors.Is(err, pods.ErrNoNode) {
					return exitBadInput, err
				}
				reason := err.Error()
				var pending *pods.GroupUnschedulableError
				if errors.As(err, &pending) {
					reason = "its PodGroup is pending: " + pending.Reason
				}
				for _, m := range members {
					decisions = append(decisions, placed{Pod: m.Namespace + "/" + m.Name, Group: gname, Reason: reason})
				}
				continue
			}
			for i, p := range gp.Pods {
				if p == nil {
					decisions = append(decisions, placed{Pod: members[i].Namespace + "/" + members[i].Name, Group: gname, Reason: "left out: the group needs fewer pods than it has"})
					continue
				}
				record(p, gname)
			}
			continue
		}
		done[pod] = true
		p, err := c.pods.Place(ctx, pod)
		if err == nil {
			err = c.pods.Assume(p)
		}
		if err != nil {
			v, verr := c.explainErr(ctx, err, pod)
			if verr != nil {
				return exitBadInput, verr
			}
			decisions = append(decisions, v)
			continue
		}
		record(p, "")
	}

	code := exitOK
	for _, d := range decisions {
		if d.Node == "" {
			code = exitNotFit
		}
	}
	if e.output != "text" {
		items := make([]*resourceapi.ResourceClaim, 0, len(claimOrder))
		for _, key := range claimOrder {
			cl := claims[key].DeepCopy()
			cl.APIVersion, cl.Kind = "resource.k8s.io/v1", "ResourceClaim"
			items = append(items, cl)
		}
		for _, d := range decisions {
			if d.Node == "" {
				fmt.Fprintf(e.stderr, "pod %s cannot be scheduled: %s\n", d.Pod, d.Reason)
			}
		}
		return code, e.encode(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	}
	if len(decisions) == 0 {
		fmt.Fprintln(e.stdout, e.noPending())
	}
	for _, d := range decisions {
		group := ""
		if d.Group != "" {
			group = " (PodGroup " + d.Group + ")"
		}
		if d.Node == "" {
			fmt.Fprintf(e.stdout, "Pod %s%s %s: %s\n", d.Pod, group, e.bad("cannot be scheduled"), d.Reason)
			e.printNodeReasons(d.Nodes, d.Summary)
			continue
		}
		fmt.Fprintf(e.stdout, "Pod %s%s %s to node %s\n", d.Pod, group, e.good("goes"), d.Node)
		for _, cv := range d.Claims {
			e.printClaimVerdict(cv)
		}
	}
	return code, nil
}

// explainErr turns the error of Place into the decision for a pod that fits nowhere; other errors
// are returned.
func (c *cluster) explainErr(ctx context.Context, err error, pod *corev1.Pod) (placed, error) {
	d := placed{Pod: pod.Namespace + "/" + pod.Name}
	var nne *pods.NoNodeError
	if errors.As(err, &nne) {
		d.Reason = fmt.Sprintf("fits on none of the %s", plural(len(nne.Nodes), "node"))
		if len(nne.Nodes) == 1 {
			d.Reason = "does not fit on the only node"
		}
		var err error
		d.Summary, d.Nodes, err = c.whyNot(ctx, pod)
		return d, err
	}
	if reason, ok := waitReason(err); ok {
		d.Reason = reason
		return d, nil
	}
	return d, err
}

func podGroupName(pod *corev1.Pod) string {
	if g := pod.Spec.SchedulingGroup; g != nil && g.PodGroupName != nil {
		return *g.PodGroupName
	}
	return ""
}

// groupMembers are the pending pods of a PodGroup that the scheduler considers (no scheduling
// gates), in scheduling order.
func (c *cluster) groupMembers(namespace, group string) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range c.pending {
		if p.Namespace == namespace && podGroupName(p) == group && gated(p) == "" {
			out = append(out, p)
		}
	}
	return out
}
