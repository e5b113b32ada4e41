// Command fuzzing shows how a team fuzzes its own DeviceClasses in CI: the team's classes and a node built
// from inventory's profile of its hardware, pending claims drawn by the generators of package fuzz for
// those classes and slices (fuzz.ClaimsGen), each set allocated by dralloc and checked by allocator/verify,
// which shares no code with the allocator's search. Draws are deterministic (draw i is always the same
// claims), and each is bounded by a step budget and a time limit, reported apart from "does not fit".
//
// The same check runs as a property test (main_test.go, TestPropTeamClassesAllocateAndVerify, with
// fuzz.CheckAllocations): rapid shrinks a failing draw to a small case and saves it for replay.
//
// Usage: fuzzing [--draws 50] [--profile dgxh100]
//
// Imports: of dralloc only its public packages (allocator, allocator/verify, fuzz and inventory); nothing imports an example.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/verify"
	"github.com/dralloc/dralloc/fuzz"
	"github.com/dralloc/dralloc/inventory"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "fuzzing:", err)
		os.Exit(1)
	}
}

// tally counts the draws by outcome.
type tally struct {
	draws, allocated, noFit, refused, undecided int
}

func run(args []string, out io.Writer) error {
	_, err := fuzzClasses(args, out)
	return err
}

func fuzzClasses(args []string, out io.Writer) (tally, error) {
	var n tally
	fs := flag.NewFlagSet("fuzzing", flag.ContinueOnError)
	fs.IntVar(&n.draws, "draws", 50, "how many sets of claims to draw")
	profile := fs.String("profile", "dgxh100", "the node type, one of inventory's profiles: "+fmt.Sprint(inventory.ProfileNames()))
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return n, nil
	} else if err != nil {
		return n, err
	}
	team, err := newTeam(*profile)
	if err != nil {
		return n, err
	}
	snap, err := team.snapshot() // Allocate changes nothing in it: one snapshot serves every draw
	if err != nil {
		return n, err
	}
	gen := fuzz.ClaimsGen(generatorOptions(), team.classes, team.slices)
	for i := range n.draws {
		claims := gen.Example(i)
		results, err := allocate(snap, team.node, claims)
		switch {
		case errors.Is(err, allocator.ErrUnsatisfiable):
			n.noFit++
		case errors.Is(err, allocator.ErrSearchBudget), errors.Is(err, context.DeadlineExceeded):
			n.undecided++
			fmt.Fprintf(out, "draw %d: undecided: %v\n", i, err)
		case errors.Is(err, allocator.ErrInvalidInput):
			// What Kubernetes would refuse too, e.g. a constraint that no device of an All request can meet.
			n.refused++
			fmt.Fprintf(out, "draw %d: refused: %v\n", i, err)
		case err != nil:
			return n, fmt.Errorf("draw %d: %w", i, err)
		default:
			v, err := verify.Check(context.Background(), team.input(), claims, results)
			if err != nil {
				return n, fmt.Errorf("draw %d: verify: %w", i, err)
			}
			if len(v) > 0 {
				return n, fmt.Errorf("draw %d: the allocation breaks %d rules, the first: %s", i, len(v), v[0])
			}
			n.allocated++
		}
	}
	fmt.Fprintf(out, "%d draws on a %s node: %d allocated and verified, %d do not fit, %d refused, %d undecided\n",
		n.draws, *profile, n.allocated, n.noFit, n.refused, n.undecided)
	return n, nil
}

// stepBudget and timeLimit bound one draw; either running out is an error wrapping ErrSearchBudget
// or the context's, reported as undecided.
const (
	stepBudget = 1000
	timeLimit  = time.Second
)

func allocate(snap *allocator.Snapshot, node *v1.Node, claims []*resourceapi.ResourceClaim) ([]resourceapi.AllocationResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeLimit)
	defer cancel()
	return snap.Allocate(ctx, node, claims)
}

// team is what the team owns: its classes, and a node of its hardware type.
type team struct {
	node    *v1.Node
	slices  []*resourceapi.ResourceSlice
	classes []*resourceapi.DeviceClass
}

func newTeam(profile string) (*team, error) {
	t, err := inventory.Profile(profile)
	if err != nil {
		return nil, err
	}
	inst, err := t.Instantiate("node-0")
	if err != nil {
		return nil, err
	}
	return &team{node: inst.Node, slices: inst.Slices, classes: classes()}, nil
}

func (t *team) snapshot() (*allocator.Snapshot, error) {
	s := allocator.NewSnapshot(allocator.Options{StepBudget: stepBudget})
	if err := s.AddOrUpdateNode(t.node); err != nil {
		return nil, err
	}
	for _, sl := range t.slices {
		if err := s.AddOrUpdateSlice(sl); err != nil {
			return nil, err
		}
	}
	for _, c := range t.classes {
		if err := s.AddOrUpdateClass(c); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (t *team) input() verify.Input {
	return verify.Input{Slices: t.slices, Classes: t.classes, Node: t.node}
}

// generatorOptions are the request features the team's workloads use: up to three claims of up to two
// requests, prioritized lists and constraints. Requests for All devices are left out: the MIG class
// has more devices on one node than a claim may hold. The generators draw constraints and selectors on
// attributes of package fuzz's own schema (gpu.example.com/...), which NVIDIA's devices do not have: a
// draw with such a constraint does not fit, which is why most draws do not, and the search for it is
// what the step budget bounds.
func generatorOptions() fuzz.Options {
	return fuzz.Options{MaxClaims: 3, MaxRequests: 2, FirstAvailable: true, Constraints: true}
}

// classes are the team's DeviceClasses, the ones under test.
func classes() []*resourceapi.DeviceClass {
	class := func(name, expr string) *resourceapi.DeviceClass {
		return &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: resourceapi.DeviceClassSpec{
			Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: expr}}}}}
	}
	return []*resourceapi.DeviceClass{
		class("gpu.nvidia.com", `device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'`),
		class("mig.nvidia.com", `device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'`),
		class("mig-small.nvidia.com", `device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig' && `+
			`device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('20Gi')) <= 0`),
	}
}
