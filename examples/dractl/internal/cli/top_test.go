package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/dralloc/dralloc/allocator/manifest"
)

// The expected tables follow from the comment at the top of testdata/top/cluster.yaml.
func TestTop(t *testing.T) {
	code, out, errOut := dractl(t, "", "top", "-f", "testdata/top", "--color", "never")
	if code != exitOK {
		t.Fatalf("exit status %d, stderr %s", code, errOut)
	}
	want := `CLASS  DEVICES  FREE  USED  TAINTED
gpu    4        1     1     1
nic    1        0     1     0

NODE    DRIVER           POOL    DEVICES  FREE  USED  SHARED  TAINTED  COUNTERS LEFT
node-a  gpu.example.com  node-a  2        0     1     0       0        gpu-0/memory 20Gi/80Gi
node-a  nic.example.com  node-a  1        0     1     1       0        -
node-b  gpu.example.com  node-b  2        1     0     0       1        -

NODE    DRIVER           POOL    DEVICE  STATE    CLAIMS                      CAPACITY LEFT
node-a  gpu.example.com  node-a  part-0  used     default/big                 -
node-a  gpu.example.com  node-a  part-1  blocked  -                           -
node-a  nic.example.com  node-a  eth0    shared   default/net-1,team-b/net-2  bandwidth 60G/100G
node-b  gpu.example.com  node-b  gpu-0   free     -                           -
node-b  gpu.example.com  node-b  gpu-1   tainted  -                           -
`
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

func TestTopJSON(t *testing.T) {
	code, out, errOut := dractl(t, "", "top", "-f", "testdata/top", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit status %d, stderr %s", code, errOut)
	}
	var rep struct {
		Pools []struct {
			Node, Driver, Pool string
			Counters           []struct{ Name, Left, Total string }
		}
		Devices []struct {
			Device, State string
			Claims        []string
			Capacity      []struct{ Name, Left, Total string }
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rep.Pools) != 3 || len(rep.Pools[0].Counters) != 1 || rep.Pools[0].Counters[0].Left != "20Gi" || rep.Pools[0].Counters[0].Total != "80Gi" {
		t.Errorf("pools: %+v", rep.Pools)
	}
	var eth0 bool
	for _, d := range rep.Devices {
		if d.Device != "eth0" {
			continue
		}
		eth0 = true
		if d.State != "shared" || strings.Join(d.Claims, " ") != "default/net-1 team-b/net-2" || len(d.Capacity) != 1 || d.Capacity[0].Left != "60G" || d.Capacity[0].Total != "100G" {
			t.Errorf("eth0: %+v", d)
		}
	}
	if !eth0 {
		t.Errorf("no device eth0 in %s", out)
	}
}

// TestTopAgreesWithInventory: the class counts of top are inventory's.
func TestTopAgreesWithInventory(t *testing.T) {
	for _, dir := range []string{"testdata/top", "testdata/free", reasons, demo} {
		_, top, _ := dractl(t, "", "top", "-f", dir, "-o", "json")
		_, inv, _ := dractl(t, "", "inventory", "-f", dir, "-o", "json")
		var a, b struct{ Classes json.RawMessage }
		if err := json.Unmarshal([]byte(top), &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(inv), &b); err != nil {
			t.Fatal(err)
		}
		if string(a.Classes) != string(b.Classes) {
			t.Errorf("%s: top's classes %s, inventory's %s", dir, a.Classes, b.Classes)
		}
	}
}

func TestExplainPodArgument(t *testing.T) {
	_, want, _ := dractl(t, "", "explain", "-f", "testdata/gang", "--pod", "default/t2", "-o", "json")
	for _, arg := range []string{"pod/t2", "pods/t2", "t2"} {
		// Flags may follow the pod, as kubectl users write them.
		code, out, errOut := dractl(t, "", "explain", arg, "-f", "testdata/gang", "-o", "json")
		if code != exitNotFit && code != exitOK || out != want {
			t.Errorf("explain %s: status %d, stderr %s, output differs from --pod default/t2:\n%s", arg, code, errOut, out)
		}
	}
	for _, tc := range []struct{ args []string }{
		{[]string{"explain", "node/t2", "-f", "testdata/gang"}},
		{[]string{"explain", "pod/", "-f", "testdata/gang"}},
		{[]string{"explain", "t1", "t2", "-f", "testdata/gang"}},
		{[]string{"explain", "t1", "--pod", "default/t2", "-f", "testdata/gang"}},
		{[]string{"lint", "t1", "-f", "testdata/gang"}},
	} {
		if code, _, errOut := dractl(t, "", tc.args...); code != exitBadInput || errOut == "" {
			t.Errorf("%v: status %d, stderr %q; want 3 with a message", tc.args, code, errOut)
		}
	}
}

// TestTrustAPIServer: objects from a Source marked TrustAPIServer are not validated again by the
// snapshot; the same objects from a Source that is not are refused as bad input.
func TestTrustAPIServer(t *testing.T) {
	const cluster = `
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: s}
spec:
  driver: Not_A_Driver
  nodeName: node-a
  pool: {name: node-a, resourceSliceCount: 1}
  devices: [{name: gpu-0}]
`
	for _, trust := range []bool{false, true} {
		opts := Options{
			TrustAPIServer: trust,
			Source: func(_ context.Context, opts manifest.Options, _ func(string)) (*manifest.Objects, error) {
				return manifest.Decode(strings.NewReader(cluster), "cluster", opts)
			},
		}
		var out, errOut bytes.Buffer
		code := opts.Run([]string{"inventory"}, nil, &out, &errOut)
		if want := map[bool]int{false: exitBadInput, true: exitOK}[trust]; code != want {
			t.Errorf("TrustAPIServer %v: status %d, want %d; stderr %s", trust, code, want, errOut.String())
		}
	}
}
