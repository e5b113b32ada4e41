package cli

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/celenv"
)

var lintCommand = &command{
	name:    "lint",
	summary: "check every CEL selector of DeviceClasses, ResourceClaims and templates against the published devices",
	usage: `-f FILE|DIR|- [-o text|yaml|json]

Each selector is evaluated as the scheduler evaluates it: a class's selectors on every published
device, one after the other, a request's selectors on the devices its class accepts. A selector is
reported when it does not compile, names an attribute or capacity no device publishes, uses a value
as the wrong type, fails on a device, or matches no device at all.
Exit status 0 when nothing is reported, 1 otherwise.

Examples:
  dractl lint -f cluster.yaml
  kubectl get resourceslices,deviceclasses,resourceclaims,resourceclaimtemplates -A -o yaml | dractl lint -f -
`,
	flags: func(fs *flag.FlagSet) any { return nil },
	run:   runLint,
}

// selectorReport is what lint found about one selector.
type selectorReport struct {
	// Object is the kind and name, Field the path of the expression in it.
	Object     string `json:"object"`
	Field      string `json:"field"`
	Expression string `json:"expression"`
	// Checked is the number of devices the selector is evaluated on, Matched those it accepts.
	Checked int `json:"checked"`
	// (A request naming a class that does not exist is reported with Field its deviceClassName
	// and Expression the class name.)
	Matched int `json:"matched"`
	// Problems are what a person should look at; empty when the selector is fine.
	Problems []string `json:"problems,omitempty"`
}

// candidate is a published device prepared for CEL.
type candidate struct {
	name string // driver/pool/device
	dev  *celenv.Device
}

func runLint(e *env, _ any) (int, error) {
	ctx := context.Background()
	cel, err := celenv.NewEnv(celenv.Options{})
	if err != nil {
		return exitBadInput, err
	}
	var all []candidate
	for _, s := range e.cluster.objs.Slices {
		for i := range s.Spec.Devices {
			d := &s.Spec.Devices[i]
			all = append(all, candidate{name: s.Spec.Driver + "/" + s.Spec.Pool.Name + "/" + d.Name, dev: celenv.NewDevice(s.Spec.Driver, d)})
		}
	}
	var reports []selectorReport
	check := func(object, path string, sels []resourceapi.DeviceSelector, devices []candidate) []candidate {
		for i, sel := range sels {
			if sel.CEL == nil {
				continue
			}
			r, matched := lintOne(ctx, cel, sel.CEL.Expression, devices)
			r.Object, r.Field = object, fmt.Sprintf("%s[%d].cel.expression", path, i)
			reports = append(reports, r)
			devices = matched
		}
		return devices
	}
	classDevices := map[string][]candidate{}
	for _, cl := range e.cluster.objs.Classes {
		classDevices[cl.Name] = check("DeviceClass "+cl.Name, "spec.selectors", cl.Spec.Selectors, all)
	}
	// request checks one request's (or subrequest's) selectors and reports whether some device
	// passes them all.
	request := func(object, path, class string, sels []resourceapi.DeviceSelector) bool {
		devices, ok := classDevices[class]
		if !ok {
			// As the scheduler: a claim whose class does not exist is not allocated at all.
			reports = append(reports, selectorReport{Object: object, Field: path + ".deviceClassName", Expression: class,
				Problems: []string{fmt.Sprintf("DeviceClass %s is not in the input", class)}})
			return false
		}
		return len(check(object, path+".selectors", sels, devices)) > 0
	}
	requests := func(object, path string, spec resourceapi.ResourceClaimSpec) {
		for i, req := range spec.Devices.Requests {
			rp := fmt.Sprintf("%s.devices.requests[%d]", path, i)
			if req.Exactly != nil {
				request(object, rp+".exactly", req.Exactly.DeviceClassName, req.Exactly.Selectors)
			}
			first, some := len(reports), false
			for j, sub := range req.FirstAvailable {
				if request(object, fmt.Sprintf("%s.firstAvailable[%d]", rp, j), sub.DeviceClassName, sub.Selectors) {
					some = true
				}
			}
			if some {
				// An alternative that no device serves is the point of firstAvailable as long as
				// another one is served.
				for k := first; k < len(reports); k++ {
					reports[k].Problems = slices.DeleteFunc(reports[k].Problems, func(p string) bool { return strings.HasPrefix(p, "matches none of") })
				}
			}
		}
	}
	for _, cl := range e.cluster.objs.Claims {
		requests("ResourceClaim "+cl.Namespace+"/"+cl.Name, "spec", cl.Spec)
	}
	for _, t := range e.cluster.objs.Templates {
		requests("ResourceClaimTemplate "+t.Namespace+"/"+t.Name, "spec.spec", t.Spec.Spec)
	}

	code := exitOK
	problems := 0
	selectors := 0
	for _, r := range reports {
		if strings.HasSuffix(r.Field, ".expression") {
			selectors++
		}
		if len(r.Problems) > 0 {
			code = exitNotFit
			problems++
		}
	}
	if e.output != "text" {
		return code, e.encode(map[string]any{"selectors": reports})
	}
	for _, r := range reports {
		if len(r.Problems) == 0 {
			continue
		}
		fmt.Fprintf(e.stdout, "%s: %s: %s\n", r.Object, r.Field, r.Expression)
		for _, p := range r.Problems {
			fmt.Fprintf(e.stdout, "  %s %s\n", e.warn("-"), p)
		}
	}
	fmt.Fprintf(e.stdout, "%s checked against %s, %d with problems\n", plural(selectors, "selector"), plural(len(all), "device"), problems)
	return code, nil
}

// lintOne checks one expression on devices and returns the report and the devices it accepts.
func lintOne(ctx context.Context, cel *celenv.Env, expr string, devices []candidate) (selectorReport, []candidate) {
	r := selectorReport{Expression: expr, Checked: len(devices)}
	views := make([]*celenv.Device, len(devices))
	for i, d := range devices {
		views[i] = d.dev
	}
	lr, err := cel.Lint(ctx, expr, views)
	if err != nil {
		r.Problems = append(r.Problems, "does not compile: "+err.Error())
		return r, nil
	}
	for _, f := range lr.Findings {
		r.Problems = append(r.Problems, f.Message)
	}
	var matched []candidate
	failed := 0
	var firstErr string
	for i, o := range lr.Outcomes {
		switch {
		case o.Err != nil:
			if failed == 0 {
				firstErr = fmt.Sprintf("%s: %v", devices[i].name, o.Err)
			}
			failed++
		case o.Matched:
			matched = append(matched, devices[i])
		}
	}
	r.Matched = len(matched)
	if failed > 0 {
		r.Problems = append(r.Problems, fmt.Sprintf("fails on %d of the %d devices (first: %s)", failed, len(devices), firstErr))
	}
	if len(devices) > 0 && len(matched) == 0 && failed == 0 {
		r.Problems = append(r.Problems, fmt.Sprintf("matches none of the %d devices", len(devices)))
	}
	return r, matched
}
