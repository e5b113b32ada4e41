package cli

import (
	"encoding/json"
	"testing"
)

// The expected outputs follow from the comment at the top of testdata/capacity/cluster.yaml; web
// asks for nothing but a pod slot, so each node takes its 110 pods.
func TestCapacity(t *testing.T) {
	code, out, errOut := dractl(t, "", "capacity", "-f", "testdata/capacity", "--color", "never")
	if code != exitOK {
		t.Fatalf("exit status %d, stderr %s", code, errOut)
	}
	want := `pod default/train: 2 more copies fit (the next one fits nowhere)
  node-a: 2
  2 node(s) (node-a, node-b): cannot allocate all claims
pod default/infer: 5 more copies fit (the next one fits nowhere)
  node-a: 4
  node-b: 1
  2 node(s) (node-a, node-b): cannot allocate all claims
pod default/web: 220 more copies fit (the next one fits nowhere)
  node-a: 110
  node-b: 110
  2 node(s) (node-a, node-b): Too many pods

fragmentation for the mix default/train 0.50, default/infer 0.50: free 5.00, F(M) 0.50, stranded 0.00 devices
NODE    FREE  F(M)  STRANDED
node-a  4.00  0.00  0.00
node-b  1.00  0.50  0.00
not in the mix: default/web: asks for no devices
`
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

// --pod counts one shape, --max stops it, --mix weighs the mix: train alone strands node-b's GPU.
func TestCapacityPodMaxMix(t *testing.T) {
	code, out, errOut := dractl(t, "", "capacity", "-f", "testdata/capacity", "-o", "json", "--pod", "default/infer", "--max", "3", "--mix", "default/train=1")
	if code != exitOK {
		t.Fatalf("exit status %d, stderr %s", code, errOut)
	}
	var rep capacityReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rep.Pods) != 1 || rep.Pods[0].Pod != "default/infer" || rep.Pods[0].Copies != 3 || rep.Pods[0].Stop != "ReachedMax" ||
		len(rep.Pods[0].Nodes) != 1 || rep.Pods[0].Nodes[0] != (nodeCopies{Node: "node-a", Copies: 3}) || rep.Pods[0].Limits != nil {
		t.Errorf("pods: %+v", rep.Pods)
	}
	fr := rep.Fragmentation
	if fr == nil || len(fr.Mix) != 1 || fr.Mix[0] != (mixWeight{Pod: "default/train", Weight: 1}) || fr.Free != 5 || fr.F != 1 || fr.Stranded != 1 ||
		len(fr.Nodes) != 2 || fr.Nodes[1] != (nodeFrag{Node: "node-b", Free: 1, F: 1, Stranded: 1}) {
		t.Errorf("fragmentation: %+v", fr)
	}
}

// A shape of which no copy fits is exit status 1; --explain says which request and which claims.
func TestCapacityNoneFits(t *testing.T) {
	const huge = `
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: five-gpus, namespace: default}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu, count: 5}
---
apiVersion: v1
kind: Pod
metadata: {name: huge, namespace: default}
spec:
  containers: [{name: main, image: huge}]
  resourceClaims: [{name: gpu, resourceClaimTemplateName: five-gpus}]
`
	code, out, errOut := dractl(t, huge, "capacity", "-f", "testdata/capacity", "-f", "-", "--pod", "default/huge", "--explain", "--color", "never")
	if code != exitNotFit {
		t.Fatalf("exit status %d, stderr %s", code, errOut)
	}
	// node-b has 1 GPU free, node-a 4; in the mix (train, infer, huge, a third each) huge fits nowhere
	// (F_n(huge) is the node's free GPUs), train not on node-b: node-a 4/3, node-b 2/3.
	want := `pod default/huge: no more copies fit (the next one fits nowhere)
  2 node(s) (node-a, node-b): claim default/huge-headroom-1-gpu-bbbbf, request "gpu": needs 5 devices, the nodes have at most 4 matching

fragmentation for the mix default/train 0.33, default/infer 0.33, default/huge 0.33: free 5.00, F(M) 2.00, stranded 0.00 devices
NODE    FREE  F(M)  STRANDED
node-a  4.00  1.33  0.00
node-b  1.00  0.67  0.00
not in the mix: default/web: asks for no devices
`
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

func TestCapacityBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--pod", "default/nope"}, "dractl capacity: --pod default/nope: no such pod in the input\n"},
		{[]string{"--max", "0"}, "dractl capacity: --max 0: must be positive\n"},
		{[]string{"--mix", "default/train"}, "dractl capacity: --mix \"default/train\": must be NAMESPACE/NAME=WEIGHT\n"},
		{[]string{"--mix", "default/train=-1"}, "dractl capacity: --mix \"default/train=-1\": weight must be a positive number\n"},
		{[]string{"--mix", "default/train=1,default/train=2"}, "dractl capacity: --mix \"default/train=2\": default/train given twice\n"},
		{[]string{"--mix", "default/web=1"}, "dractl capacity: --mix default/web: asks for no devices\n"},
		{[]string{"--mix", "default/nope=1"}, "dractl capacity: --mix default/nope: no such pod in the input\n"},
	} {
		code, _, errOut := dractl(t, "", append([]string{"capacity", "-f", "testdata/capacity"}, tc.args...)...)
		if code != exitBadInput || errOut != tc.want {
			t.Errorf("%v: exit status %d, stderr %q, want %q", tc.args, code, errOut, tc.want)
		}
	}
}
