// Command quickstart tells the dralloc story on an in-memory fleet of DGX nodes built from inventory's
// profiles, in the resource.k8s.io/v1 API of Kubernetes 1.37:
//
//  1. the inventory: the slices NVIDIA's DRA driver would publish, validated as the API server would;
//  2. the platform team's DeviceClass with extendedResourceName serves an unchanged `nvidia.com/gpu: 2` pod;
//  3. a native claim with a CEL memory selector and a prioritized list: a whole H100, else a MIG slice;
//  4. an inference claim that consumes part of a shared GPU's memory, within the device's valid range;
//  5. a PodGroup gang placed all or nothing inside one rack;
//  6. a DeviceTaintRule that takes one GPU out for maintenance, first as a dry run, then with its
//     eviction plan;
//  7. a pod that fits nowhere, and why, node by node;
//  8. the requeue: which pending claim may fit once a claim is freed, and where it goes then.
//
// Every object the story creates can be printed as YAML, ready for kubectl:
//
//	go run ./examples/quickstart                         # the story
//	go run ./examples/quickstart -show list              # the objects it created, by kind and name
//	go run ./examples/quickstart -show claim/ml/train    # one of them as YAML
//
// Imports: of dralloc only its public packages (allocator, allocator/pods, inventory and taints); nothing imports an example.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

type showFlag []string

func (s *showFlag) String() string     { return strings.Join(*s, ",") }
func (s *showFlag) Set(v string) error { *s = append(*s, v); return nil }

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("quickstart", flag.ContinueOnError)
	var show showFlag
	fs.Var(&show, "show", "print an object the story created as YAML instead of the story: kind/name or kind/namespace/name "+
		"(node, pod, slice, class, claim, template, rule, podgroup; \"list\" lists them); repeatable")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return nil
	} else if err != nil {
		return err
	}
	story := io.Writer(out)
	if len(show) > 0 {
		story = io.Discard // only the objects asked for
	}
	s, err := tell(story)
	if err != nil {
		return err
	}
	for _, what := range show {
		if what == "list" {
			keys := s.objects.keys()
			slices.Sort(keys)
			for _, k := range keys {
				fmt.Fprintln(out, k)
			}
			continue
		}
		if err := s.objects.print(out, what); err != nil {
			return err
		}
	}
	return nil
}
