package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"sigs.k8s.io/yaml"
)

const (
	reasons = "testdata/reasons"
	demo    = "testdata/demo"
)

// dractl runs the command in-process.
func dractl(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

// The expected outputs below are written from the test clusters (see testdata/README.md and the
// comment at the top of testdata/reasons/cluster.yaml), not copied from a run.

func TestExplainEveryPendingPod(t *testing.T) {
	const (
		classGPU     = "DeviceClass gpu.example.com spec.selectors[0] (device.driver == 'gpu.example.com')"
		classH100    = "DeviceClass gpu-h100 spec.selectors[0] (device.driver == 'gpu.example.com' && device.attributes['gpu.example.com'].model == 'H100')"
		classNVIDIA  = "DeviceClass gpu.nvidia.com spec.selectors[0] (device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu')"
		selector     = "spec.devices.requests[0].exactly.selectors[0]"
		allocated    = "1 allocated to ResourceClaim default/train"
		taintedA1    = "1 tainted example.com/maintenance:NoSchedule by DeviceTaintRule gpu-a1-maintenance"
		nodeSelector = "node(s) didn't match Pod's node affinity/selector"
		extended     = "Insufficient example.com/gpu" // NodeResourcesFit, word for word
	)
	req := func(claim string) string { return "claim default/" + claim + `, request "gpu": ` }
	// node-a and node-c have 2 gpu.example.com devices, node-b 3 gpu.nvidia.com devices.
	tests := []struct {
		name                string
		pod                 string
		nodeA, nodeB, nodeC string
	}{
		{"a class whose selector accepts no device", "class-false",
			req("class-false") + "needs 1 device, 0 of 2 are candidates: 2 rejected by " + classH100,
			req("class-false") + "needs 1 device, 0 of 3 are candidates: 3 rejected by " + classH100,
			req("class-false") + "needs 1 device, 0 of 2 are candidates: 2 rejected by " + classH100},
		{"a request selector that accepts no device", "selector-false",
			req("selector-false") + "needs 1 device, 0 of 2 are candidates: 2 rejected by ResourceClaim default/selector-false " + selector + " (device.capacity['gpu.example.com'].memory.compareTo(quantity('100Gi')) >= 0)",
			req("selector-false") + "needs 1 device, 0 of 3 are candidates: 3 rejected by " + classGPU,
			req("selector-false") + "needs 1 device, 0 of 2 are candidates: 2 rejected by ResourceClaim default/selector-false " + selector + " (device.capacity['gpu.example.com'].memory.compareTo(quantity('100Gi')) >= 0)"},
		{"the one device the request accepts is another claim's", "in-use",
			req("in-use") + "needs 1 device, 0 of 2 are candidates: 1 rejected by ResourceClaim default/in-use " + selector + " (device.attributes['gpu.example.com'].uuid == 'gpu-a0'), " + allocated,
			req("in-use") + "needs 1 device, 0 of 3 are candidates: 3 rejected by " + classGPU,
			req("in-use") + "needs 1 device, 0 of 2 are candidates: 2 rejected by ResourceClaim default/in-use " + selector + " (device.attributes['gpu.example.com'].uuid == 'gpu-a0')"},
		{"the one device the request accepts is tainted NoSchedule by a DeviceTaintRule", "tainted",
			req("tainted") + "needs 1 device, 0 of 2 are candidates: 1 rejected by ResourceClaim default/tainted " + selector + " (device.attributes['gpu.example.com'].uuid == 'gpu-a1'), " + taintedA1,
			req("tainted") + "needs 1 device, 0 of 3 are candidates: 3 rejected by " + classGPU,
			req("tainted") + "needs 1 device, 0 of 2 are candidates: 2 rejected by ResourceClaim default/tainted " + selector + " (device.attributes['gpu.example.com'].uuid == 'gpu-a1')"},
		{"three devices wanted where at most two are free", "too-few",
			req("too-few") + "needs 3 devices, 0 of 2 are candidates: " + allocated + ", " + taintedA1,
			req("too-few") + "needs 3 devices, 0 of 3 are candidates: 3 rejected by " + classGPU,
			req("too-few") + "needs 3 devices, 2 of 2 are candidates"},
		{"two devices of one model where the two free ones differ", "constraint",
			req("constraint") + "needs 2 devices, 0 of 2 are candidates: " + allocated + ", " + taintedA1,
			req("constraint") + "needs 2 devices, 0 of 3 are candidates: 3 rejected by " + classGPU,
			req("constraint") + `constraint spec.devices.constraints[0].matchAttribute on gpu.example.com/model: at most 1 of the 2 devices needed together (candidates by value: "LATEST-GPU-MODEL": 1, "OLDER-GPU-MODEL": 1)`},
		{"the whole MIG-partitioned GPU needs the memory counter a MIG device holds half of", "counters",
			req("whole-gpu") + "needs 1 device, 0 of 2 are candidates: 2 rejected by " + classNVIDIA,
			req("whole-gpu") + "needs 1 device, 0 of 3 are candidates: 2 rejected by " + classNVIDIA + ", 1 short of counter gpu-0-counters/memory: need 80Gi, 40Gi left",
			req("whole-gpu") + "needs 1 device, 0 of 2 are candidates: 2 rejected by " + classNVIDIA},
		{"a node selector no node matches", "node-selector", nodeSelector, nodeSelector, nodeSelector},
		{"an extended resource that no node and no class offers", "extended", extended, extended, extended},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := dractl(t, "", "explain", "-f", reasons, "--pod", "default/"+tt.pod)
			// Nodes with the same reason share a line, in the order of the first of them.
			var lines string
			switch {
			case tt.nodeA == tt.nodeB && tt.nodeB == tt.nodeC:
				lines = "  nodes node-a, node-b, node-c: " + tt.nodeA + "\n"
			case tt.nodeA == tt.nodeC:
				lines = "  nodes node-a, node-c: " + tt.nodeA + "\n  node node-b: " + tt.nodeB + "\n"
			default:
				lines = "  node node-a: " + tt.nodeA + "\n  node node-b: " + tt.nodeB + "\n  node node-c: " + tt.nodeC + "\n"
			}
			want := "Pod default/" + tt.pod + " cannot be scheduled\n" + lines
			if code != exitNotFit || out != want || errOut != "" {
				t.Errorf("exit %d, stdout:\n%s\nstderr: %s\nwant exit 1, stdout:\n%s", code, out, errOut, want)
			}
		})
	}
	t.Run("a pod that fits gets the first free device of the first node where it fits", func(t *testing.T) {
		code, out, _ := dractl(t, "", "explain", "-f", reasons, "--pod", "default/fits")
		want := "Pod default/fits fits on node node-c\n  ResourceClaim default/fits (pod claim gpu):\n    request gpu: device gpu-0 (driver gpu.example.com, pool node-c)\n"
		if code != exitOK || out != want {
			t.Errorf("exit %d, stdout:\n%s\nwant exit 0, stdout:\n%s", code, out, want)
		}
	})

	t.Run("every pending pod, each on its own: fits and fits-too both get node-c gpu-0", func(t *testing.T) {
		code, out, _ := dractl(t, "", "explain", "-f", reasons)
		if code != exitNotFit {
			t.Errorf("exit %d, want %d", code, exitNotFit)
		}
		if n := strings.Count(out, "cannot be scheduled\n"); n != 10 { // 9 pods and the summary
			t.Errorf("%d lines end in cannot be scheduled, want 9 pods and the summary:\n%s", n, out)
		}
		wantEnd := "Pod default/fits-too fits on node node-c\n  ResourceClaim default/fits-too (pod claim gpu):\n    request gpu: device gpu-0 (driver gpu.example.com, pool node-c)\n" +
			"\n2 of 11 pending pods fit, 9 cannot be scheduled\n"
		if !strings.HasSuffix(out, wantEnd) {
			t.Errorf("output ends:\n%s\nwant it to end:\n%s", out[max(0, len(out)-len(wantEnd)-50):], wantEnd)
		}
	})
}

func TestExplainClaim(t *testing.T) {
	tests := []struct {
		name, claim string
		code        int
		want        string
	}{
		{"an allocated claim names its devices and pods", "default/train", exitOK,
			"ResourceClaim default/train is allocated\n  used by pods default/trainer\n  request gpu: device gpu-0 (driver gpu.example.com, pool node-a)\n"},
		{"a claim that fits names the first node by name", "default/fits", exitOK,
			"ResourceClaim default/fits can be allocated on node node-c (the first node, by name, where it fits)\n  request gpu: device gpu-0 (driver gpu.example.com, pool node-c)\n"},
		{"a claim that fits nowhere has the reasons per node", "default/too-few", exitNotFit,
			"ResourceClaim default/too-few cannot be allocated on any node\n" +
				"  node node-a: claim default/too-few, request \"gpu\": needs 3 devices, 0 of 2 are candidates: 1 allocated to ResourceClaim default/train, 1 tainted example.com/maintenance:NoSchedule by DeviceTaintRule gpu-a1-maintenance\n" +
				"  node node-b: claim default/too-few, request \"gpu\": needs 3 devices, 0 of 3 are candidates: 3 rejected by DeviceClass gpu.example.com spec.selectors[0] (device.driver == 'gpu.example.com')\n" +
				"  node node-c: claim default/too-few, request \"gpu\": needs 3 devices, 2 of 2 are candidates\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := dractl(t, "", "explain", "-f", reasons, "--claim", tt.claim)
			if code != tt.code || out != tt.want {
				t.Errorf("exit %d, stdout:\n%s\nstderr: %s\nwant exit %d, stdout:\n%s", code, out, errOut, tt.code, tt.want)
			}
		})
	}
}

func TestPlaceInOrder(t *testing.T) {
	code, out, _ := dractl(t, "", "place", "-f", reasons, "-o", "text")
	if code != exitNotFit {
		t.Errorf("exit %d, want %d", code, exitNotFit)
	}
	// fits takes node-c gpu-0 first; fits-too, decided after it, gets gpu-1 (of another model, which
	// its class accepts).
	want := "Pod default/fits goes to node node-c\n" +
		"  ResourceClaim default/fits (pod claim gpu):\n" +
		"    request gpu: device gpu-0 (driver gpu.example.com, pool node-c)\n" +
		"Pod default/fits-too goes to node node-c\n" +
		"  ResourceClaim default/fits-too (pod claim gpu):\n" +
		"    request gpu: device gpu-1 (driver gpu.example.com, pool node-c)\n"
	if !strings.HasSuffix(out, want) {
		t.Errorf("stdout:\n%s\nwant it to end with:\n%s", out, want)
	}
	for _, pod := range []string{"class-false", "selector-false", "in-use", "tainted", "too-few", "constraint", "counters", "node-selector", "extended"} {
		line := "Pod default/" + pod + " cannot be scheduled: fits on none of the 3 nodes\n  node"
		if !strings.Contains(out, line) {
			t.Errorf("stdout lacks %q", line)
		}
	}
}

func TestPlaceYAMLIsClaimsAsTheSchedulerWritesThem(t *testing.T) {
	code, out, errOut := dractl(t, "", "place", "-f", demo) // YAML is place's default
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	var list struct {
		APIVersion string                      `json:"apiVersion"`
		Kind       string                      `json:"kind"`
		Items      []resourceapi.ResourceClaim `json:"items"`
	}
	if err := yaml.UnmarshalStrict([]byte(out), &list); err != nil {
		t.Fatalf("output is not a List of ResourceClaims: %v\n%s", err, out)
	}
	// The demo's three pods each get a claim from their template, named by the resourceclaim
	// controller's rule <pod>-<entry>-<suffix>, and the first free GPUs in order.
	// The template pods each get a claim named by the resourceclaim controller's rule
	// <pod>-<entry>-<suffix>; the first free GPUs go in order; the shared claim is allocated for
	// its first pod and reserved for both.
	want := []struct {
		ns, name, device string
		pods             []string
	}{
		{"basic-resourceclaimtemplate", "pod0-gpu-bbbbc", "gpu-0", []string{"pod0"}},
		{"basic-resourceclaimtemplate", "pod1-gpu-bbbbd", "gpu-1", []string{"pod1"}},
		{"basic-shared-claim-across-pods", "single-gpu", "gpu-2", []string{"pod0", "pod1"}},
		{"cel-selector", "pod0-gpu-bbbbf", "gpu-3", []string{"pod0"}},
	}
	if list.APIVersion != "v1" || list.Kind != "List" || len(list.Items) != len(want) {
		t.Fatalf("kind %s with %d items, want List with %d:\n%s", list.Kind, len(list.Items), len(want), out)
	}
	for i, w := range want {
		c := list.Items[i]
		a := c.Status.Allocation
		var reserved []string
		for _, r := range c.Status.ReservedFor {
			reserved = append(reserved, r.Name)
		}
		if c.Namespace != w.ns || c.Name != w.name || a == nil || len(a.Devices.Results) != 1 ||
			a.Devices.Results[0].Device != w.device || a.Devices.Results[0].Pool != "dra-example-driver-cluster-worker" ||
			strings.Join(reserved, ",") != strings.Join(w.pods, ",") ||
			len(c.Finalizers) != 1 || c.Finalizers[0] != "resource.kubernetes.io/delete-protection" {
			t.Errorf("item %d: %s/%s allocation %+v reservedFor %v finalizers %v; want %s/%s with %s reserved for %v",
				i, c.Namespace, c.Name, a, reserved, c.Finalizers, w.ns, w.name, w.device, w.pods)
		}
	}
}

func TestPlaceSharedClaim(t *testing.T) {
	code, out, _ := dractl(t, "", "place", "-f", demo, "-o", "text")
	want := "Pod basic-shared-claim-across-pods/pod0 goes to node dra-example-driver-cluster-worker\n" +
		"  ResourceClaim basic-shared-claim-across-pods/single-gpu (pod claim shared-gpu):\n" +
		"    request gpu: device gpu-2 (driver gpu.example.com, pool dra-example-driver-cluster-worker)\n" +
		"Pod basic-shared-claim-across-pods/pod1 goes to node dra-example-driver-cluster-worker\n" +
		"  ResourceClaim basic-shared-claim-across-pods/single-gpu (pod claim shared-gpu, already allocated, shared):\n" +
		"    request gpu: device gpu-2 (driver gpu.example.com, pool dra-example-driver-cluster-worker)\n"
	if code != exitOK || !strings.Contains(out, want) {
		t.Errorf("exit %d, stdout:\n%s\nwant exit 0 and:\n%s", code, out, want)
	}
}

func TestLintMissingClass(t *testing.T) {
	in := `apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: t
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: nope
`
	code, out, _ := dractl(t, in, "lint", "-f", "-")
	want := "ResourceClaimTemplate default/t: spec.spec.devices.requests[0].exactly.deviceClassName: nope\n  - DeviceClass nope is not in the input\n0 selectors checked against 0 devices, 1 with problems\n"
	if code != exitNotFit || out != want {
		t.Errorf("exit %d, stdout:\n%s\nwant exit 1, stdout:\n%s", code, out, want)
	}
}

func TestPlaceYAMLNamesUnplacedPodsOnStderr(t *testing.T) {
	code, out, errOut := dractl(t, "", "place", "-f", reasons, "-o", "json")
	var list struct {
		Items []resourceapi.ResourceClaim `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	if code != exitNotFit || len(list.Items) != 2 || list.Items[0].Name != "fits" || list.Items[1].Name != "fits-too" {
		t.Errorf("exit %d, %d claims; want 1 and the claims fits and fits-too:\n%s", code, len(list.Items), out)
	}
	if n := strings.Count(errOut, " cannot be scheduled: "); n != 9 {
		t.Errorf("stderr names %d pods, want 9:\n%s", n, errOut)
	}
}

func TestLint(t *testing.T) {
	code, out, _ := dractl(t, "", "lint", "-f", reasons)
	if code != exitNotFit {
		t.Errorf("exit %d, want %d", code, exitNotFit)
	}
	// Four class selectors on the 7 devices, four request selectors on the 4 devices of class
	// gpu.example.com; gpu-h100 and selector-false match nothing, typo names an attribute no device has.
	for _, want := range []string{
		"DeviceClass gpu-h100: spec.selectors[0].cel.expression: device.driver == 'gpu.example.com' && device.attributes['gpu.example.com'].model == 'H100'\n  - matches none of the 7 devices\n",
		"ResourceClaim default/selector-false: spec.devices.requests[0].exactly.selectors[0].cel.expression: device.capacity['gpu.example.com'].memory.compareTo(quantity('100Gi')) >= 0\n  - matches none of the 4 devices\n",
		"ResourceClaim default/typo: spec.devices.requests[0].exactly.selectors[0].cel.expression: device.attributes['gpu.example.com'].modle == 'LATEST-GPU-MODEL'\n  - attribute gpu.example.com/modle is not published by any of the 4 devices (did you mean gpu.example.com/model?)",
		"  - fails on 4 of the 4 devices (first: gpu.example.com/node-a/gpu-0: ",
		"8 selectors checked against 7 devices, 3 with problems\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks:\n%s\nstdout:\n%s", want, out)
		}
	}
	code, out, _ = dractl(t, "", "lint", "-f", demo)
	if code != exitOK || out != "3 selectors checked against 8 devices, 0 with problems\n" {
		t.Errorf("demo: exit %d, stdout %q; want 0 and no problem in the class and the two cel-selector selectors", code, out)
	}
}

func TestTaints(t *testing.T) {
	code, out, _ := dractl(t, "", "taints", "-f", reasons, "--now", "2026-12-01T10:05:00Z")
	// mig-ecc-errors was added at 10:00 and inference-mig tolerates it for 600s: its pod goes at 10:10.
	want := "DeviceTaintRule gpu-a1-maintenance puts taint example.com/maintenance=planned:NoSchedule on 1 device\n" +
		"  gpu.example.com/node-a/gpu-1\n" +
		"  Effect NoSchedule evicts nothing; new claims that do not tolerate it cannot get these devices.\n" +
		"  With effect NoExecute it would evict no pod either.\n" +
		"\n" +
		"DeviceTaintRule mig-ecc-errors puts taint example.com/ecc=uncorrectable:NoExecute on 1 device\n" +
		"  gpu.nvidia.com/node-b/gpu-0-mig-3g-40gb-0\n" +
		"  ResourceClaim default/inference-mig (device gpu.nvidia.com/node-b/gpu-0-mig-3g-40gb-0): pods default/inference evicted at 2026-12-01T10:10:00Z\n"
	if code != exitOK || out != want {
		t.Errorf("exit %d, stdout:\n%s\nwant:\n%s", code, out, want)
	}
	code, out, _ = dractl(t, "", "taints", "-f", reasons, "--rule", "mig-ecc-errors", "--now", "2026-12-01T10:10:00Z", "-o", "json")
	var rep struct {
		Rules []ruleReport `json:"rules"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exitOK {
		t.Fatalf("exit %d, %v:\n%s", code, err, out)
	}
	if len(rep.Rules) != 1 || len(rep.Rules[0].Evictions) != 1 || !rep.Rules[0].Evictions[0].Due {
		t.Errorf("at 10:10 the eviction of inference-mig is due: %+v", rep.Rules)
	}
}

func TestTaintsWhatNoExecuteWouldEvict(t *testing.T) {
	// A NoSchedule rule on node-a gpu-0, which claim train (no tolerations) of pod trainer holds.
	rule := `apiVersion: resource.k8s.io/v1
kind: DeviceTaintRule
metadata:
  name: drain-a0
spec:
  deviceSelector:
    driver: gpu.example.com
    pool: node-a
    device: gpu-0
  taint:
    key: example.com/drain
    effect: NoSchedule
    timeAdded: "2026-12-01T09:30:00Z"
`
	code, out, _ := dractl(t, rule, "taints", "-f", reasons, "-f", "-", "--rule", "drain-a0", "--now", "2026-12-01T10:05:00Z")
	want := "DeviceTaintRule drain-a0 puts taint example.com/drain:NoSchedule on 1 device\n" +
		"  gpu.example.com/node-a/gpu-0\n" +
		"  Effect NoSchedule evicts nothing; new claims that do not tolerate it cannot get these devices.\n" +
		"  With effect NoExecute it would evict:\n" +
		"    ResourceClaim default/train (device gpu.example.com/node-a/gpu-0): pods default/trainer evicted now\n"
	if code != exitOK || out != want {
		t.Errorf("exit %d, stdout:\n%s\nwant:\n%s", code, out, want)
	}
}

func TestInventory(t *testing.T) {
	code, out, _ := dractl(t, "", "inventory", "-f", reasons)
	want := `node node-a
  driver gpu.example.com, pool node-a
    gpu-0: class gpu.example.com; used by claim default/train (pods default/trainer)
    gpu-1: class gpu.example.com; not in use, tainted example.com/maintenance=planned:NoSchedule (by DeviceTaintRule gpu-a1-maintenance)
node node-b
  driver gpu.nvidia.com, pool node-b
    gpu-0: class gpu.nvidia.com; not in use, but cannot be allocated now: it needs 80Gi of memory in counter set gpu-0-counters, and 40Gi of 80Gi are left
    gpu-0-mig-3g-40gb-0: class mig.nvidia.com; used by claim default/inference-mig (pods default/inference), tainted example.com/ecc=uncorrectable:NoExecute (by DeviceTaintRule mig-ecc-errors)
    gpu-0-mig-3g-40gb-1: class mig.nvidia.com; free
node node-c
  driver gpu.example.com, pool node-c
    gpu-0: class gpu.example.com; free
    gpu-1: class gpu.example.com; free

Per DeviceClass:
  gpu-h100: 0 devices, 0 free, 0 used, 0 tainted
  gpu.example.com: 4 devices, 2 free, 1 used, 1 tainted
  gpu.nvidia.com: 1 device, 0 free, 0 used, 0 tainted
  mig.nvidia.com: 2 devices, 1 free, 1 used, 1 tainted
`
	if code != exitOK || out != want {
		t.Errorf("exit %d, stdout:\n%s\nwant:\n%s", code, out, want)
	}
}

func TestDemoAllFit(t *testing.T) {
	code, out, _ := dractl(t, "", "explain", "-f", demo)
	// Each pod is explained on its own against the empty node, so each would get gpu-0; the
	// cel-selector pod's selectors (model LATEST-GPU-MODEL, memory >= 4Gi) accept every GPU.
	want := ""
	for i, p := range []struct{ pod, claim, notes string }{
		{"basic-resourceclaimtemplate/pod0", "basic-resourceclaimtemplate/pod0-gpu-bbbbc", "pod claim gpu, to be created"},
		{"basic-resourceclaimtemplate/pod1", "basic-resourceclaimtemplate/pod1-gpu-bbbbd", "pod claim gpu, to be created"},
		{"basic-shared-claim-across-pods/pod0", "basic-shared-claim-across-pods/single-gpu", "pod claim shared-gpu"},
		{"basic-shared-claim-across-pods/pod1", "basic-shared-claim-across-pods/single-gpu", "pod claim shared-gpu"},
		{"cel-selector/pod0", "cel-selector/pod0-gpu-bbbbf", "pod claim gpu, to be created"},
	} {
		if i > 0 {
			want += "\n"
		}
		want += "Pod " + p.pod + " fits on node dra-example-driver-cluster-worker\n" +
			"  ResourceClaim " + p.claim + " (" + p.notes + "):\n" +
			"    request gpu: device gpu-0 (driver gpu.example.com, pool dra-example-driver-cluster-worker)\n"
	}
	want += "\n5 of 5 pending pods fit, 0 cannot be scheduled\n"
	if code != exitOK || out != want {
		t.Errorf("exit %d, stdout:\n%s\nwant:\n%s", code, out, want)
	}
}

func TestStdinAndUsage(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		stdin   string
		code    int
		wantOut string // substring of stdout
		wantErr string // substring of stderr
	}{
		{"--help lists the commands", []string{"--help"}, "", exitOK, "Commands:\n  explain", ""},
		{"a command's --help has examples", []string{"explain", "--help"}, "", exitOK, "Examples:\n", ""},
		{"place --help", []string{"place", "--help"}, "", exitOK, "Examples:\n", ""},
		{"lint --help", []string{"lint", "-h"}, "", exitOK, "Examples:\n", ""},
		{"taints --help", []string{"taints", "--help"}, "", exitOK, "--rule", ""},
		{"inventory --help", []string{"inventory", "--help"}, "", exitOK, "Examples:\n", ""},
		{"no command", nil, "", exitBadInput, "", "Usage: dractl <command>"},
		{"an unknown flag is named on stderr", []string{"lint", "--frob"}, "", exitBadInput, "", "flag provided but not defined: -frob\n"},
		{"unknown command", []string{"frobnicate"}, "", exitBadInput, "", `unknown command "frobnicate"`},
		{"no input", []string{"explain"}, "", exitBadInput, "", "no input"},
		{"bad -o", []string{"lint", "-f", demo, "-o", "xml"}, "", exitBadInput, "", "-o xml: must be text, yaml or json"},
		{"bad --color", []string{"lint", "-f", demo, "--color", "sometimes"}, "", exitBadInput, "", "--color sometimes"},
		{"unknown pod", []string{"explain", "-f", reasons, "--pod", "default/nope"}, "", exitBadInput, "", "--pod default/nope: no such pod"},
		{"a running pod is not pending", []string{"explain", "-f", reasons, "--pod", "default/trainer"}, "", exitBadInput, "", "runs on node node-a"},
		{"unknown rule", []string{"taints", "-f", reasons, "--rule", "nope"}, "", exitBadInput, "", "--rule nope: no such DeviceTaintRule"},
		{"stdin, as kubectl pipes it", []string{"explain", "-f", "-"}, nodeAndPod, exitOK, "Pod default/p fits on node n1\n", ""},
		{"an error names file, document and object", []string{"explain", "-f", "-"}, badClaim, exitBadInput, "",
			"dractl explain: -: document 1: ResourceClaim c: spec.devices.requests[0].exactly.cuont: unknown field"},
		{"a slice kube-apiserver would refuse is an error naming it and the field", []string{"inventory", "-f", "-"}, sliceWithCounters, exitBadInput, "",
			"dractl inventory: -: document 1: ResourceSlice s: spec: invalid object: spec: Invalid value: \"\": only one of `sharedCounters` or `devices` is allowed"},
		{"a pod with scheduling gates is not considered", []string{"place", "-f", "-", "-o", "text"}, nodeAndPod + gatedPod, exitNotFit,
			"Pod default/g cannot be scheduled: not considered by the scheduler until its scheduling gates are removed: example.com/quota\n", ""},
		{"a cordoned node takes no pod", []string{"explain", "-f", "-"}, cordoned + "---\n" + nodeAndPod[strings.Index(nodeAndPod, "apiVersion: v1\nkind: Pod"):], exitNotFit,
			"Pod default/p cannot be scheduled\n  node n0: node(s) were unschedulable\n", ""},
		{"a pod that tolerates the unschedulable taint may go to a cordoned node", []string{"explain", "-f", "-"}, cordoned + tolerantPod, exitOK,
			"Pod default/p fits on node n0\n", ""},
		{"a running pod's requests count against the node's allocatable", []string{"explain", "-f", "-"}, smallNode + boundPod + wantsCPU("2"), exitNotFit,
			"Pod default/p cannot be scheduled\n  node n0: Insufficient cpu\n", ""},
		{"a pod fits next to a running one in what is left", []string{"explain", "-f", "-"}, smallNode + boundPod + wantsCPU("1"), exitOK,
			"Pod default/p fits on node n0\n", ""},
		{"colour only when asked for off a terminal", []string{"explain", "-f", "-", "--color", "always"}, nodeAndPod, exitOK, "\x1b[32mfits\x1b[0m", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := dractl(t, tt.stdin, tt.args...)
			if code != tt.code || !strings.Contains(out, tt.wantOut) || !strings.Contains(errOut, tt.wantErr) {
				t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s\nwant exit %d, stdout with %q, stderr with %q", code, out, errOut, tt.code, tt.wantOut, tt.wantErr)
			}
			if tt.wantErr == "" && errOut != "" {
				t.Errorf("stderr %q, want none", errOut)
			}
			if tt.code == exitOK && strings.Contains(out, "\x1b[") != (tt.args[len(tt.args)-1] == "always") {
				t.Errorf("colour codes in output %q", out)
			}
		})
	}
}

const nodeAndPod = `apiVersion: v1
kind: Node
metadata:
  name: n1
status:
  allocatable:
    cpu: "8"
    memory: 32Gi
    ephemeral-storage: 100Gi
    pods: "110"
---
apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  containers:
  - name: c
    image: busybox
`

const badClaim = `apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: c
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
        cuont: 2
`

func TestPodGroupsAllOrNothing(t *testing.T) {
	line := func(pod, group, device string) string {
		return "Pod default/" + pod + " (PodGroup " + group + ") goes to node node-g\n" +
			"  ResourceClaim default/" + pod + " (pod claim gpu):\n" +
			"    request gpu: device " + device + " (driver gpu.example.com, pool node-g)\n"
	}
	// pair takes gpu-0 and gpu-1; trio needs three devices and finds one: kube-scheduler's pass puts t0
	// on gpu-2, finds nothing for t1, and stops with one scheduled and one to come, two short of three.
	want := line("p0", "pair", "gpu-0") + line("p1", "pair", "gpu-1")
	for _, p := range []string{"t0", "t1", "t2"} {
		want += "Pod default/" + p + " (PodGroup trio) cannot be scheduled: its PodGroup is pending: minCount (3) cannot be satisfied: 1 scheduled, 1 remaining\n"
	}
	code, out, _ := dractl(t, "", "place", "-f", "testdata/gang", "-o", "text")
	if code != exitNotFit || out != want {
		t.Errorf("place: exit %d, stdout:\n%s\nwant exit 1, stdout:\n%s", code, out, want)
	}
	// On its own, against three free devices, trio fits: t2 gets the third.
	code, out, _ = dractl(t, "", "explain", "-f", "testdata/gang", "--pod", "default/t2")
	want = "Pod default/t2 (PodGroup trio) fits on node node-g\n  ResourceClaim default/t2 (pod claim gpu):\n    request gpu: device gpu-2 (driver gpu.example.com, pool node-g)\n"
	if code != exitOK || out != want {
		t.Errorf("explain: exit %d, stdout:\n%s\nwant exit 0, stdout:\n%s", code, out, want)
	}
}

const sliceWithCounters = `apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: s
spec:
  driver: gpu.example.com
  nodeName: n1
  pool:
    name: n1
    resourceSliceCount: 1
  sharedCounters:
  - name: c
    counters:
      memory:
        value: 1Gi
  devices:
  - name: d
`

func TestNodeReasonsShareALine(t *testing.T) {
	var nodes []nodeVerdict
	for _, n := range []string{"n1", "n2", "n3", "n4", "n5", "n6", "n7"} {
		nodes = append(nodes, nodeVerdict{Node: n, Reasons: []string{"full"}})
	}
	nodes = append(nodes, nodeVerdict{Node: "n8", Reasons: []string{"tainted", "full"}})
	var out bytes.Buffer
	(&env{stdout: &out}).printNodeReasons(nodes, "8 nodes: full")
	want := "  nodes n1, n2, n3, n4, n5 and 2 more: full\n  node n8: tainted; full\n"
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}

	// Ten different reasons: eight lines, the rest counted, the summary first.
	nodes = nil
	for i := range 10 {
		nodes = append(nodes, nodeVerdict{Node: fmt.Sprintf("n%d", i), Reasons: []string{fmt.Sprintf("reason %d", i)}})
	}
	out.Reset()
	(&env{stdout: &out}).printNodeReasons(nodes, "10 nodes: several")
	want = "  in short: 10 nodes: several\n"
	for i := range 8 {
		want += fmt.Sprintf("  node n%d: reason %d\n", i, i)
	}
	want += "  and 2 more nodes for other reasons (-o yaml lists them all)\n"
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}

const gatedPod = `---
apiVersion: v1
kind: Pod
metadata:
  name: g
spec:
  schedulingGates:
  - name: example.com/quota
  containers:
  - name: c
    image: busybox
`

func TestLintFirstAvailable(t *testing.T) {
	template := func(first, second string) string {
		return `apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: alt
spec:
  spec:
    devices:
      requests:
      - name: gpu
        firstAvailable:
        - name: big
          deviceClassName: gpu.example.com
          selectors:
          - cel:
              expression: "` + first + `"
        - name: any
          deviceClassName: gpu.example.com
          selectors:
          - cel:
              expression: "` + second + `"
`
	}
	const none, all = "device.attributes['gpu.example.com'].index > 100", "device.attributes['gpu.example.com'].index >= 0"
	// An alternative no device serves is fine while another one is served: the demo GPUs have
	// index 0..7.
	code, out, _ := dractl(t, template(none, all), "lint", "-f", demo+"/cluster.yaml", "-f", "-")
	if code != exitOK || out != "3 selectors checked against 8 devices, 0 with problems\n" {
		t.Errorf("one alternative served: exit %d, stdout:\n%s", code, out)
	}
	code, out, _ = dractl(t, template(none, none), "lint", "-f", demo+"/cluster.yaml", "-f", "-")
	if code != exitNotFit || strings.Count(out, "  - matches none of the 8 devices\n") != 2 {
		t.Errorf("no alternative served: exit %d, stdout:\n%s", code, out)
	}
}

func TestLaterObjectReplacesEarlier(t *testing.T) {
	// The second Node of the same name has the label the pod selects: applied in order, it wins.
	in := `apiVersion: v1
kind: Node
metadata:
  name: n1
status:
  allocatable:
    cpu: "8"
    memory: 32Gi
    ephemeral-storage: 100Gi
    pods: "110"
---
apiVersion: v1
kind: Node
metadata:
  name: n1
  labels:
    pool: gpu
status:
  allocatable:
    cpu: "8"
    memory: 32Gi
    ephemeral-storage: 100Gi
    pods: "110"
---
apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  nodeSelector:
    pool: gpu
  containers:
  - name: c
    image: busybox
`
	code, out, errOut := dractl(t, in, "explain", "-f", "-")
	if code != exitOK || out != "Pod default/p fits on node n1\n" ||
		errOut != "dractl: -: document 2: Node n1 replaces the one read at -: document 1, as kubectl apply would\n" {
		t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

func TestExplainJSONSummary(t *testing.T) {
	tests := []struct{ pod, summary string }{
		// On all three nodes the class accepts nothing: one group.
		{"class-false", `3 nodes: claim default/class-false, request "gpu": class gpu-h100 matched no device`},
		// node-a and node-c have no gpu.nvidia.com device; on node-b the one whole GPU lacks counter.
		{"counters", `2 nodes: claim default/whole-gpu, request "gpu": class gpu.nvidia.com matched no device; ` +
			`1 node: claim default/whole-gpu, request "gpu": 1 of 1 matching device short of counter gpu-0-counters/memory: need 80Gi, 40Gi left`},
	}
	for _, tt := range tests {
		code, out, _ := dractl(t, "", "explain", "-f", reasons, "--pod", "default/"+tt.pod, "-o", "json")
		var got struct {
			Pods []podVerdict `json:"pods"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil || code != exitNotFit || len(got.Pods) != 1 {
			t.Fatalf("%s: exit %d, %v:\n%s", tt.pod, code, err, out)
		}
		if v := got.Pods[0]; v.Summary != tt.summary || len(v.Nodes) != 3 || v.Nodes[1].Explanation == nil {
			t.Errorf("%s: summary %q, %d nodes; want %q and the allocator's explanation of each node", tt.pod, v.Summary, len(v.Nodes), tt.summary)
		}
	}
}

const cordoned = `apiVersion: v1
kind: Node
metadata:
  name: n0
spec:
  unschedulable: true
status:
  allocatable:
    cpu: "8"
    memory: 32Gi
    ephemeral-storage: 100Gi
    pods: "110"
`

// smallNode has 4 CPUs, of which the running pod boundPod requests 3.
const smallNode = `apiVersion: v1
kind: Node
metadata:
  name: n0
status:
  allocatable:
    cpu: "4"
    memory: 32Gi
    pods: "110"
`

const boundPod = `---
apiVersion: v1
kind: Pod
metadata:
  name: running
spec:
  nodeName: n0
  containers:
  - name: c
    image: busybox
    resources:
      requests:
        cpu: "3"
status:
  phase: Running
`

// wantsCPU is a pending pod that requests cpu.
func wantsCPU(cpu string) string {
	return `---
apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  containers:
  - name: c
    image: busybox
    resources:
      requests:
        cpu: "` + cpu + `"
`
}

const tolerantPod = `---
apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  tolerations:
  - key: node.kubernetes.io/unschedulable
    operator: Exists
    effect: NoSchedule
  containers:
  - name: c
    image: busybox
`

func TestPlaceTakesHigherPriorityFirst(t *testing.T) {
	in := `apiVersion: v1
kind: Node
metadata:
  name: n1
status:
  allocatable:
    cpu: "8"
    memory: 32Gi
    ephemeral-storage: 100Gi
    pods: "110"
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu
spec:
  selectors:
  - cel:
      expression: "device.driver == 'gpu.example.com'"
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: n1-gpus
spec:
  driver: gpu.example.com
  nodeName: n1
  pool:
    name: n1
    resourceSliceCount: 1
  devices:
  - name: gpu-0
`
	for _, p := range []struct{ name, priority string }{{"low", "0"}, {"high", "1000"}} {
		in += `---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: ` + p.name + `
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu
---
apiVersion: v1
kind: Pod
metadata:
  name: ` + p.name + `
spec:
  priority: ` + p.priority + `
  containers:
  - name: c
    image: busybox
  resourceClaims:
  - name: gpu
    resourceClaimName: ` + p.name + `
`
	}
	// high comes second in the input but first in the scheduling queue: it gets the one GPU.
	code, out, _ := dractl(t, in, "place", "-f", "-", "-o", "text")
	want := "Pod default/high goes to node n1\n" +
		"  ResourceClaim default/high (pod claim gpu):\n" +
		"    request gpu: device gpu-0 (driver gpu.example.com, pool n1)\n" +
		"Pod default/low cannot be scheduled: does not fit on the only node\n" +
		"  node n1: claim default/low, request \"gpu\": needs 1 device, 0 of 1 are candidates: 1 allocated to ResourceClaim default/high\n"
	if code != exitNotFit || out != want {
		t.Errorf("exit %d, stdout:\n%s\nwant exit 1, stdout:\n%s", code, out, want)
	}
}

// tenOnNine is a cluster of nine nodes with one free device each and a PodGroup of ten pods that each
// need one device (minCount 10): it does not fit. Without a budget and pruning, the gang search tried
// every assignment of nine of the pods to the nine nodes and never ended.
func tenOnNine() string {
	var b strings.Builder
	b.WriteString(`apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu.example.com
spec:
  selectors:
  - cel:
      expression: "device.driver == 'gpu.example.com'"
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: one-gpu
  namespace: default
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.example.com
---
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata:
  name: ten
  namespace: default
spec:
  schedulingPolicy:
    gang:
      minCount: 10
`)
	for i := range 9 {
		fmt.Fprintf(&b, `---
apiVersion: v1
kind: Node
metadata:
  name: node-%[1]d
status:
  allocatable:
    cpu: "8"
    memory: 32Gi
    ephemeral-storage: 100Gi
    pods: "110"
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: node-%[1]d-gpu
spec:
  driver: gpu.example.com
  nodeName: node-%[1]d
  pool:
    name: node-%[1]d
    resourceSliceCount: 1
  devices:
  - name: gpu-0
`, i)
	}
	for i := range 10 {
		fmt.Fprintf(&b, `---
apiVersion: v1
kind: Pod
metadata:
  name: w%d
  namespace: default
spec:
  schedulingGroup:
    podGroupName: ten
  containers:
  - name: main
    image: registry.example.com/cuda:12
    resources:
      claims:
      - name: gpu
  resourceClaims:
  - name: gpu
    resourceClaimTemplateName: one-gpu
`, i)
	}
	return b.String()
}

// TestGangSearchIsBounded: ten one-GPU pods of a gang of ten over nine places. place gives kube-scheduler's
// pass: nine pods placed, the tenth on no node, minCount out of reach. explain adds whether any
// placement exists, a search bounded by --gang-budget.
func TestGangSearchIsBounded(t *testing.T) {
	in := tenOnNine()
	reason := "minCount (10) cannot be satisfied: 9 scheduled, 0 remaining"
	var want string
	for i := range 10 {
		want += fmt.Sprintf("Pod default/w%d (PodGroup ten) cannot be scheduled: its PodGroup is pending: %s\n", i, reason)
	}
	code, out, _ := dractl(t, in, "place", "-f", "-", "-o", "text")
	if code != exitNotFit || out != want {
		t.Errorf("place: exit %d, stdout:\n%s\nwant exit 1, stdout:\n%s", code, out, want)
	}
	// Decided: the pruned search counts nine places for ten pods.
	code, out, _ = dractl(t, in, "explain", "-f", "-", "--pod", "default/w3")
	if want := "Pod default/w3 (PodGroup ten) cannot be scheduled\n  its PodGroup default/ten is pending: " + reason + "; no choice of nodes holds its 10 pending pods\n"; code != exitNotFit || out != want {
		t.Errorf("explain: exit %d, stdout:\n%s\nwant exit 1, stdout:\n%s", code, out, want)
	}
	// Out of tries: reported as gave up, not as not fitting.
	code, out, _ = dractl(t, in, "explain", "-f", "-", "--pod", "default/w3", "--gang-budget", "1")
	gaveUp := "gave up: --gang-budget 1 ran out before deciding whether the 10 pending pods of the PodGroup fit together"
	if want := "Pod default/w3 (PodGroup ten) cannot be scheduled\n  its PodGroup default/ten is pending: " + reason + "; " + gaveUp + "\n"; code != exitNotFit || out != want {
		t.Errorf("explain --gang-budget 1: exit %d, stdout:\n%s\nwant exit 1, stdout:\n%s", code, out, want)
	}
	code, _, errOut := dractl(t, in, "explain", "-f", "-", "--gang-budget", "0")
	if want := "dractl explain: --gang-budget 0: must be positive\n"; code != exitBadInput || errOut != want {
		t.Errorf("explain --gang-budget 0: exit %d, stderr %q, want exit 3 (bad usage), %q", code, errOut, want)
	}
}

// TestBadFlagOneLine: a flag that is wrong is named in one line with where to find the flags, as
// kubectl names it, not followed by the help of every flag.
func TestBadFlagOneLine(t *testing.T) {
	code, out, errOut := dractl(t, "", "lint", "--frob")
	const want = "dractl lint: flag provided but not defined: -frob\nSee 'dractl lint --help' for the flags.\n"
	if code != exitBadInput || out != "" || errOut != want {
		t.Errorf("status %d, stdout %q, stderr %q; want 3 and %q", code, out, errOut, want)
	}
}
