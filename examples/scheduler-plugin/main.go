// Command kube-scheduler is kube-scheduler v1.37.2 with dralloc's fragmentation-aware score plugin
// ([fragscore.Name]) registered, built the way out-of-tree plugins are: kube-scheduler's own command
// with one more plugin in its registry. Every flag of kube-scheduler works; a KubeSchedulerConfiguration
// that enables the plugin (config/profile.yaml) turns it on.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register" // JSON log format, as cmd/kube-scheduler registers it
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/dralloc/dralloc/examples/scheduler-plugin/fragscore"
)

func main() {
	command := app.NewSchedulerCommand(app.WithPlugin(fragscore.Name, fragscore.New))
	os.Exit(cli.Run(command))
}
