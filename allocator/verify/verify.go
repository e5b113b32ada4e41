package verify

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/dralloc/dralloc/allocator/gates"
	"github.com/dralloc/dralloc/celenv"
	"github.com/dralloc/dralloc/taints"
)

// Input is the cluster state an allocation is checked against.
type Input struct {
	Slices  []*resourceapi.ResourceSlice
	Classes []*resourceapi.DeviceClass
	// Claims are the claims of the cluster. Those with status.allocation make up the allocated state: devices in
	// exclusive use, shares of shareable devices with their consumed capacity, and counters drawn. A claim that is
	// also among the claims being checked (same namespace and name) is left out of the state.
	Claims     []*resourceapi.ResourceClaim
	TaintRules []*resourceapi.DeviceTaintRule
	// Node is the node the claims are allocated for. With a nil Node, whether a node can reach a device is not
	// checked, and neither is the node selector of the results.
	Node *v1.Node
	// Features are the feature gates; nil means the gates Kubernetes 1.37 enables by default.
	Features *Features
	// CEL evaluates selectors; nil means a new environment for the features. Pass one to share its compile cache
	// across calls.
	CEL *celenv.Env
	// RangedShares accepts shares that record more capacity than their point request consumes, as ranged
	// shares do (an SDK extension: capacity.ConsumedRange, allocator/pods Options.Preferred): each recorded
	// amount must then be at least what Kubernetes would record and a value the device's request policy
	// allows, and the totals must still fit. Off (the default), a share must record exactly what Kubernetes
	// records.
	RangedShares bool
}

// Features are the Kubernetes feature gates that change what a valid allocation is: gates.Features, the
// one type every package of dralloc takes (allocator.Features is the same type).
type Features = gates.Features

// DefaultFeatures returns the gates Kubernetes 1.37 enables by default: the beta and GA ones (gates.Default).
func DefaultFeatures() Features { return gates.Default() }

// AllFeatures returns every gate switched on (gates.All).
func AllFeatures() Features { return gates.All() }

// The implementations of the Kubernetes allocator the gates select (Features.Implementation): the older ones
// do not know some newer fields at all.
const (
	variantStable       = gates.Stable
	variantIncubating   = gates.Incubating
	variantExperimental = gates.Experimental
)

// DeviceID names one device: the driver, the pool and the device name. It is dralloc's one device identity,
// defined in package taints (allocator.DeviceID is the same type).
type DeviceID = taints.DeviceID

// Rule names the rule a Violation breaks.
type Rule string

// The rules Check enforces.
const (
	RuleInvalidInput   Rule = "InvalidInput"   // a claim, class or result cannot be interpreted
	RuleFeature        Rule = "Feature"        // a field or device used while its feature gate is off
	RuleUnknownRequest Rule = "UnknownRequest" // a result names no request (or a request with firstAvailable by its own name)
	RuleResultCount    Rule = "ResultCount"    // the wrong number of devices for ExactCount, All or firstAvailable, or more than 32
	RuleUnknownDevice  Rule = "UnknownDevice"  // the device is not published in the newest generation of its pool
	RulePool           Rule = "Pool"           // the device's pool is incomplete or invalid
	RuleNode           Rule = "Node"           // the node cannot reach the device
	RuleClass          Rule = "Class"          // the class is missing or its selectors reject the device
	RuleSelector       Rule = "Selector"       // the request's selectors reject the device
	RuleCEL            Rule = "CEL"            // a selector or derived attribute failed to compile or evaluate
	RuleInUse          Rule = "InUse"          // an exclusive device is allocated twice
	RuleShare          Rule = "Share"          // the shareID is missing, unexpected or not unique
	RuleCapacity       Rule = "Capacity"       // capacity requests not met, consumed capacity wrong, or a device overdrawn
	RuleCounters       Rule = "Counters"       // shared counters overdrawn
	RuleCompatibility  Rule = "Compatibility"  // devices on one counter set without a common compatibility group
	RuleConstraint     Rule = "Constraint"     // a matchAttribute or distinctAttribute constraint is broken
	RuleTaint          Rule = "Taint"          // a NoSchedule or NoExecute taint the request does not tolerate
	RuleTolerations    Rule = "Tolerations"    // the result's tolerations differ from the request's
	RuleAdminAccess    Rule = "AdminAccess"    // the result's adminAccess differs from the request's, or repeats a device in a claim
	RuleBinding        Rule = "Binding"        // binding conditions or skipNodeOperations differ from the device's
	RuleConfig         Rule = "Config"         // the result's configuration differs from the class and claim configuration
	RuleNodeSelector   Rule = "NodeSelector"   // the result's node selector does not describe where the devices are
)

// Violation is one broken rule.
type Violation struct {
	// Claim is namespace/name of the claim.
	Claim string
	// Request is the request or request/subrequest, when the violation concerns one.
	Request string
	// Result is the index of the result entry in status.allocation.devices.results, or -1.
	Result int
	// Device is the device, when the violation concerns one.
	Device DeviceID
	Rule   Rule
	// Message says what is wrong, in Kubernetes' words where it has some.
	Message string
}

// String formats the violation for logs and test failures.
func (v Violation) String() string {
	s := "claim " + v.Claim
	if v.Request != "" {
		s += ", request " + v.Request
	}
	if v.Device != (DeviceID{}) {
		s += ", device " + v.Device.String()
	}
	return fmt.Sprintf("%s: %s: %s", s, v.Rule, v.Message)
}

// ErrInput reports arguments Check cannot work with (not violations of the allocation).
var ErrInput = errors.New("invalid verify input")

// Check lists every violation in results, the proposed allocations of claims (results[i] for claims[i]), against
// the state in. The order of violations follows the claims and their results. An empty list means the
// allocation is valid. The error is non-nil only when checking is impossible: mismatched lengths, a nil claim, a
// taint rule the API would reject, or a cancelled context. Inputs are not mutated.
//
// Check is safe for concurrent use: calls only read their arguments and share nothing but Input.CEL, an
// environment that is itself safe for concurrent use (pass one to share its compile cache across calls).
func Check(ctx context.Context, in Input, claims []*resourceapi.ResourceClaim, results []resourceapi.AllocationResult) ([]Violation, error) {
	if len(claims) != len(results) {
		return nil, fmt.Errorf("%w: %d claims but %d results", ErrInput, len(claims), len(results))
	}
	for i, c := range claims {
		if c == nil {
			return nil, fmt.Errorf("%w: claim #%d is nil", ErrInput, i)
		}
	}
	features := DefaultFeatures()
	if in.Features != nil {
		features = *in.Features
	}
	env := in.CEL
	if env == nil {
		var err error
		env, err = celenv.NewEnv(celenv.Options{Features: &features})
		if err != nil {
			return nil, fmt.Errorf("%w: cel environment: %w", ErrInput, err)
		}
	}
	var rules *taints.Evaluator
	if features.DRADeviceTaints {
		var err error
		if rules, err = taints.NewEvaluator(in.TaintRules); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInput, err)
		}
	}
	c := &checker{
		ctx:      ctx,
		in:       in,
		features: features,
		env:      env,
		rules:    rules,
		classes:  map[string]*resourceapi.DeviceClass{},
		matches:  map[matchKey]matchResult{},
	}
	for _, cl := range in.Classes {
		if cl != nil {
			c.classes[cl.Name] = cl
		}
	}
	c.index()
	c.gatherState(claims)
	for i, claim := range claims {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("verify: %w", context.Cause(ctx))
		}
		c.checkClaim(i, claim, &results[i])
	}
	c.checkUsage(claims, results)
	// A selector the context interrupted reads as a violation: the findings are not to be trusted then.
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("verify: %w", context.Cause(ctx))
	}
	return c.violations, nil
}

// checker holds one Check call's indexes and findings.
type checker struct {
	ctx      context.Context
	in       Input
	features Features
	env      *celenv.Env
	rules    *taints.Evaluator
	classes  map[string]*resourceapi.DeviceClass

	pools   map[poolKey]*pool
	devices map[DeviceID]*device
	state   usage

	matches    map[matchKey]matchResult
	violations []Violation
}

func (c *checker) report(v Violation) { c.violations = append(c.violations, v) }

func claimName(claim *resourceapi.ResourceClaim) string {
	if claim.Namespace == "" {
		return claim.Name
	}
	return claim.Namespace + "/" + claim.Name
}
