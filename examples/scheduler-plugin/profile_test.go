package main

import (
	"testing"

	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"

	"github.com/dralloc/dralloc/examples/scheduler-plugin/fragscore"
)

// The documented profile loads as kube-scheduler loads --config, passes its validation, enables the
// plugin with the documented weight, and its args are the plugin's.
func TestProfileEnablesThePlugin(t *testing.T) {
	cfg, err := options.LoadConfigFromFile(klog.Background(), "config/profile.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := validation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Profiles) != 1 {
		t.Fatalf("%d profiles, want 1", len(cfg.Profiles))
	}
	p := cfg.Profiles[0]
	var weight int32
	for _, pl := range p.Plugins.MultiPoint.Enabled {
		if pl.Name == fragscore.Name {
			weight = pl.Weight
		}
	}
	if weight != 100 {
		t.Errorf("%s enabled with weight %d, want 100", fragscore.Name, weight)
	}
	// The packing tie-break the README's replay measured: NodeResourcesFit's MostAllocated.
	var found, mostAllocated bool
	for _, pc := range p.PluginConfig {
		if fit, ok := pc.Args.(*config.NodeResourcesFitArgs); ok && pc.Name == "NodeResourcesFit" {
			mostAllocated = fit.ScoringStrategy != nil && fit.ScoringStrategy.Type == config.MostAllocated
		}
		if pc.Name != fragscore.Name {
			continue
		}
		found = true
		if _, err := fragscore.DecodeArgs(pc.Args); err != nil {
			t.Errorf("args: %v", err)
		}
	}
	if !mostAllocated {
		t.Errorf("NodeResourcesFit does not score MostAllocated")
	}
	if !found {
		t.Errorf("no pluginConfig for %s", fragscore.Name)
	}
}
