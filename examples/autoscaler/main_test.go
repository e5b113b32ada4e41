package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestScaleFromZeroOnTheDGXProfiles(t *testing.T) {
	var out bytes.Buffer
	if err := run(nil, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		// The A100 profile runs MIG enabled and gives no whole GPUs; the MIG demo's profiles
		// (1g.5gb, 2g.10gb, 3g.20gb) exist on the A100 only.
		"  Pod default/inference\n    dgxa100  no: cannot allocate all claims\n    dgxh100  fits on 1 node(s)\n",
		"  Pod default/mig-demo\n    dgxa100  fits on 1 node(s)\n    dgxh100  no: cannot allocate all claims\n",
		// Four pods of four GPUs need 16 GPUs: two 8-GPU nodes.
		"  PodGroup default/trainer\n    dgxa100  no: PodGroup default/trainer: pod group cannot be placed: minCount (4) cannot be satisfied: 0 scheduled, 3 remaining\n    dgxh100  fits on 2 node(s)\n",
		// The cheapest type that fits each: one H100 for the inference pod, one A100 for the demo, two
		// more H100s for the gang; cost 1 + 3x3.
		"Scale-up: cost 10, 1 x dgxa100 3 x dgxh100\n",
		// The four MIG devices of the demo are on one GPU, as the parentUUID constraint demands.
		"default/mig-demo     -> dgxa100-new-00000 (gpu-0-mig-1g5gb-0-0, gpu-0-mig-1g5gb-0-1, gpu-0-mig-2g10gb-1-2, gpu-0-mig-3g20gb-2-4)\n",
		"default/trainer-3    -> dgxh100-new-00002 (gpu-4, gpu-5, gpu-6, gpu-7)\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestCostFlagRejectsBadEntries(t *testing.T) {
	for _, args := range [][]string{{"--cost", "dgxa100"}, {"--cost", "dgx-nope=1"}} {
		if err := run(args, &bytes.Buffer{}); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

func TestHelpExitsZero(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"--help"}, &out); err != nil || out.Len() != 0 {
		t.Errorf("--help: err %v, stdout %q", err, out.String())
	}
}
