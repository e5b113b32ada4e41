package fragscore_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/dralloc/dralloc/examples/scheduler-plugin/fragscore"
)

// The plugin's args as a KubeSchedulerConfiguration's pluginConfig hands them over.
func ExampleDecodeArgs() {
	args, err := fragscore.DecodeArgs(&runtime.Unknown{ContentType: runtime.ContentTypeJSON, Raw: []byte(`{
		"mix": [
			{"name": "half", "weight": 0.75, "requests": [{"count": 1, "capacity": "shares", "amount": "500"}], "cpu": "4"},
			{"name": "two", "weight": 0.25, "requests": [{"count": 2}]}
		]}`)})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(args.Mode, len(args.Mix), args.Mix[0].Requests[0].Amount.String(), args.Mix[1].Weight)

	_, err = fragscore.DecodeArgs(&runtime.Unknown{Raw: []byte(`{"mode": "Packing"}`)})
	fmt.Println(err)
	// Output:
	// Fragmentation 2 500 0.25
	// DRAFragmentation args: mode: "Packing" is neither Fragmentation nor Topology
}
