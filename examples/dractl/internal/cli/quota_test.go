package cli

import (
	"strings"
	"testing"
)

// quotaInput is a ResourceQuota of two GPUs of class gpu.example.com for namespace team-a and three
// pending pods of team-a asking for one GPU each, for the demo cluster's node of eight GPUs.
const quotaInput = `apiVersion: v1
kind: ResourceQuota
metadata: {name: gpus, namespace: team-a}
spec:
  hard:
    gpu.example.com.deviceclass.resource.k8s.io/devices: "2"
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: team-a}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.example.com}
---
apiVersion: v1
kind: Pod
metadata: {name: job-0, namespace: team-a}
spec:
  containers: [{name: main, image: job}]
  resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]
---
apiVersion: v1
kind: Pod
metadata: {name: job-1, namespace: team-a}
spec:
  containers: [{name: main, image: job}]
  resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]
---
apiVersion: v1
kind: Pod
metadata: {name: job-2, namespace: team-a}
spec:
  containers: [{name: main, image: job}]
  resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]
`

// TestPlaceEnforceQuota: with --enforce-quota the third pod of team-a fits nowhere, for the quota,
// named with what the namespace holds and asks; without it every pod fits.
func TestPlaceEnforceQuota(t *testing.T) {
	code, out, _ := dractl(t, quotaInput, "place", "-f", demo+"/cluster.yaml", "-f", "-", "-o", "text", "--enforce-quota")
	want := "Pod team-a/job-2 cannot be scheduled: does not fit on the only node\n" +
		"  node dra-example-driver-cluster-worker: quota owner team-a, DeviceClass gpu.example.com, devices ≤ 2: holds 2, asks for 1 more\n"
	if code != exitNotFit || !strings.Contains(out, want) || strings.Count(out, " goes to node ") != 2 {
		t.Errorf("--enforce-quota: exit %d, stdout:\n%s\nwant two pods placed and:\n%s", code, out, want)
	}
	code, out, _ = dractl(t, quotaInput, "place", "-f", demo+"/cluster.yaml", "-f", "-", "-o", "text")
	if code != exitOK || strings.Count(out, " goes to node ") != 3 {
		t.Errorf("without --enforce-quota: exit %d, stdout:\n%s\nwant three pods placed", code, out)
	}
}
