package cli_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/dralloc/dralloc/allocator/manifest"
	"github.com/dralloc/dralloc/examples/dractl/internal/cli"
)

// Run is dractl with its command line; the exit status says whether everything fits.
func ExampleRun() {
	code := cli.Run([]string{"top", "-f", "testdata/top/cluster.yaml", "--color", "never"}, nil, os.Stdout, os.Stderr)
	fmt.Println("exit status", code)
	// Output:
	// CLASS  DEVICES  FREE  USED  TAINTED
	// gpu    4        1     1     1
	// nic    1        0     1     0
	//
	// NODE    DRIVER           POOL    DEVICES  FREE  USED  SHARED  TAINTED  COUNTERS LEFT
	// node-a  gpu.example.com  node-a  2        0     1     0       0        gpu-0/memory 20Gi/80Gi
	// node-a  nic.example.com  node-a  1        0     1     1       0        -
	// node-b  gpu.example.com  node-b  2        1     0     0       1        -
	//
	// NODE    DRIVER           POOL    DEVICE  STATE    CLAIMS                      CAPACITY LEFT
	// node-a  gpu.example.com  node-a  part-0  used     default/big                 -
	// node-a  gpu.example.com  node-a  part-1  blocked  -                           -
	// node-a  nic.example.com  node-a  eth0    shared   default/net-1,team-b/net-2  bandwidth 60G/100G
	// node-b  gpu.example.com  node-b  gpu-0   free     -                           -
	// node-b  gpu.example.com  node-b  gpu-1   tainted  -                           -
	// exit status 0
}

// Options.Run reads the objects from Source when no -f is given: here a cluster held in a string,
// as a program reading an API server would produce them.
func ExampleOptions_Run() {
	const cluster = `
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-a-gpu}
spec:
  driver: gpu.example.com
  nodeName: node-a
  pool: {name: node-a, resourceSliceCount: 1}
  devices: [{name: gpu-0}, {name: gpu-1}]
`
	opts := cli.Options{
		Name:           "mytool",
		TrustAPIServer: true, // an API server validated the objects: they are not validated again
		Source: func(_ context.Context, opts manifest.Options, _ func(string)) (*manifest.Objects, error) {
			return manifest.Decode(strings.NewReader(cluster), "my cluster", opts)
		},
	}
	opts.Run([]string{"inventory", "--color", "never"}, nil, os.Stdout, os.Stderr)
	// Output:
	// node node-a
	//   driver gpu.example.com, pool node-a
	//     gpu-0: no class; free
	//     gpu-1: no class; free
	//
	// Per DeviceClass:
	//   no DeviceClasses in the input
}

// capacity counts how many more copies of a pod fit and where, and measures how fragmented the free
// devices are for the pending pods (testdata/capacity/cluster.yaml says why these numbers).
func ExampleRun_capacity() {
	cli.Run([]string{"capacity", "-f", "testdata/capacity", "--pod", "default/train", "--color", "never"}, nil, os.Stdout, os.Stderr)
	// Output:
	// pod default/train: 2 more copies fit (the next one fits nowhere)
	//   node-a: 2
	//   2 node(s) (node-a, node-b): cannot allocate all claims
	//
	// fragmentation for the mix default/train 0.50, default/infer 0.50: free 5.00, F(M) 0.50, stranded 0.00 devices
	// NODE    FREE  F(M)  STRANDED
	// node-a  4.00  0.00  0.00
	// node-b  1.00  0.50  0.00
	// not in the mix: default/web: asks for no devices
}
