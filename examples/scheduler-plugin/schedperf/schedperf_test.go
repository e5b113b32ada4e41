//go:build schedperf

package schedperf

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	_ "k8s.io/component-base/logs/json/register" // the JSON log format, as upstream's dra benchmark registers it
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	perf "k8s.io/kubernetes/test/integration/scheduler_perf"
	"sigs.k8s.io/yaml"

	"github.com/dralloc/dralloc/examples/scheduler-plugin/fragscore"
)

var (
	upstreamConfig = flag.String("upstream-config", "performance-config.yaml",
		"upstream's test/integration/scheduler_perf/dra/performance-config.yaml (its templates are read relative to the working directory)")
	profile = flag.String("profile", "", "the KubeSchedulerConfiguration of the plugin's test case (default: this module's config/profile.yaml)")
)

// baseCase is upstream's DRA test case whose workloads scripts/scheduler-perf runs.
const baseCase = "SchedulingWithResourceClaimTemplate"

// TestMain sets up scheduler_perf's flags and logging, as upstream's dra benchmark does.
func TestMain(m *testing.M) {
	if err := perf.InitTests(); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// BenchmarkPerfScheduling runs upstream's SchedulingWithResourceClaimTemplate workloads twice over:
// BenchmarkPerfScheduling/SchedulingWithResourceClaimTemplate/<workload> with kube-scheduler's default
// profile, and BenchmarkPerfScheduling/SchedulingWithResourceClaimTemplateDRAFragmentation/<workload>
// with the plugin's profile. (The name contains BenchmarkPerfScheduling, as scheduler_perf's tooling
// expects.) Select one with -test.bench.
func BenchmarkPerfScheduling(b *testing.B) {
	prof := *profile
	if prof == "" {
		// The package's folder when go test runs it; scripts/scheduler-perf passes -profile.
		prof = filepath.Join("..", "config", "profile.yaml")
	}
	prof, err := filepath.Abs(prof)
	if err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(*upstreamConfig)
	if err != nil {
		b.Fatal(err)
	}
	cfg, err := pluginConfig(data, prof)
	if err != nil {
		b.Fatalf("%s: %v", *upstreamConfig, err)
	}
	path := filepath.Join(b.TempDir(), "performance-config.yaml")
	if err := os.WriteFile(path, cfg, 0o644); err != nil {
		b.Fatal(err)
	}
	perf.RunBenchmarkPerfScheduling(b, path, "dra", frameworkruntime.Registry{fragscore.Name: fragscore.New})
}

// pluginConfig returns the scheduler_perf configuration of the two test cases: upstream's baseCase
// unchanged but for its thresholds (upstream's CI machines meet them; a busy machine fails them, and a
// comparison wants the number, not the verdict), and a copy named baseCase+fragscore.Name whose
// scheduler reads the profile at profilePath. Every other field, workload and template is upstream's.
func pluginConfig(upstream []byte, profilePath string) ([]byte, error) {
	var cases []map[string]any
	if err := yaml.Unmarshal(upstream, &cases); err != nil {
		return nil, err
	}
	var base map[string]any
	for _, tc := range cases {
		if tc["name"] == baseCase {
			base = tc
		}
	}
	if base == nil {
		return nil, fmt.Errorf("no test case %s", baseCase)
	}
	workloads, ok := base["workloads"].([]any)
	if !ok {
		return nil, fmt.Errorf("test case %s: workloads is a %T, not a list", baseCase, base["workloads"])
	}
	for i, w := range workloads {
		wm, ok := w.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("test case %s: workloads[%d] is a %T, not a map", baseCase, i, w)
		}
		delete(wm, "threshold")
	}
	if _, set := base["schedulerConfigPath"]; set {
		return nil, fmt.Errorf("test case %s: schedulerConfigPath is set upstream; the baseline would not be the default profile", baseCase)
	}
	// The metrics scheduler_perf collects by default, with the plugin among the plugins whose execution
	// times are collected (upstream's list, PluginNames, is read into its default configuration when
	// the package is initialized): the times show that the plugin ran and what it cost, beside
	// DynamicResources and NodeResourcesFit.
	if _, set := base["metricsCollectorConfig"]; set {
		return nil, fmt.Errorf("test case %s: metricsCollectorConfig is set upstream", baseCase)
	}
	base["metricsCollectorConfig"] = map[string]any{"metrics": map[string]any{
		"scheduler_framework_extension_point_duration_seconds": []any{
			map[string]any{"label": "extension_point", "values": metrics.ExtensionPoints},
		},
		"scheduler_scheduling_attempt_duration_seconds": []any{
			map[string]any{"label": "result", "values": []string{metrics.ScheduledResult, metrics.UnschedulableResult, metrics.ErrorResult}},
		},
		"scheduler_pod_scheduling_duration_seconds": nil,
		"scheduler_plugin_execution_duration_seconds": []any{
			map[string]any{"label": "plugin", "values": append(slices.Clone(perf.PluginNames), fragscore.Name)},
			map[string]any{"label": "extension_point", "values": metrics.ExtensionPoints},
		},
	}}
	// The copy shares its workloads with the base: both are written out as they are now.
	plugin := make(map[string]any, len(base)+1)
	for k, v := range base {
		plugin[k] = v
	}
	plugin["name"] = baseCase + fragscore.Name
	plugin["schedulerConfigPath"] = profilePath
	return yaml.Marshal([]map[string]any{base, plugin})
}
