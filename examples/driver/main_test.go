package main

import (
	"bytes"
	"strings"
	"testing"
)

// The walk-through on the H100 mock: 8 GPUs of 29 devices (whole GPU and 28
// placements) after the counter slice; the XID taints the fourth GPU's 29
// devices and the event for an unknown GPU is reported, not dropped; the
// claim's device gets the class's configuration before the claim's; the pod
// waits for the Ready condition and binds once the driver reports it.
func TestDriverWalkThrough(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run([]string{"--mock", "dgxh100"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"publish: 9 slices, 232 devices, 8 counter sets",
		"health: ignored: unknown device: XID 79 on GPU GPU-00000000-0000-0000-0000-000000000000: no GPU of the node has this UUID",
		"health: 29 devices of gpu-3 tainted gpu.nvidia.com/xid=48:NoSchedule",
		`prepare: gpu-0-mig-1g10gb-0-0 with FromClass {"apiVersion":"resource.nvidia.com/v1beta1","kind":"MigDeviceConfig"}, then FromClaim {"apiVersion":"resource.nvidia.com/v1beta1","kind":"MigDeviceConfig","sharing":{"strategy":"TimeSlicing"}}`,
		"prepare: NVIDIA's driver applies MigDeviceConfig TimeSlicing from FromClaim",
		"binding: Wait (device gpu.nvidia.com/dgx-1/gpu-0-mig-1g10gb-0-0: no status reported yet)",
		"binding: Bind",
	}
	if got := strings.Split(strings.TrimSpace(out.String()), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), strings.Join(want, "\n"))
	}
}

// With NVIDIA's --consumable-shares=4 the devices are published shareable:
// memory in 1Mi steps and 4 shares.
func TestDriverPublishesConsumableShares(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run([]string{"--mock", "dgxh100", "--consumable-shares", "4"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if want := "publish: gpu-0 shareable, memory 80Gi in steps of 1Mi, 4 shares\n"; !strings.Contains(out.String(), want) {
		t.Errorf("output:\n%s\nwant a line %q", out.String(), want)
	}
}

func TestDriverRejectsAnUnknownMock(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run([]string{"--mock", "dgx-nope"}, &out, &errOut); err == nil || !strings.Contains(err.Error(), "unknown mock server") {
		t.Errorf("err = %v", err)
	}
}

func TestDriverHelpExitsZero(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run([]string{"--help"}, &out, &errOut); err != nil || out.Len() != 0 {
		t.Errorf("--help: err %v, stdout %q", err, out.String())
	}
}
