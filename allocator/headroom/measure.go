package headroom

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dralloc/dralloc/allocator/pods"
)

// Fragmentation measures F(M) and the stranded capacity of every node of the inventory on the
// cluster's snapshot: its allocated claims, and the CPU and memory its nodes' allocatable leaves to the
// pods it knows ([pods.Cluster.Requested]). A node of the inventory that the snapshot does not have
// is measured without CPU and memory limits. The weights must be at least 0 and sum to 1 (within
// 1e-9).
func (inv *Inventory) Fragmentation(c *pods.Cluster, mix []Shape) (*Report, error) {
	if c == nil {
		return nil, errors.New("headroom: nil Cluster")
	}
	pm, err := prepareMix(mix)
	if err != nil {
		return nil, err
	}
	snap := c.Snapshot()
	rep := &Report{}
	for _, n := range inv.nodes {
		node, _ := snap.Node(n)
		st := inv.current(snap, n, node, c.Requested(n))
		nf := pm.measure(n, st)
		rep.F += nf.F
		rep.Free += nf.Free
		rep.Stranded += nf.StrandedFree
		rep.Nodes = append(rep.Nodes, nf)
	}
	return rep, nil
}

func checkMix(mix []Shape) error {
	if len(mix) == 0 {
		return errors.New("headroom: mix: must have at least one shape")
	}
	sum := 0.0
	for i, m := range mix {
		if m.Weight < 0 || math.IsNaN(m.Weight) {
			return fmt.Errorf("headroom: mix[%d] %s: weight: must be at least 0, got %v", i, m.Name, m.Weight)
		}
		for j, r := range m.Requests {
			if r.Capacity == "" && r.Count < 1 {
				return fmt.Errorf("headroom: mix[%d] %s: requests[%d].count: must be at least 1, got %d", i, m.Name, j, r.Count)
			}
			if r.Capacity != "" && r.Amount.Sign() <= 0 {
				return fmt.Errorf("headroom: mix[%d] %s: requests[%d].amount: must be positive", i, m.Name, j)
			}
		}
		if m.CPU.Sign() < 0 {
			return fmt.Errorf("headroom: mix[%d] %s: cpu: must not be negative", i, m.Name)
		}
		if m.Memory.Sign() < 0 {
			return fmt.Errorf("headroom: mix[%d] %s: memory: must not be negative", i, m.Name)
		}
		sum += m.Weight
	}
	if math.Abs(sum-1) > 1e-9 {
		return fmt.Errorf("headroom: mix: weights must sum to 1, got %v", sum)
	}
	return nil
}

// preparedMix is a checked mix grouped by device requests: shapes that ask for the same devices and
// differ in CPU and memory share one look at the devices.
type preparedMix struct {
	groups []shapeGroup
}

type shapeGroup struct {
	requests []Request
	shapes   []sizedShape
}

// sizedShape is a shape's weight and its CPU (millicores) and memory (bytes).
type sizedShape struct {
	weight   float64
	cpu, mem int64
}

func prepareMix(mix []Shape) (*preparedMix, error) {
	if err := checkMix(mix); err != nil {
		return nil, err
	}
	pm := &preparedMix{}
	index := map[string]int{}
	for _, m := range mix {
		sig := requestsSignature(m.Requests)
		g, ok := index[sig]
		if !ok {
			g = len(pm.groups)
			index[sig] = g
			pm.groups = append(pm.groups, shapeGroup{requests: slices.Clone(m.Requests)})
		}
		pm.groups[g].shapes = append(pm.groups[g].shapes, sizedShape{weight: m.Weight, cpu: m.CPU.MilliValue(), mem: m.Memory.Value()})
	}
	return pm, nil
}

func requestsSignature(rs []Request) string {
	var b strings.Builder
	for _, r := range rs {
		b.WriteString(strconv.FormatInt(r.Count, 10) + " " + string(r.Capacity) + " " + r.Amount.String())
		names := make([]string, 0, len(r.Attributes))
		for k, vs := range r.Attributes {
			vs = slices.Clone(vs)
			slices.Sort(vs)
			names = append(names, strconv.Quote(string(k))+"="+strconv.Quote(strings.Join(vs, "\x00")))
		}
		slices.Sort(names)
		b.WriteString(" " + strings.Join(names, ",") + ";")
	}
	return b.String()
}

// serves reports whether the device could serve the request now.
func (s *devState) serves(st *nodeState, r Request) bool {
	if s.blocked {
		return false
	}
	for k, want := range r.Attributes {
		a, ok := s.dev.attrs[k]
		if !ok || a.StringValue == nil || !slices.Contains(want, *a.StringValue) {
			return false
		}
	}
	if len(s.dev.consumes) > 0 {
		return r.Capacity == "" && s.fits
	}
	if r.Capacity == "" {
		return !s.held && st.units[s.unit] > 0
	}
	if !s.dev.shared {
		// A share request on a device without allowMultipleAllocations takes all of it.
		return !s.held
	}
	if s.whole {
		return false
	}
	l, ok := s.left[r.Capacity]
	return ok && l.Cmp(r.Amount) >= 0
}

// fitsDevices reports whether the requests fit on the node's devices, each on devices of its own, and
// marks in usable the units one of them could use.
func fitsDevices(st *nodeState, requests []Request, usable []bool) bool {
	taken := make([]bool, len(st.devs))
	ok := true
	for _, r := range requests {
		need := r.Count
		if r.Capacity != "" {
			need = 1
		}
		for i := range st.devs {
			if st.devs[i].serves(st, r) {
				usable[st.devs[i].unit] = true
				if need > 0 && !taken[i] {
					taken[i] = true
					need--
				}
			}
		}
		if need > 0 {
			ok = false
		}
	}
	return ok
}

// measure is F_n(M) and the stranded capacity of the node in state st (see frag.go).
func (pm *preparedMix) measure(node string, st *nodeState) NodeFragmentation {
	nf := NodeFragmentation{Node: node}
	for _, f := range st.units {
		nf.Free += f
	}
	anyUse := make([]bool, len(st.units))
	usable := make([]bool, len(st.units))
	for _, g := range pm.groups {
		clear(usable)
		devicesFit := fitsDevices(st, g.requests, usable)
		unusable := 0.0
		for u, f := range st.units {
			if !usable[u] {
				unusable += f
			}
		}
		for _, m := range g.shapes {
			// A task whose CPU or memory the node cannot hold cannot run there: all its free GPUs are
			// fragments for it, as for a task whose devices do not fit.
			if !devicesFit || (st.limited && (m.cpu > st.cpu || m.mem > st.mem)) {
				nf.F += m.weight * nf.Free
				continue
			}
			nf.F += m.weight * unusable
			for u := range usable {
				anyUse[u] = anyUse[u] || usable[u]
			}
		}
	}
	for u, f := range st.units {
		if f > 0 && !anyUse[u] {
			nf.StrandedDevices++
			nf.StrandedFree += f
		}
	}
	return nf
}
