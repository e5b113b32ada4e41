package main

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dralloc/dralloc/inventory"
)

func TestChargesAndChargeback(t *testing.T) {
	r, err := quota(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	// research runs two pods of four whole GPUs and a notebook on one 1g.10gb MIG device, and waits
	// for a pod of four more; prod runs one pod of nvidia.com/gpu: 1 (a claim the scheduler generates,
	// charged like any other) and waits for one of two.
	wantDevices := map[string]map[string]int64{
		"research/allocated": {"gpu.nvidia.com": 8, "mig.nvidia.com": 1},
		"research/pending":   {"gpu.nvidia.com": 4},
		"prod/allocated":     {"gpu.nvidia.com": 1},
		"prod/pending":       {"gpu.nvidia.com": 2},
	}
	for key, want := range wantDevices {
		ns, which, _ := strings.Cut(key, "/")
		got := r.quota.Allocated[ns].Devices
		if which == "pending" {
			got = r.quota.Pending[ns].Devices
		}
		if len(got) != len(want) {
			t.Errorf("%s: %v, want %v", key, got, want)
		}
		for class, n := range want {
			if got[class] != n {
				t.Errorf("%s %s: %d devices, want %d", key, class, got[class], n)
			}
		}
	}
	// A whole H100 is charged its whole memory (80Gi), the MIG device its profile's 10Gi.
	mem := func(q resource.Quantity) string { return q.String() }
	if got := mem(r.quota.Allocated["research"].Capacity["gpu.nvidia.com"][inventory.CapMemory]); got != "640Gi" {
		t.Errorf("research whole-GPU memory %s, want 8 x 80Gi", got)
	}
	if got := mem(r.quota.Allocated["research"].Capacity["mig.nvidia.com"][inventory.CapMemory]); got != "10Gi" {
		t.Errorf("research MIG memory %s, want 10Gi", got)
	}
	// research: 8 allocated + 4 pending > 8; prod: 1 + 2 <= 4.
	if !slices.Equal(r.over, []string{"research"}) {
		t.Errorf("over budget: %v", r.over)
	}
	// Owners sorted by namespace and owner; the Job's two pods are billed together.
	var owners []string
	for _, o := range r.bill.Owners {
		owners = append(owners, o.Namespace+"/"+o.Owner)
		if o.Owner == "Job/train" && (o.Pods != 2 || o.Devices != 8) {
			t.Errorf("Job/train: %d pods, %d devices", o.Pods, o.Devices)
		}
	}
	if want := []string{"prod/ReplicaSet/serve-7d9f", "research/Job/train", "research/Pod/notebook"}; !slices.Equal(owners, want) {
		t.Errorf("owners %v, want %v", owners, want)
	}
}

func TestBudgetFlag(t *testing.T) {
	r, err := quota([]string{"--budget", "research=12"}, io.Discard)
	if err != nil || len(r.over) != 0 {
		t.Errorf("research with a budget of 12: over %v, err %v", r.over, err)
	}
	for _, bad := range []string{"research", "research=-1", "research=x"} {
		if err := run([]string{"--budget", bad}, io.Discard); err == nil {
			t.Errorf("--budget %s: no error", bad)
		}
	}
	var out bytes.Buffer
	if err := run([]string{"--help"}, &out); err != nil {
		t.Errorf("--help: %v", err)
	}
}
