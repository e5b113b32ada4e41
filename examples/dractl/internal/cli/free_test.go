package cli

import (
	"encoding/json"
	"testing"
)

// The expected outputs of these tests follow from the comment at the top of testdata/free/cluster.yaml:
// a republished pool, an incomplete pool and a tainted device, which top, inventory and capacity all
// count as the allocator gives them.

func TestTopFree(t *testing.T) {
	code, out, errOut := dractl(t, "", "top", "-f", "testdata/free", "--color", "never")
	if code != exitOK {
		t.Fatalf("exit status %d, stderr %s", code, errOut)
	}
	want := `CLASS  DEVICES  FREE  USED  TAINTED
gpu    6        3     0     1

NODE    DRIVER           POOL    DEVICES  FREE  USED  SHARED  TAINTED  COUNTERS LEFT
node-a  gpu.example.com  node-a  2        2     0     0       0        -
node-b  gpu.example.com  node-b  2        0     0     0       0        -
node-c  gpu.example.com  node-c  2        1     0     0       1        -

NODE    DRIVER           POOL    DEVICE  STATE       CLAIMS  CAPACITY LEFT
node-a  gpu.example.com  node-a  gpu-0   free        -       -
node-a  gpu.example.com  node-a  gpu-1   free        -       -
node-b  gpu.example.com  node-b  gpu-0   incomplete  -       -
node-b  gpu.example.com  node-b  gpu-1   incomplete  -       -
node-c  gpu.example.com  node-c  gpu-0   tainted     -       -
node-c  gpu.example.com  node-c  gpu-1   free        -       -
`
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

func TestInventoryFree(t *testing.T) {
	code, out, errOut := dractl(t, "", "inventory", "-f", "testdata/free", "--color", "never")
	if code != exitOK {
		t.Fatalf("exit status %d, stderr %s", code, errOut)
	}
	want := `node node-a
  driver gpu.example.com, pool node-a
    gpu-0: class gpu; free
    gpu-1: class gpu; free
node node-b
  driver gpu.example.com, pool node-b, incomplete: 1 of 2 ResourceSlices of generation 1 published
    gpu-0: class gpu; not in use
    gpu-1: class gpu; not in use
node node-c
  driver gpu.example.com, pool node-c
    gpu-0: class gpu; not in use, tainted example.com/unhealthy:NoSchedule
    gpu-1: class gpu; free

Per DeviceClass:
  gpu: 6 devices, 3 free, 0 used, 1 tainted
`
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

func TestCapacityFree(t *testing.T) {
	code, out, errOut := dractl(t, "", "capacity", "-f", "testdata/free", "--color", "never")
	if code != exitOK {
		t.Fatalf("exit status %d, stderr %s", code, errOut)
	}
	want := `pod default/infer: 3 more copies fit (the next one fits nowhere)
  node-a: 2
  node-c: 1
  3 node(s) (node-a, node-b, node-c): cannot allocate all claims
pod default/train: 1 more copies fit (the next one fits nowhere)
  node-a: 1
  3 node(s) (node-a, node-b, node-c): cannot allocate all claims

fragmentation for the mix default/infer 0.50, default/train 0.50: free 3.00, F(M) 0.50, stranded 0.00 devices
NODE    FREE  F(M)  STRANDED
node-a  2.00  0.00  0.00
node-c  1.00  0.50  0.00
`
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	code, out, errOut = dractl(t, "", "capacity", "-f", "testdata/free", "-o", "json", "--pod", "default/train", "--mix", "default/train=1")
	if code != exitOK {
		t.Fatalf("exit status %d, stderr %s", code, errOut)
	}
	var rep capacityReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	fr := rep.Fragmentation
	if fr == nil || fr.Free != 3 || fr.F != 1 || fr.Stranded != 1 || len(fr.Nodes) != 2 ||
		fr.Nodes[0] != (nodeFrag{Node: "node-a", Free: 2}) || fr.Nodes[1] != (nodeFrag{Node: "node-c", Free: 1, F: 1, Stranded: 1}) {
		t.Errorf("--mix default/train=1: %+v", fr)
	}
}
