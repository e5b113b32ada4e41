package fragscore

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/headroom"
)

// Mode is what the plugin rates nodes by.
type Mode string

const (
	// Fragmentation (the default) rates a node by how little its fragmentation grows (FGD).
	Fragmentation Mode = "Fragmentation"
	// Topology rates a node by how few topology domains the pod's devices there span.
	Topology Mode = "Topology"
)

// Args are the plugin's args in a KubeSchedulerConfiguration's pluginConfig (JSON or YAML, field names
// as the json tags spell them: kube-scheduler decodes args case-sensitively).
type Args struct {
	// Mode is Fragmentation (the default when empty) or Topology.
	Mode Mode `json:"mode,omitempty"`
	// Mix is the target workload of the fragmentation measure: task shapes with weights summing to 1.
	// Empty: the mix is learned from the pods the plugin scores, each shape weighted by how many pods
	// had it.
	Mix []MixShape `json:"mix,omitempty"`
	// TopologyAttributes are the topology domains of Topology mode, outermost first (fully qualified
	// attribute names); empty means allocator.DefaultTopologyAttributes.
	TopologyAttributes []resourceapi.FullyQualifiedName `json:"topologyAttributes,omitempty"`
}

// MixShape is one shape of the mix (headroom.Shape): what a task asks of one node, and its weight.
type MixShape struct {
	Name     string       `json:"name"`
	Weight   float64      `json:"weight"`
	Requests []MixRequest `json:"requests,omitempty"`
	// CPU and Memory are what the task asks of its node besides devices.
	CPU    resource.Quantity `json:"cpu,omitempty"`
	Memory resource.Quantity `json:"memory,omitempty"`
}

// MixRequest is what a shape asks of one device class (headroom.Request): count whole devices, or,
// with capacity set, one share of amount of that capacity of a device with allowMultipleAllocations;
// attributes, when set, are string attributes a device must have, each with one of the values given.
type MixRequest struct {
	Count      int64                                  `json:"count"`
	Capacity   resourceapi.QualifiedName              `json:"capacity,omitempty"`
	Amount     resource.Quantity                      `json:"amount,omitempty"`
	Attributes map[resourceapi.QualifiedName][]string `json:"attributes,omitempty"`
}

// MixOf is the mix of headroom's shapes as args spell it (for a configuration written from a
// trace's Mix).
func MixOf(shapes []headroom.Shape) []MixShape {
	out := make([]MixShape, len(shapes))
	for i, s := range shapes {
		out[i] = MixShape{Name: s.Name, Weight: s.Weight, CPU: s.CPU, Memory: s.Memory}
		for _, r := range s.Requests {
			out[i].Requests = append(out[i].Requests, MixRequest{Count: r.Count, Capacity: r.Capacity, Amount: r.Amount, Attributes: r.Attributes})
		}
	}
	return out
}

// shapes is the mix as headroom's shapes.
func (a *Args) shapes() []headroom.Shape {
	if len(a.Mix) == 0 {
		return nil
	}
	out := make([]headroom.Shape, len(a.Mix))
	for i, s := range a.Mix {
		out[i] = headroom.Shape{Name: s.Name, Weight: s.Weight, CPU: s.CPU, Memory: s.Memory}
		for _, r := range s.Requests {
			out[i].Requests = append(out[i].Requests, headroom.Request{Count: r.Count, Capacity: r.Capacity, Amount: r.Amount, Attributes: r.Attributes})
		}
	}
	return out
}

func (a *Args) validate() error {
	switch a.Mode {
	case "":
		a.Mode = Fragmentation
	case Fragmentation, Topology:
	default:
		return fmt.Errorf("mode: %q is neither %s nor %s", a.Mode, Fragmentation, Topology)
	}
	if len(a.TopologyAttributes) > allocator.MaxTopologyAttributes {
		return fmt.Errorf("topologyAttributes: %d names, more than %d", len(a.TopologyAttributes), allocator.MaxTopologyAttributes)
	}
	if len(a.Mix) > 0 {
		// FGD checks the mix as the measure does; an inventory without devices is enough for that.
		inv, err := headroom.NewInventory(nil)
		if err != nil {
			return err
		}
		if _, _, err := inv.FGD(a.shapes()); err != nil {
			return fmt.Errorf("mix: %w", err)
		}
	}
	return nil
}
