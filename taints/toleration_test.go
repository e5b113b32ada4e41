package taints

import (
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"pgregory.net/rapid"
)

const (
	none       = resourceapi.DeviceTaintEffectNone
	noSchedule = resourceapi.DeviceTaintEffectNoSchedule
	noExecute  = resourceapi.DeviceTaintEffectNoExecute
	equal      = resourceapi.DeviceTolerationOpEqual
	exists     = resourceapi.DeviceTolerationOpExists
)

func TestToleratesTaint(t *testing.T) {
	taint := resourceapi.DeviceTaint{Key: "gpu.example.com/ecc", Value: "high", Effect: noExecute}
	tests := []struct {
		name string
		tol  resourceapi.DeviceToleration
		want bool
	}{
		{"equal key, value and effect tolerate", resourceapi.DeviceToleration{Key: "gpu.example.com/ecc", Operator: equal, Value: "high", Effect: noExecute}, true},
		{"an empty operator means Equal", resourceapi.DeviceToleration{Key: "gpu.example.com/ecc", Value: "high"}, true},
		{"Equal with another value does not tolerate", resourceapi.DeviceToleration{Key: "gpu.example.com/ecc", Operator: equal, Value: "low"}, false},
		{"Exists matches every value", resourceapi.DeviceToleration{Key: "gpu.example.com/ecc", Operator: exists}, true},
		{"an empty key with Exists tolerates every taint", resourceapi.DeviceToleration{Operator: exists}, true},
		{"an empty effect matches every effect", resourceapi.DeviceToleration{Key: "gpu.example.com/ecc", Operator: exists}, true},
		{"another effect does not tolerate", resourceapi.DeviceToleration{Key: "gpu.example.com/ecc", Operator: exists, Effect: noSchedule}, false},
		{"another key does not tolerate", resourceapi.DeviceToleration{Key: "gpu.example.com/temp", Operator: exists}, false},
		{"an unknown operator tolerates nothing", resourceapi.DeviceToleration{Key: "gpu.example.com/ecc", Operator: "Gt", Value: "high"}, false},
		{"tolerationSeconds does not change matching", resourceapi.DeviceToleration{Operator: exists, Effect: noExecute, TolerationSeconds: new(int64)}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ToleratesTaint(tc.tol, taint); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBlocking(t *testing.T) {
	ecc := resourceapi.DeviceTaint{Key: "ecc", Effect: noSchedule}
	drain := resourceapi.DeviceTaint{Key: "drain", Effect: noExecute}
	info := resourceapi.DeviceTaint{Key: "info", Effect: none}
	future := resourceapi.DeviceTaint{Key: "future", Effect: "PreferNoSchedule"}
	tests := []struct {
		name   string
		taints []resourceapi.DeviceTaint
		tols   []resourceapi.DeviceToleration
		want   string
	}{
		{name: "no taints block nothing"},
		{name: "None never blocks", taints: []resourceapi.DeviceTaint{info}},
		{name: "an unknown effect never blocks", taints: []resourceapi.DeviceTaint{future}},
		{name: "an untolerated NoSchedule blocks", taints: []resourceapi.DeviceTaint{info, ecc}, want: "ecc"},
		{name: "an untolerated NoExecute blocks", taints: []resourceapi.DeviceTaint{drain}, want: "drain"},
		{name: "the first untolerated taint is reported", taints: []resourceapi.DeviceTaint{ecc, drain}, tols: []resourceapi.DeviceToleration{{Key: "ecc", Operator: exists}}, want: "drain"},
		{name: "tolerating everything unblocks", taints: []resourceapi.DeviceTaint{ecc, drain}, tols: []resourceapi.DeviceToleration{{Operator: exists}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, blocked := Blocking(tc.taints, tc.tols)
			if blocked != (tc.want != "") || got.Key != tc.want {
				t.Fatalf("got %q %v, want %q", got.Key, blocked, tc.want)
			}
		})
	}
}

// referenceTolerates restates the Kubernetes rule in the most literal way, clause by clause.
func referenceTolerates(tol resourceapi.DeviceToleration, taint resourceapi.DeviceTaint) bool {
	effectOK := tol.Effect == "" || tol.Effect == taint.Effect
	keyOK := tol.Key == "" || tol.Key == taint.Key
	var valueOK bool
	switch tol.Operator {
	case "", "Equal":
		valueOK = tol.Value == taint.Value
	case "Exists":
		valueOK = true
	default:
		valueOK = false
	}
	return effectOK && keyOK && valueOK
}

func genTaint(t *rapid.T) resourceapi.DeviceTaint {
	return resourceapi.DeviceTaint{
		Key:    rapid.SampledFrom([]string{"a", "b", "x.io/c"}).Draw(t, "key"),
		Value:  rapid.SampledFrom([]string{"", "1", "2"}).Draw(t, "value"),
		Effect: rapid.SampledFrom([]resourceapi.DeviceTaintEffect{none, noSchedule, noExecute, "Other"}).Draw(t, "effect"),
	}
}

func genToleration(t *rapid.T) resourceapi.DeviceToleration {
	return resourceapi.DeviceToleration{
		Key:      rapid.SampledFrom([]string{"", "a", "b", "x.io/c"}).Draw(t, "tkey"),
		Operator: rapid.SampledFrom([]resourceapi.DeviceTolerationOperator{"", equal, exists, "Lt"}).Draw(t, "op"),
		Value:    rapid.SampledFrom([]string{"", "1", "2"}).Draw(t, "tvalue"),
		Effect:   rapid.SampledFrom([]resourceapi.DeviceTaintEffect{"", none, noSchedule, noExecute}).Draw(t, "teffect"),
	}
}

func TestPropToleratesTaintAgreesWithReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tol, taint := genToleration(t), genTaint(t)
		if got, want := ToleratesTaint(tol, taint), referenceTolerates(tol, taint); got != want {
			t.Fatalf("ToleratesTaint(%+v, %+v) = %v, reference %v", tol, taint, got, want)
		}
	})
}

func TestPropBlockingAgreesWithReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		taints := rapid.SliceOfN(rapid.Custom(genTaint), 0, 4).Draw(t, "taints")
		tols := rapid.SliceOfN(rapid.Custom(genToleration), 0, 3).Draw(t, "tols")
		want := false
		for _, ta := range taints {
			if ta.Effect != noSchedule && ta.Effect != noExecute {
				continue
			}
			tolerated := false
			for _, to := range tols {
				tolerated = tolerated || referenceTolerates(to, ta)
			}
			want = want || !tolerated
		}
		if _, got := Blocking(taints, tols); got != want {
			t.Fatalf("Blocking = %v, reference %v", got, want)
		}
	})
}
