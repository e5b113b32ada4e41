package celenv

import (
	"errors"
	"fmt"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/interpreter"
	resourceapi "k8s.io/api/resource/v1"
)

// fastPathMargin is how far below the cost limit the worst-case estimate
// must stay for an expression to run without cost tracking. Kubernetes'
// estimates are not strict upper bounds for every function: validate() of
// the uri format charges its 1103-character pattern at runtime but 128 in
// the estimate (8.6x), join() charges twice its estimate, includes() on
// lists of long strings up to 6.4x. A margin of 16 covers each of these, and
// real selectors estimate in the tens or hundreds against a limit of a
// million.
const fastPathMargin = 16

// checkFrequency is how many comprehension iterations run between two
// checks of the context, as in Kubernetes.
const checkFrequency = 100

// Env is the Kubernetes DRA CEL environment: the variable "device", the
// Kubernetes CEL libraries (quantity, semver, lists, regex, URL, IP, CIDR,
// format) and the cel-go
// extensions Kubernetes enables (strings, sets, lists, bindings, two-variable
// comprehensions, optional types). It compiles expressions and keeps the
// results in a bounded cache. An Env is safe for concurrent use.
//
// The zero Env is ready to use: on its first call it builds the environment
// NewEnv(Options{}) returns (the scheduler's, with the default features). A
// nil *Env returns an error instead of panicking. An Env must not be copied
// after first use.
type Env struct {
	once    sync.Once // builds the zero Env on first use (see ready)
	initErr error

	env       *cel.Env
	features  Features
	newExpr   bool
	costLimit uint64
	sizes     *sizeModel
	// attributeType is the declared type of one attribute value; a selector
	// may evaluate to it (it is dyn, checked at runtime to be a bool).
	attributeType *cel.Type

	selectors *cache[*Selector]
	derived   *cache[*Derived]
}

// NewEnv builds an environment. Building one takes a few milliseconds;
// create it once and share it.
func NewEnv(opts Options) (*Env, error) {
	e := &Env{}
	if err := e.init(opts); err != nil {
		return nil, err
	}
	return e, nil
}

// errNilEnv is the error of the methods of a nil *Env.
var errNilEnv = errors.New("celenv: nil *Env (create one with NewEnv, or use the zero Env)")

// ready builds the zero Env on first use; NewEnv's environments are built already, and the check is one
// atomic load.
func (e *Env) ready() error {
	if e == nil {
		return errNilEnv
	}
	e.once.Do(func() {
		if e.env == nil {
			e.initErr = e.init(Options{})
		}
	})
	return e.initErr
}

// init builds the environment for the options; NewEnv calls it before the Env is shared, ready on first
// use of a zero Env.
func (e *Env) init(opts Options) error {
	features := DefaultFeatures()
	if opts.Features != nil {
		features = *opts.Features
	}
	e.features, e.newExpr, e.costLimit = features, opts.NewExpressions, opts.CostLimit
	if e.costLimit == 0 {
		e.costLimit = resourceapi.CELSelectorExpressionMaxCost
	}
	size := opts.CacheSize
	if size == 0 {
		size = DefaultCacheSize
	}
	e.selectors = newCache[*Selector](size)
	e.derived = newCache[*Derived](size)

	base, err := cel.NewEnv(baseOptions(opts.NewExpressions, features)...)
	if err != nil {
		return fmt.Errorf("build cel environment: %w", err)
	}

	// Which device declaration applies: the scheduler (stored expressions)
	// sees the newest one; new expressions see the one the gates select.
	multiAlloc, listAttrs := true, true
	if opts.NewExpressions {
		multiAlloc, listAttrs = features.DRAConsumableCapacity, features.DRAListTypeAttributes
	}
	e.attributeType = cel.AnyType
	if listAttrs {
		// dyn, so that list attributes can be iterated (exists, all).
		e.attributeType = cel.DynType
	}
	e.sizes = newSizeModel(multiAlloc)
	if !listAttrs {
		e.sizes.attribute.max = resourceapi.DeviceAttributeMaxValueLength
	}
	prov := newDeviceProvider(base.CELTypeProvider(), e.attributeType, multiAlloc)
	guards, err := guardedBuilders(base, maxResultSize(e.costLimit))
	if err != nil {
		return fmt.Errorf("build cel environment: %w", err)
	}
	e.env, err = base.Extend(append(guards,
		ext.Bindings(ext.BindingsVersion(0)),
		cel.CustomTypeProvider(prov),
		cel.Variable(deviceVar, prov.deviceType),
	)...)
	if err != nil {
		return fmt.Errorf("build cel environment: %w", err)
	}
	return nil
}

// baseOptions is the Kubernetes base CEL environment at version 1.37 (for
// new expressions: at the oldest version a 1.37 API server must stay
// compatible with, 1.36).
func baseOptions(newExpressions bool, features Features) []cel.EnvOption {
	opts := []cel.EnvOption{
		cel.HomogeneousAggregateLiterals(),
		cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true),
		cel.Lib(urlLibrary{}),
		cel.Lib(regexLibrary{}),
		cel.CostEstimatorOptions(checker.PresenceTestHasCost(false)),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		cel.Lib(quantityLibrary{}),
		cel.ASTValidators(
			cel.ValidateDurationLiterals(),
			cel.ValidateTimestampLiterals(),
			cel.ValidateRegexLiterals(),
			cel.ValidateHomogeneousAggregateLiterals(),
		),
		ext.Strings(ext.StringsVersion(2)),
		ext.Sets(),
		cel.Lib(netLibrary{}),
		cel.Lib(formatLibrary{}),
		ext.TwoVarComprehensions(),
		cel.Lib(semverLibrary{}),
		ext.Lists(ext.ListsVersion(3)),
	}
	// Kubernetes 1.37 adds "includes" to its list library; a 1.36-compatible
	// environment only has it when list-type attributes are enabled.
	opts = append(opts, cel.Lib(listsLibrary{withIncludes: !newExpressions || features.DRAListTypeAttributes}))
	return opts
}

// Compile compiles a device selector expression (a CELDeviceSelector of a
// DeviceClass or a request), or returns the cached result of an earlier
// call. The error is a *CompileError.
func (e *Env) Compile(expression string) (*Selector, error) {
	if err := e.ready(); err != nil {
		return nil, err
	}
	if s, ok := e.selectors.get(expression); ok {
		return s, nil
	}
	prog, err := e.compile(expression, false)
	if err != nil {
		return nil, err
	}
	s := &Selector{program: prog}
	return e.selectors.put(expression, s), nil
}

// CompileDerived compiles the expression of a DeviceDerivedAttribute, or
// returns the cached result of an earlier call. The error is a
// *CompileError.
func (e *Env) CompileDerived(expression string) (*Derived, error) {
	if err := e.ready(); err != nil {
		return nil, err
	}
	if d, ok := e.derived.get(expression); ok {
		return d, nil
	}
	prog, err := e.compile(expression, true)
	if err != nil {
		return nil, err
	}
	d := &Derived{program: prog}
	return e.derived.put(expression, d), nil
}

// program is a compiled expression with everything evaluation needs.
type program struct {
	expression string
	ast        *cel.Ast
	// tracked runs with cost tracking and context interruption.
	tracked cel.Program
	// fast runs without cost tracking; it is set when the worst-case
	// estimate proves the cost limit cannot be reached on a device within
	// the API's limits.
	fast cel.Program
	// comprehensions: the expression loops, so a cancellable context must
	// be able to interrupt it.
	comprehensions bool
	maxCost        uint64
	costLimit      uint64
}

func (e *Env) compile(expression string, derived bool) (*program, error) {
	if len(expression) > resourceapi.CELSelectorExpressionMaxLength {
		return nil, &CompileError{Expression: expression, Detail: fmt.Sprintf(
			"expression too long (%d characters, at most %d allowed)", len(expression), resourceapi.CELSelectorExpressionMaxLength)}
	}
	checked, issues := e.env.Compile(expression)
	if issues != nil && issues.Err() != nil {
		ce := &CompileError{Expression: expression, Detail: "compilation failed: " + issues.String()}
		if errs := issues.Errors(); len(errs) > 0 {
			ce.Line, ce.Column = errs[0].Location.Line(), errs[0].Location.Column()+1
		}
		return nil, ce
	}
	if detail := e.checkOutputType(checked.OutputType(), derived); detail != "" {
		return nil, &CompileError{Expression: expression, Detail: detail}
	}
	p := &program{expression: expression, ast: checked, costLimit: e.costLimit, maxCost: ^uint64(0)}
	var err error
	p.tracked, err = e.env.Program(checked,
		cel.EvalOptions(cel.OptOptimize, cel.OptTrackCost),
		cel.CostTracking(costModel{}),
		cel.CostTrackerOptions(interpreter.PresenceTestHasCost(false)),
		cel.CostLimit(e.costLimit),
		cel.InterruptCheckFrequency(checkFrequency),
	)
	if err != nil {
		return nil, &CompileError{Expression: expression, Detail: "program instantiation failed: " + err.Error()}
	}
	if est, err := e.env.EstimateCost(checked, costModel{sizes: e.sizes}); err == nil {
		p.maxCost = est.Max
	}
	native := checked.NativeRep()
	p.comprehensions = len(ast.MatchDescendants(ast.NavigateAST(native), ast.KindMatcher(ast.ComprehensionKind))) > 0
	if p.maxCost <= e.costLimit/fastPathMargin && !callsUnderestimated(native) {
		p.fast, err = e.env.Program(checked,
			cel.EvalOptions(cel.OptOptimize),
			cel.CustomDecoratorV2(foldConstantCalls),
			cel.InterruptCheckFrequency(checkFrequency),
		)
		if err != nil {
			return nil, &CompileError{Expression: expression, Detail: "program instantiation failed: " + err.Error()}
		}
	}
	return p, nil
}

// checkOutputType applies Kubernetes' rules for the result type: selectors
// yield bool (or the declared attribute type, checked at runtime); derived
// attributes yield a scalar (string, int, bool, semver) or a list of them.
func (e *Env) checkOutputType(t *cel.Type, derived bool) string {
	if derived {
		allowList := e.features.DRAListTypeAttributes || !e.newExpr
		if isAllowedDerivedType(t, allowList) {
			return ""
		}
		if allowList {
			return fmt.Sprintf("must evaluate to a primitive scalar (string, integer, boolean, semver) or a list of these scalars, not %v", t)
		}
		return fmt.Sprintf("must evaluate to a primitive scalar (string, integer, boolean, semver), not %v", t)
	}
	if t.IsExactType(cel.BoolType) || t.IsExactType(e.attributeType) {
		return ""
	}
	return fmt.Sprintf("must evaluate to %v or the unknown type, not %v", cel.BoolType, t)
}

func isAllowedDerivedType(t *cel.Type, allowList bool) bool {
	if isAllowedDerivedElementType(t) {
		return true
	}
	return allowList && t.TypeName() == "list" && len(t.Parameters()) == 1 && isAllowedDerivedElementType(t.Parameters()[0])
}

func isAllowedDerivedElementType(t *cel.Type) bool {
	return t.IsExactType(cel.BoolType) || t.IsExactType(cel.IntType) || t.IsExactType(cel.StringType) ||
		t.IsExactType(cel.AnyType) || t.IsExactType(cel.DynType) || t.IsExactType(semverType)
}

// underestimated are the functions whose compile-time estimate does not
// bound their result: format is priced by its format string alone,
// replace and join by sizes the estimate may not know. An expression that
// calls one of them always runs with cost tracking.
var underestimated = map[string]bool{"format": true, "replace": true, "join": true}

func callsUnderestimated(a *ast.AST) bool {
	calls := ast.MatchDescendants(ast.NavigateAST(a), ast.KindMatcher(ast.CallKind))
	for _, c := range calls {
		if underestimated[c.AsCall().FunctionName()] {
			return true
		}
	}
	return false
}

// MaxCost is the worst-case cost of one evaluation on a device within the
// API's limits, as the API server estimates it when validating an object;
// math.MaxUint64 when it cannot be bounded.
func (p *program) MaxCost() uint64 { return p.maxCost }
