package fragscore

import (
	"context"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/dralloc/dralloc/allocator"
)

// scoreKey is what a node's score is a function of, for one pod in one cycle: its node class under
// allocator.NodeClasses for the pod's claims (the allocation Score rates is the class's, renamed to the
// node's devices, or no allocation on every node of the class), the node's device signature (what the
// class does not pin of the devices: attributes no selector of the claims reads, which topology mode
// compares and FGD's device kinds and mix shapes read), and in fragmentation mode the node's allocatable
// and requested CPU and memory (FGD's free CPU and memory). Nothing else of the node is read: FGD's
// memos are keyed by content, not by name, and neither score reads node labels.
type scoreKey struct {
	class, sig                         int
	allocCPU, allocMem, reqCPU, reqMem int64
}

// nodeSignatures numbers the nodes by their node-local devices as the scores read them (see
// [signer]): nodes of one number have one node-local slice each, of a pool of one slice, whose devices
// the scores cannot tell apart position by position. A node with several node-local slices gets a
// number of its own, since the order in which the slices' devices correspond from node to node is the
// allocator's, not the plugin's; a node without node-local slices gets 0.
func nodeSignatures(all map[string]*resourceapi.ResourceSlice, sg signer) map[string]int {
	byNode := map[string][]*resourceapi.ResourceSlice{}
	for _, s := range all {
		if s.Spec.NodeName != nil && *s.Spec.NodeName != "" {
			byNode[*s.Spec.NodeName] = append(byNode[*s.Spec.NodeName], s)
		}
	}
	out := make(map[string]int, len(byNode))
	ids := map[string]int{}
	for node, ss := range byNode {
		if len(ss) != 1 || ss[0].Spec.Pool.ResourceSliceCount != 1 {
			out[node] = -1 // replaced below by a number of its own
			continue
		}
		sig := sg.slice(ss[0])
		id, ok := ids[sig]
		if !ok {
			id = len(ids) + 1
			ids[sig] = id
		}
		out[node] = id
	}
	next := len(ids) + 1
	for _, node := range sortedKeys(out) {
		if out[node] < 0 {
			out[node] = next
			next++
		}
	}
	return out
}

// signer writes what the plugin's score reads of a slice's devices, beyond what the node class pins,
// leaving out what it does not read (names, and attributes such as a uuid that neither the score nor
// any selector reads), so that nodes whose devices differ only there share a signature:
//   - Topology mode compares the topology attributes of the devices allocated (topologyScore): their
//     values, looked up as topologyScore looks them up, for each device.
//   - FGD (allocator/headroom) reads the devices' capacities and whether they are shared, which
//     devices of the node are alike (same string attributes: which, not their values), and the values
//     of the attributes the mix's shapes ask for.
//
// Both also write the driver, each device's capacities and allowMultipleAllocations.
type signer struct {
	mode Mode
	topo []resourceapi.FullyQualifiedName
	// mixAttrs are the attribute names the mix's shapes ask for, sorted.
	mixAttrs []resourceapi.QualifiedName
}

func newSigner(args Args) signer {
	sg := signer{mode: args.Mode, topo: args.TopologyAttributes}
	if len(sg.topo) == 0 {
		sg.topo = allocator.DefaultTopologyAttributes()
	}
	for _, sh := range args.Mix {
		for _, r := range sh.Requests {
			for k := range r.Attributes {
				if !slices.Contains(sg.mixAttrs, k) {
					sg.mixAttrs = append(sg.mixAttrs, k)
				}
			}
		}
	}
	slices.Sort(sg.mixAttrs)
	return sg
}

// slice is the slice's signature.
func (sg signer) slice(s *resourceapi.ResourceSlice) string {
	var b strings.Builder
	b.WriteString(strconv.Quote(s.Spec.Driver))
	alike := map[string]int{} // a device's string attributes → the index of the first device with them
	for i, d := range s.Spec.Devices {
		b.WriteString("|")
		if d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations {
			b.WriteString("m")
		}
		names := make([]string, 0, len(d.Capacity))
		for k := range d.Capacity {
			names = append(names, string(k))
		}
		slices.Sort(names)
		for _, k := range names {
			q := d.Capacity[resourceapi.QualifiedName(k)].Value
			b.WriteString(";" + strconv.Quote(k) + "=" + q.String())
		}
		if sg.mode == Topology {
			for _, name := range sg.topo {
				b.WriteString(";")
				if v, ok := attribute(&s.Spec.Devices[i], s.Spec.Driver, name); ok {
					writeAttribute(&b, v)
				}
			}
			continue
		}
		strs := make([]string, 0, len(d.Attributes))
		for k, a := range d.Attributes {
			if a.StringValue != nil {
				strs = append(strs, strconv.Quote(string(k))+"="+strconv.Quote(*a.StringValue))
			}
		}
		slices.Sort(strs)
		key := strings.Join(strs, ",")
		first, ok := alike[key]
		if !ok {
			first = i
			alike[key] = i
		}
		b.WriteString(";alike " + strconv.Itoa(first))
		for _, k := range sg.mixAttrs {
			b.WriteString(";")
			if v, ok := d.Attributes[k]; ok {
				writeAttribute(&b, v)
			}
		}
	}
	return b.String()
}

func writeAttribute(b *strings.Builder, a resourceapi.DeviceAttribute) {
	switch {
	case a.StringValue != nil:
		b.WriteString("s" + strconv.Quote(*a.StringValue))
	case a.IntValue != nil:
		b.WriteString("i" + strconv.FormatInt(*a.IntValue, 10))
	case a.BoolValue != nil:
		b.WriteString("b" + strconv.FormatBool(*a.BoolValue))
	case a.VersionValue != nil:
		b.WriteString("v" + strconv.Quote(*a.VersionValue))
	}
}

// nodeScores are the pod's scores by node name, computed in PreScore once per scoreKey of the
// feasible nodes.
type nodeScores map[string]int64

// scoreByKey computes the score of every node once per scoreKey: the first node of a key is scored as
// Score scores it on its own ([Plugin.scoreNode]), and the others of its key get its score. Nodes the
// classes or signatures cannot tell about are scored on their own. It returns nil, leaving every node to
// Score, where more than half the nodes have keys of their own (minNodesForGroups nodes or more): the
// grouping then saves less than half the allocations, and PreScore scores one node after another where
// the framework runs Score for many nodes at once.
func (p *Plugin) scoreByKey(ctx context.Context, pod *v1.Pod, d *demand, nodes []fwk.NodeInfo) (nodeScores, error) {
	classes, err := d.snap.NodeClasses(ctx, d.claims)
	if err != nil {
		return nil, err
	}
	vs := make([]*v1.Node, 0, len(nodes))
	infos := make([]fwk.NodeInfo, 0, len(nodes))
	for _, ni := range nodes {
		if n := ni.Node(); n != nil {
			vs, infos = append(vs, n), append(infos, ni)
		}
	}
	cls, err := classes.AppendClasses(make([]int, 0, len(vs)), vs)
	if err != nil {
		return nil, err
	}
	keys := make([]scoreKey, len(vs))
	distinct := make(map[scoreKey]struct{}, 8)
	for i, n := range vs {
		sig, ok := p.sigs[n.Name]
		if !ok {
			sig = 0
		}
		k := scoreKey{class: cls[i], sig: sig}
		if d.mode == Fragmentation {
			c, m := n.Status.Allocatable[v1.ResourceCPU], n.Status.Allocatable[v1.ResourceMemory]
			req := infos[i].GetRequested()
			k.allocCPU, k.allocMem, k.reqCPU, k.reqMem = c.MilliValue(), m.Value(), req.GetMilliCPU(), req.GetMemory()
		}
		keys[i] = k
		distinct[k] = struct{}{}
	}
	if len(vs) >= minNodesForGroups && 2*len(distinct) > len(vs) {
		return nil, nil
	}
	out := make(nodeScores, len(vs))
	seen := make(map[scoreKey]int64, len(distinct))
	for i, n := range vs {
		if s, ok := seen[keys[i]]; ok {
			out[n.Name] = s
			continue
		}
		s, st := p.scoreNode(ctx, d, pod, infos[i])
		if !st.IsSuccess() {
			return nil, st.AsError()
		}
		seen[keys[i]] = s
		out[n.Name] = s
	}
	return out, nil
}

// minNodesForGroups is the number of feasible nodes from which scoreByKey leaves a fleet of mostly
// distinct nodes to Score: below it, scoring in PreScore costs a few allocations either way.
const minNodesForGroups = 16
