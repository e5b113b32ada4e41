package replay_test

import (
	"context"
	"fmt"

	"github.com/dralloc/dralloc/allocator/headroom/trace"
	"github.com/dralloc/dralloc/examples/scheduler-plugin/replay"
)

// A slice of the trace, replayed offline with the library's FGD: the row the live runs are compared with.
func ExampleSlice_Offline() {
	t, err := trace.Open(testdata+"openb_node_list_gpu_node.csv", testdata+"openb_pod_list_default.csv", trace.ReadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	s, err := replay.NewSlice(t, 3, 20, 1, 1, 10_000)
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := s.Offline(context.Background(), "FGD")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d nodes, %d GPUs, %d tasks: %.1f GPUs unallocated, %d tasks failed\n", len(s.Trace.Nodes), r.GPUs, r.Tasks, r.Unallocated, r.Failed)
	// Output:
	// 20 nodes, 96 GPUs, 111 tasks: 5.4 GPUs unallocated, 7 tasks failed
}
