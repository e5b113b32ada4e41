package cli

import (
	"flag"
	"fmt"
	"strings"
	"time"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator/manifest"
	"github.com/dralloc/dralloc/taints"
)

var taintsCommand = &command{
	name:    "taints",
	summary: "show the devices each DeviceTaintRule taints and the claims and pods it evicts, and when",
	usage: `-f FILE|DIR|- [--rule NAME] [--now TIME] [-o text|yaml|json]

Only taints with effect NoExecute evict: the pods using an allocated claim on a tainted device are
deleted when the taint was added, or that many seconds later when the claim tolerates the taint
with tolerationSeconds; a claim that tolerates it without a limit stays. NoSchedule keeps new
claims off the devices and evicts nothing; for such a rule dractl also says what it would evict
with effect NoExecute, before you change it. Eviction times are compared with --now (RFC 3339,
the current time by default).

Examples:
  dractl taints -f cluster.yaml
  dractl taints -f cluster.yaml --rule gpu-maintenance --now 2026-12-01T12:00:00Z -o yaml
`,
	flags: func(fs *flag.FlagSet) any {
		o := &taintsOptions{}
		fs.StringVar(&o.rule, "rule", "", "show only this DeviceTaintRule")
		fs.StringVar(&o.now, "now", "", "the time to decide evictions at (RFC 3339); now by default")
		return o
	},
	run: runTaints,
}

type taintsOptions struct{ rule, now string }

// ruleReport is what one DeviceTaintRule does.
type ruleReport struct {
	Rule    string   `json:"rule"`
	Key     string   `json:"key"`
	Value   string   `json:"value,omitempty"`
	Effect  string   `json:"effect"`
	Devices []string `json:"devices"`
	// Evictions are the claims whose pods are evicted, now or later.
	Evictions []evictionReport `json:"evictions,omitempty"`
	// IfNoExecute are the evictions the rule would cause with effect NoExecute, for a rule with
	// another effect.
	IfNoExecute []evictionReport `json:"ifNoExecute,omitempty"`
}

type evictionReport struct {
	Claim string    `json:"claim"`
	Pods  []string  `json:"pods"`
	At    time.Time `json:"at"`
	Due   bool      `json:"due"`
	// Device is the device whose taint is due first.
	Device string `json:"device"`
}

func runTaints(e *env, o any) (int, error) {
	opts := o.(*taintsOptions)
	now := time.Now().UTC()
	if opts.now != "" {
		t, err := time.Parse(time.RFC3339, opts.now)
		if err != nil {
			return exitBadInput, fmt.Errorf("--now %s: must be a time like 2026-12-01T12:00:00Z", opts.now)
		}
		now = t
	}
	objs := e.cluster.objs
	rules := objs.TaintRules
	if opts.rule != "" {
		rules = nil
		for _, r := range objs.TaintRules {
			if r.Name == opts.rule {
				rules = append(rules, r)
			}
		}
		if len(rules) == 0 {
			return exitBadInput, fmt.Errorf("--rule %s: no such DeviceTaintRule in the input", opts.rule)
		}
	}
	var reports []ruleReport
	for _, r := range rules {
		ev, err := taints.NewEvaluator([]*resourceapi.DeviceTaintRule{r})
		if err != nil {
			return exitBadInput, e.cluster.at(r, err)
		}
		rep := ruleReport{Rule: r.Name, Key: r.Spec.Taint.Key, Value: r.Spec.Taint.Value, Effect: string(r.Spec.Taint.Effect), Devices: []string{}}
		for _, s := range objs.Slices {
			for _, d := range s.Spec.Devices {
				id := taints.DeviceID{Driver: s.Spec.Driver, Pool: s.Spec.Pool.Name, Device: d.Name}
				if len(ev.RuleNames(id)) > 0 {
					rep.Devices = append(rep.Devices, id.String())
				}
			}
		}
		rep.Evictions, err = evictions(ev, r.Name, now, objs)
		if err != nil {
			return exitBadInput, err
		}
		if r.Spec.Taint.Effect != resourceapi.DeviceTaintEffectNoExecute {
			// What switching the rule to NoExecute would do, as the rule's status reports it.
			as := r.DeepCopy()
			as.Spec.Taint.Effect = resourceapi.DeviceTaintEffectNoExecute
			evNoExecute, err := taints.NewEvaluator([]*resourceapi.DeviceTaintRule{as})
			if err == nil {
				rep.IfNoExecute, err = evictions(evNoExecute, r.Name, now, objs)
			}
			if err != nil {
				return exitBadInput, err
			}
		}
		reports = append(reports, rep)
	}
	if e.output != "text" {
		return exitOK, e.encode(map[string]any{"now": now, "rules": reports})
	}
	if len(reports) == 0 {
		fmt.Fprintln(e.stdout, "No DeviceTaintRules in the input.")
	}
	for i, r := range reports {
		if i > 0 {
			fmt.Fprintln(e.stdout)
		}
		taint := r.Key
		if r.Value != "" {
			taint += "=" + r.Value
		}
		fmt.Fprintf(e.stdout, "DeviceTaintRule %s puts taint %s:%s on %s\n", r.Rule, taint, r.Effect, plural(len(r.Devices), "device"))
		for _, d := range r.Devices {
			fmt.Fprintf(e.stdout, "  %s\n", d)
		}
		switch {
		case r.Effect != string(resourceapi.DeviceTaintEffectNoExecute):
			fmt.Fprintf(e.stdout, "  Effect %s evicts nothing; new claims that do not tolerate it cannot get these devices.\n", r.Effect)
			if len(r.IfNoExecute) == 0 {
				fmt.Fprintln(e.stdout, "  With effect NoExecute it would evict no pod either.")
			} else {
				fmt.Fprintln(e.stdout, "  With effect NoExecute it would evict:")
				for _, x := range r.IfNoExecute {
					e.printEviction("    ", x)
				}
			}
		case len(r.Evictions) == 0:
			fmt.Fprintln(e.stdout, "  No pod is evicted: no allocated claim uses these devices without tolerating the taint.")
		}
		for _, x := range r.Evictions {
			e.printEviction("  ", x)
		}
	}
	return exitOK, nil
}

func (e *env) printEviction(indent string, x evictionReport) {
	when := e.bad("evicted now")
	if !x.Due {
		when = e.warn("evicted at " + x.At.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(e.stdout, "%sResourceClaim %s (device %s): pods %s %s\n", indent, x.Claim, x.Device, strings.Join(x.Pods, ", "), when)
}

// evictions are the claims whose pods the device taint eviction controller evicts because of the
// rule (not of a taint the slice itself has), now or later.
func evictions(ev *taints.Evaluator, rule string, now time.Time, objs *manifest.Objects) ([]evictionReport, error) {
	plan, err := ev.Plan(now, objs.Slices, objs.Claims)
	if err != nil {
		return nil, err
	}
	var out []evictionReport
	add := func(list []taints.Eviction, due bool) {
		for _, x := range list {
			if x.Rule != rule {
				continue // due first to a taint of the slice itself
			}
			er := evictionReport{Claim: x.Claim.String(), At: x.At, Due: due, Device: x.Device.String(), Pods: []string{}}
			for _, p := range x.Pods {
				er.Pods = append(er.Pods, x.Claim.Namespace+"/"+p.Name)
			}
			out = append(out, er)
		}
	}
	add(plan.Now, true)
	add(plan.Later, false)
	return out, nil
}
