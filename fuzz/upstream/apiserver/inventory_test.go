package apiserver_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/dralloc/dralloc/inventory"
	"github.com/dralloc/dralloc/inventory/nvml"
	"github.com/dralloc/dralloc/inventory/nvml/nvmlmock"
	"github.com/dralloc/dralloc/taints"
)

var modes = []inventory.Mode{inventory.ModeGPU, inventory.ModeStaticMIG, inventory.ModeDynamicMIG}

// healthTaints gives the first GPUs of a node one health condition each, so that the slices carry taints of
// every effect: a lost GPU (NoExecute, which NVIDIA's driver never sets by default: the policy overrides it
// here), uncorrectable ECC errors (NoSchedule), an application XID and thermal slowdown (None). The taints are
// keyed by GPU UUID, as inventory.Options.Taints takes them.
func healthTaints(gpus []inventory.GPU) map[string][]resourceapi.DeviceTaint {
	p := inventory.HealthPolicy{Effects: map[inventory.HealthCondition]resourceapi.DeviceTaintEffect{inventory.ConditionGPULost: resourceapi.DeviceTaintEffectNoExecute}}
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	observations := []inventory.Observation{
		{Time: t0, Lost: true},
		{Time: t0, UncorrectableECCErrors: 2},
		{Time: t0, XIDs: []int{13}, ThermalSlowdown: true},
	}
	out := map[string][]resourceapi.DeviceTaint{}
	for i, obs := range observations[:min(len(gpus), len(observations))] {
		out[gpus[i].UUID] = p.Taints(p.Observe(inventory.HealthState{}, obs), t0)
	}
	return out
}

// withUUIDs returns a copy of node whose GPUs without a UUID (those of a recorded profile) get one, as a node
// instantiated from the profile has: health taints are keyed by UUID.
func withUUIDs(node inventory.Node) inventory.Node {
	node.GPUs = slices.Clone(node.GPUs)
	for i := range node.GPUs {
		if node.GPUs[i].UUID == "" {
			node.GPUs[i].UUID = fmt.Sprintf("GPU-00000000-0000-4000-8000-%012x", i)
		}
	}
	return node
}

// nodeUnderTest is a node inventory publishes: a recorded profile (no UUIDs) or a go-nvml mock discovered
// through inventory/nvml (with UUIDs).
type nodeUnderTest struct {
	name string
	node inventory.Node
	// template is the recorded profile the node comes from, nil for a mock.
	template *inventory.Template
}

func inventoryNodes(t *testing.T) []nodeUnderTest {
	var out []nodeUnderTest
	for _, name := range inventory.ProfileNames() {
		tmpl, err := inventory.Profile(name)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, nodeUnderTest{"profile-" + name, tmpl.Node, &tmpl})
	}
	for _, name := range nvmlmock.Names() {
		s, err := nvmlmock.New(name)
		if err != nil {
			t.Fatal(err)
		}
		// The mocks have no sysfs entries: the PCIe root is unknown.
		d, err := nvml.Discover(s, nvml.Options{PCIeRoot: func(string) (string, error) { return "", nil }})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, nodeUnderTest{"mock-" + name, d.Node, nil})
	}
	return out
}

// TestInventorySlicesAreAccepted: every ResourceSlice inventory publishes — every profile and mock, every mode,
// with health taints — is accepted by create, and so are the DeviceTaintRules taints.Escalate builds from their
// None taints.
func TestInventorySlicesAreAccepted(t *testing.T) {
	c := client(t)
	for _, n := range inventoryNodes(t) {
		for _, mode := range modes {
			for _, tainted := range []bool{false, true} {
				name := n.name + "-" + strings.ToLower(string(mode))
				if tainted {
					name += "-tainted"
				}
				t.Run(name, func(t *testing.T) {
					var slices []*resourceapi.ResourceSlice
					var err error
					if n.template != nil && !tainted {
						// Instantiated as an autoscaler would, for a node that does not exist yet.
						tmpl := *n.template
						tmpl.Mode = mode
						slices, err = tmpl.Slices(uniqueName(name), 3)
					} else {
						node := n.node
						opts := inventory.Options{NodeName: uniqueName(name), Mode: mode}
						if tainted {
							node = withUUIDs(node)
							opts.Taints = healthTaints(node.GPUs)
						}
						slices, err = inventory.Slices(node, opts)
					}
					if err != nil {
						t.Fatal(err)
					}
					devices := 0
					for _, s := range slices {
						createSlice(t, c, s)
						devices += len(s.Spec.Devices)
					}
					if devices == 0 && !onlyEmptyMIG(n.node, mode) {
						t.Fatalf("inventory published no devices")
					}
					if tainted && devices > 0 {
						createEscalatedRules(t, c, slices)
					}
				})
			}
		}
	}
}

// onlyEmptyMIG reports whether node publishes no devices in mode, as NVIDIA's driver: in static MIG mode a
// GPU with MIG enabled publishes its MIG devices instead of itself, and a node whose GPUs all have MIG enabled
// without MIG devices (the dgxa100 profile, recorded for dynamic MIG) publishes none.
func onlyEmptyMIG(node inventory.Node, mode inventory.Mode) bool {
	if mode != inventory.ModeStaticMIG {
		return false
	}
	for _, g := range node.GPUs {
		if !g.MIGEnabled || len(g.MIGDevices) > 0 {
			return false
		}
	}
	return true
}

func createSlice(t *testing.T, c kubernetes.Interface, s *resourceapi.ResourceSlice) {
	t.Helper()
	got, err := c.ResourceV1().ResourceSlices().Create(context.Background(), s, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create ResourceSlice %s: %v", s.Name, err)
	}
	if got.Spec.Pool != s.Spec.Pool || len(got.Spec.Devices) != len(s.Spec.Devices) {
		t.Fatalf("ResourceSlice %s read back with pool %+v and %d devices, sent %+v and %d", s.Name,
			got.Spec.Pool, len(got.Spec.Devices), s.Spec.Pool, len(s.Spec.Devices))
	}
}

// createEscalatedRules escalates every None taint in slices to NoSchedule and to NoExecute rules and creates them.
func createEscalatedRules(t *testing.T, c kubernetes.Interface, slices []*resourceapi.ResourceSlice) {
	t.Helper()
	e, err := taints.NewEvaluator(nil)
	if err != nil {
		t.Fatal(err)
	}
	conditions := e.Conditions(slices)
	var all []taints.DeviceCondition
	for _, cond := range conditions {
		all = append(all, cond.Devices...)
	}
	if len(all) == 0 {
		t.Fatalf("the tainted slices carry no None taints to escalate")
	}
	for _, effect := range []resourceapi.DeviceTaintEffect{resourceapi.DeviceTaintEffectNoSchedule, resourceapi.DeviceTaintEffectNoExecute} {
		rules, err := taints.Escalate(all, nil, effect, uniqueName("escalated"))
		if err != nil {
			t.Fatal(err)
		}
		if len(rules) == 0 {
			t.Fatalf("Escalate built no rules for %d conditions", len(all))
		}
		for _, r := range rules {
			if _, err := c.ResourceV1().DeviceTaintRules().Create(context.Background(), r, metav1.CreateOptions{}); err != nil {
				t.Errorf("create DeviceTaintRule %s: %v", r.Name, err)
			}
		}
	}
}
