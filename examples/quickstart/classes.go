package main

import (
	"context"
	"fmt"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dralloc/dralloc/celenv"
)

// deviceClasses are the classes a platform team publishes for this fleet.
func deviceClasses() []*resourceapi.DeviceClass {
	class := func(name string, exprs ...string) *resourceapi.DeviceClass {
		c := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
		for _, e := range exprs {
			c.Spec.Selectors = append(c.Spec.Selectors, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: e}})
		}
		return c
	}
	isGPU := `device.driver == "gpu.nvidia.com"`
	return []*resourceapi.DeviceClass{
		class("gpu.nvidia.com", isGPU),
		class("gpu-40gi.nvidia.com", isGPU,
			`device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0`),
		class("gpu-hopper.nvidia.com", isGPU,
			`device.attributes["gpu.nvidia.com"].cudaComputeCapability.compareTo(semver("9.0.0")) >= 0`),
	}
}

// classes compiles every class's selectors once, prepares every device
// once, and prints which devices each class selects; then shows what
// happens to selectors with mistakes.
func classes(slices []*resourceapi.ResourceSlice) error {
	ctx := context.Background()
	env, err := celenv.NewEnv(celenv.Options{})
	if err != nil {
		return err
	}
	type node struct {
		name    string
		devices []*celenv.Device
		names   []string
	}
	var nodes []node
	for _, s := range slices {
		n := node{name: *s.Spec.NodeName}
		for i := range s.Spec.Devices {
			n.devices = append(n.devices, celenv.NewDevice(s.Spec.Driver, &s.Spec.Devices[i]))
			n.names = append(n.names, s.Spec.Devices[i].Name)
		}
		nodes = append(nodes, n)
	}

	fmt.Println("\n== device classes")
	for _, class := range deviceClasses() {
		var selectors []*celenv.Selector
		for i, sel := range class.Spec.Selectors {
			s, err := env.Compile(sel.CEL.Expression)
			if err != nil {
				return fmt.Errorf("DeviceClass %s: spec.selectors[%d].cel.expression: %w", class.Name, i, err)
			}
			selectors = append(selectors, s)
		}
		fmt.Printf("%s\n", class.Name)
		total := 0
		for _, n := range nodes {
			var matched []string
			for i, d := range n.devices {
				ok, err := matchesAll(ctx, selectors, d)
				if err != nil {
					return fmt.Errorf("DeviceClass %s: %w", class.Name, err)
				}
				if ok {
					matched = append(matched, n.names[i])
				}
			}
			if len(matched) > 0 {
				fmt.Printf("  %-12s %s\n", n.name, strings.Join(matched, " "))
				total += len(matched)
			}
		}
		fmt.Printf("  %d devices\n", total)
	}

	fmt.Println("\n== selectors with mistakes")
	invalid := `device.capacity["gpu.nvidia.com"].memory >= "40Gi"`
	if _, err := env.Compile(invalid); err != nil {
		fmt.Printf("rejected: %v\n", err)
	} else {
		return fmt.Errorf("selector %q should not compile", invalid)
	}
	// This one compiles (attributes are dynamically typed) but never works:
	// lint says why before any pod is stuck on it.
	var all []*celenv.Device
	for _, n := range nodes {
		all = append(all, n.devices...)
	}
	report, err := env.Lint(ctx, `device.attributes["gpu.nvidia.com"].cudaComputeCapability >= "9.0"`, all)
	if err != nil {
		return err
	}
	for _, f := range report.Findings {
		fmt.Printf("lint: %s\n", f.Message)
	}
	failed := 0
	for _, o := range report.Outcomes {
		if o.Err != nil {
			failed++
		}
	}
	fmt.Printf("lint: evaluation fails on %d of %d devices\n", failed, len(report.Outcomes))
	return nil
}

func matchesAll(ctx context.Context, selectors []*celenv.Selector, d *celenv.Device) (bool, error) {
	for _, s := range selectors {
		ok, err := s.Matches(ctx, d)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}
