package fragscore

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"

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

// Args are the plugin's args in a KubeSchedulerConfiguration's pluginConfig (JSON or YAML; field names
// as below, any case).
type Args struct {
	// Mode is Fragmentation (the default when empty) or Topology.
	Mode Mode `json:"mode,omitempty"`
	// Mix is the target workload of the fragmentation measure: task shapes with weights summing to 1
	// (headroom.Shape: name, weight, requests of count devices or a share of a capacity, cpu, memory).
	// Empty: the mix is learned from the pods the plugin scores, each shape weighted by how many pods
	// had it.
	Mix []headroom.Shape `json:"mix,omitempty"`
	// TopologyAttributes are the topology domains of Topology mode, outermost first (fully qualified
	// attribute names); empty means allocator.DefaultTopologyAttributes.
	TopologyAttributes []resourceapi.FullyQualifiedName `json:"topologyAttributes,omitempty"`
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
		if _, _, err := inv.FGD(a.Mix); err != nil {
			return fmt.Errorf("mix: %w", err)
		}
	}
	return nil
}
