package allocator

import (
	"errors"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
)

// Rename returns results, the allocation [Snapshot.Allocate] (or AllocateWith) gave for the classified
// claims on node from, as that call gives it on node to of the same class: each device of a pool of
// from's own is replaced by the device at the same position (pool in the order the search visits them,
// slice, device) of to's pool, and a node selector pinning the claim to from pins it to to. Devices of
// pools the two nodes share keep their names. Everything else is copied as it is, share IDs included:
// a new share on to would draw its own ID (see Options.ShareIDs), so a caller that writes the results
// to a claim allocates on to instead. Nodes of a class meet the same pools, slices and devices position
// by position (see [NodeClasses]), so that allocating the claims on every node of a class costs one
// search and a renaming per node.
//
// The results are not modified, and the renamed ones share with them what renaming does not change
// (tolerations, consumed capacity, configuration, a node selector that does not pin): copy them before
// modifying either (DeepCopy). An error is returned when the nodes are not of one class (the snapshot
// changed since the NodeClasses was made, for one) or a device of the results is not one of from's.
func (c *NodeClasses) Rename(results []resourceapi.AllocationResult, from, to *v1.Node) ([]resourceapi.AllocationResult, error) {
	if from == nil || to == nil {
		return nil, inputError("Node", "", errors.New("nil object"))
	}
	c.s.mu.RLock()
	defer c.s.mu.RUnlock()
	if c.s.closed {
		return nil, ErrClosed
	}
	c.lock()
	defer c.unlock()
	if c.class(from, -1) != c.class(to, -1) {
		return nil, fmt.Errorf("nodes %s and %s are not of one class", from.Name, to.Name)
	}
	a := c.a
	a.node = from
	fromPools, _, err := a.gatherPoolsOf(from)
	if err != nil {
		return nil, err
	}
	fromPools = slices.Clone(fromPools) // the next gather may reuse its list
	a.node = to
	toPools, _, err := a.gatherPoolsOf(to)
	if err != nil {
		return nil, err
	}
	if len(toPools) != len(fromPools) {
		return nil, fmt.Errorf("nodes %s and %s are not of one class", from.Name, to.Name)
	}
	total := 0
	for i := range results {
		total += len(results[i].Devices.Results)
	}
	out := make([]resourceapi.AllocationResult, len(results))
	devs := make([]resourceapi.DeviceRequestAllocationResult, total)
	for i := range results {
		out[i] = results[i]
		n := len(results[i].Devices.Results)
		if results[i].Devices.Results != nil {
			out[i].Devices.Results, devs = devs[:n:n], devs[n:]
			copy(out[i].Devices.Results, results[i].Devices.Results)
		}
		for j := range out[i].Devices.Results {
			r := &out[i].Devices.Results[j]
			id, err := renameDevice(DeviceID{Driver: r.Driver, Pool: r.Pool, Device: r.Device}, from, fromPools, toPools)
			if err != nil {
				return nil, err
			}
			r.Driver, r.Pool, r.Device = id.Driver, id.Pool, id.Device
		}
		if pinsTo(out[i].NodeSelector, from.Name) {
			out[i].NodeSelector = (&pinned{}).to(to.Name)
		}
	}
	return out, nil
}

// renameDevice is the device of toPools at the position of id in fromPools; id itself when its pool is
// not from's own (a pool both nodes see).
func renameDevice(id DeviceID, from *v1.Node, fromPools, toPools []*pool) (DeviceID, error) {
	for k, p := range fromPools {
		if p.id.Driver != id.Driver || p.id.Pool != id.Pool {
			continue
		}
		if poolOwner(p) != from.Name {
			return id, nil
		}
		for si, e := range p.slices {
			for di, d := range e.devices() {
				if d.id.Device != id.Device { // the pool is id's
					continue
				}
				q := toPools[k]
				if si >= len(q.slices) || di >= len(q.slices[si].devices()) {
					return DeviceID{}, fmt.Errorf("device %s of node %s has no counterpart", id, from.Name)
				}
				return q.slices[si].devices()[di].id, nil
			}
		}
	}
	return DeviceID{}, fmt.Errorf("device %s is not one of node %s", id, from.Name)
}

// pinsTo reports whether sel is the node selector results.go writes for a claim pinned to the node.
func pinsTo(sel *v1.NodeSelector, node string) bool {
	if sel == nil || len(sel.NodeSelectorTerms) != 1 {
		return false
	}
	t := sel.NodeSelectorTerms[0]
	if len(t.MatchExpressions) != 0 || len(t.MatchFields) != 1 {
		return false
	}
	r := t.MatchFields[0]
	return r.Key == "metadata.name" && r.Operator == v1.NodeSelectorOpIn && len(r.Values) == 1 && r.Values[0] == node
}
