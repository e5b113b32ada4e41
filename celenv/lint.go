package celenv

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// FindingKind classifies a lint finding.
type FindingKind string

const (
	// UnknownName: the expression reads an attribute or capacity that none
	// of the devices publishes; on every device the lookup fails (or, with
	// has() or optional chaining, is always absent).
	UnknownName FindingKind = "UnknownName"
	// TypeMismatch: the expression uses a value as a type some device does
	// not publish it as, such as comparing a version attribute with a
	// string. On those devices evaluation fails or never matches.
	TypeMismatch FindingKind = "TypeMismatch"
)

// Finding is one problem Lint found in an expression.
type Finding struct {
	Kind FindingKind
	// Name is the qualified name ("<domain>/<name>") the finding is about.
	Name string
	// Capacity tells whether Name was read from device.capacity.
	Capacity bool
	// Message explains the problem and how to fix it.
	Message string
}

// Outcome is the result of an expression on one device.
type Outcome struct {
	// Device is "<driver>/<device name>".
	Device string
	// Matched is the verdict when Err is nil.
	Matched bool
	// Err is the *EvalError when evaluation failed.
	Err error
}

// LintReport is what Lint found out about one expression.
type LintReport struct {
	Expression string
	// Findings are static problems, in the order the names appear.
	Findings []Finding
	// Outcomes holds one entry per device, in the order given.
	Outcomes []Outcome
}

// Lint explains a selector against a set of devices: the attribute and
// capacity names it reads that no device publishes, the places it uses a
// value as a type the devices do not publish it as, and the outcome on every
// device (match, no match, or the runtime error). Kubernetes reports none
// of this until a pod fails to schedule. A compile error is returned as is.
func (e *Env) Lint(ctx context.Context, expression string, devices []*Device) (*LintReport, error) {
	sel, err := e.Compile(expression)
	if err != nil {
		return nil, err
	}
	report := &LintReport{Expression: expression, Outcomes: make([]Outcome, len(devices))}
	for i, d := range devices {
		matched, err := sel.Matches(ctx, d)
		report.Outcomes[i] = Outcome{Device: d.Name(), Matched: matched, Err: err}
	}
	for _, r := range collectReferences(sel.program.ast.NativeRep()) {
		report.Findings = append(report.Findings, r.check(devices)...)
	}
	return report, nil
}

// reference is one read of device.attributes[domain].name or
// device.capacity[domain].name in an expression.
type reference struct {
	capacity     bool
	domain, name string
	// use is the expression that consumes the value (nil: the result),
	// via the operand of use that carries it (self, or self unwrapped by
	// orValue()/value()).
	use, via ast.NavigableExpr
	// self is the expression that yields the value.
	self ast.NavigableExpr
}

func (r reference) qualified() string { return r.domain + "/" + r.name }

func (r reference) field() string {
	if r.capacity {
		return "capacity"
	}
	return "attribute"
}

// domainMap identifies device.attributes["<domain>"] or
// device.capacity["<domain>"], directly or through a cel.bind variable.
type domainMap struct {
	capacity bool
	domain   string
}

func collectReferences(a *ast.AST) []reference {
	var refs []reference
	binds := map[string]domainMap{}
	var visit func(e ast.NavigableExpr)
	visit = func(e ast.NavigableExpr) {
		if e.Kind() == ast.ComprehensionKind {
			c := e.AsComprehension()
			if dm, ok := asDomainMap(c.AccuInit(), binds); ok {
				binds[c.AccuVar()] = dm
			}
		}
		if r, ok := asReference(e, binds); ok {
			r.self = e
			r.use, r.via = consumer(e)
			refs = append(refs, r)
		}
		for _, child := range e.Children() {
			visit(child)
		}
	}
	visit(ast.NavigateAST(a))
	return refs
}

func asDomainMap(e ast.Expr, binds map[string]domainMap) (domainMap, bool) {
	switch e.Kind() {
	case ast.IdentKind:
		dm, ok := binds[e.AsIdent()]
		return dm, ok
	case ast.CallKind:
		call := e.AsCall()
		if call.FunctionName() != operators.Index || len(call.Args()) != 2 {
			return domainMap{}, false
		}
		domain, ok := stringLiteral(call.Args()[1])
		if !ok {
			return domainMap{}, false
		}
		m := call.Args()[0]
		if m.Kind() != ast.SelectKind || m.AsSelect().IsTestOnly() {
			return domainMap{}, false
		}
		sel := m.AsSelect()
		if sel.Operand().Kind() != ast.IdentKind || sel.Operand().AsIdent() != deviceVar {
			return domainMap{}, false
		}
		switch sel.FieldName() {
		case attributesVar:
			return domainMap{domain: domain}, true
		case capacityVar:
			return domainMap{capacity: true, domain: domain}, true
		}
	}
	return domainMap{}, false
}

func asReference(e ast.Expr, binds map[string]domainMap) (reference, bool) {
	var operand ast.Expr
	var name string
	switch e.Kind() {
	case ast.SelectKind:
		sel := e.AsSelect()
		operand, name = sel.Operand(), sel.FieldName()
	case ast.CallKind:
		call := e.AsCall()
		switch call.FunctionName() {
		case operators.Index, operators.OptIndex, operators.OptSelect:
			if len(call.Args()) != 2 {
				return reference{}, false
			}
			s, ok := stringLiteral(call.Args()[1])
			if !ok {
				return reference{}, false
			}
			operand, name = call.Args()[0], s
		default:
			return reference{}, false
		}
	default:
		return reference{}, false
	}
	dm, ok := asDomainMap(operand, binds)
	if !ok {
		return reference{}, false
	}
	return reference{capacity: dm.capacity, domain: dm.domain, name: name}, true
}

func stringLiteral(e ast.Expr) (string, bool) {
	if e.Kind() != ast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().(types.String)
	return string(s), ok
}

// consumer returns the expression that uses the value of e, looking through
// optional unwrapping (.?name.orValue(x), .value()), and its operand that
// carries the value.
func consumer(e ast.NavigableExpr) (ast.NavigableExpr, ast.NavigableExpr) {
	for {
		parent, ok := e.Parent()
		if !ok {
			return nil, e
		}
		if parent.Kind() == ast.CallKind {
			call := parent.AsCall()
			if (call.FunctionName() == "orValue" || call.FunctionName() == "value") && call.IsMemberFunction() && call.Target().ID() == e.ID() {
				e = parent
				continue
			}
		}
		return parent, e
	}
}

// valueKind names how a device publishes a value: int, bool, string,
// version, quantity, or list.
func valueKind(v ref.Val) string {
	switch v.(type) {
	case types.Int:
		return "int"
	case types.Bool:
		return "bool"
	case types.String:
		return "string"
	case *semverVal:
		return "version"
	case *quantityVal:
		return "quantity"
	case traits.Lister:
		return "list"
	}
	return v.Type().TypeName()
}

// check compares the reference with what the devices publish.
func (r reference) check(devices []*Device) []Finding {
	kinds := map[string]int{}
	otherPlace := false
	for _, d := range devices {
		if d == nil {
			continue
		}
		own, other := d.attrs, d.caps
		if r.capacity {
			own, other = d.caps, d.attrs
		}
		if v, ok := own.value(r.domain, r.name); ok {
			kinds[valueKind(v)]++
		}
		if _, ok := other.value(r.domain, r.name); ok {
			otherPlace = true
		}
	}
	if len(kinds) == 0 {
		msg := fmt.Sprintf("%s %s is not published by any of the %d devices", r.field(), r.qualified(), len(devices))
		if guess := r.closestPublished(devices); guess != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", guess)
		}
		if otherPlace {
			if r.capacity {
				msg += fmt.Sprintf("; it is an attribute: use device.attributes[%q].%s", r.domain, r.name)
			} else {
				msg += fmt.Sprintf("; it is a capacity: use device.capacity[%q].%s", r.domain, r.name)
			}
		} else if !r.isPresenceGuarded() {
			msg += "; the lookup fails on every device (guard it with has() or use optional chaining if that is intended)"
		}
		return []Finding{{Kind: UnknownName, Name: r.qualified(), Capacity: r.capacity, Message: msg}}
	}
	want, how := r.expectedKinds()
	if want == nil {
		return nil
	}
	var findings []Finding
	for _, k := range sortedKeys(kinds) {
		if slices.Contains(want, k) {
			continue
		}
		msg := fmt.Sprintf("%s %s is published as %s on %d of the %d devices, but %s", r.field(), r.qualified(), k, kinds[k], len(devices), how)
		if k == "version" && slices.Contains(want, "string") {
			msg += fmt.Sprintf("; compare versions with semver(...), e.g. %s.%s.compareTo(semver(\"1.0.0\")) >= 0", domainExpr(r), r.name)
		}
		findings = append(findings, Finding{Kind: TypeMismatch, Name: r.qualified(), Capacity: r.capacity, Message: msg})
	}
	return findings
}

func domainExpr(r reference) string {
	if r.capacity {
		return fmt.Sprintf("device.capacity[%q]", r.domain)
	}
	return fmt.Sprintf("device.attributes[%q]", r.domain)
}

// isPresenceGuarded reports whether the read itself tolerates absence:
// has(...) or optional chaining.
func (r reference) isPresenceGuarded() bool {
	switch r.self.Kind() {
	case ast.SelectKind:
		return r.self.AsSelect().IsTestOnly()
	case ast.CallKind:
		fn := r.self.AsCall().FunctionName()
		return fn == operators.OptSelect || fn == operators.OptIndex
	}
	return false
}

var (
	comparisons = map[string]string{
		operators.Equals: "==", operators.NotEquals: "!=", operators.Less: "<",
		operators.LessEquals: "<=", operators.Greater: ">", operators.GreaterEquals: ">=",
	}
	// memberKinds lists the kinds a member function accepts as receiver.
	memberKinds = map[string][]string{
		"compareTo": {"version", "quantity"}, "isGreaterThan": {"version", "quantity"}, "isLessThan": {"version", "quantity"},
		"major": {"version"}, "minor": {"version"}, "patch": {"version"},
		"asInteger": {"quantity"}, "asApproximateFloat": {"quantity"}, "isInteger": {"quantity"}, "add": {"quantity"}, "sub": {"quantity"},
		"startsWith": {"string"}, "endsWith": {"string"}, "contains": {"string"}, "matches": {"string"},
		"lowerAscii": {"string"}, "upperAscii": {"string"}, "split": {"string"}, "find": {"string"}, "findAll": {"string"},
		"charAt": {"string"}, "substring": {"string"}, "replace": {"string"}, "trim": {"string"},
		"size": {"string", "list"}, "isSorted": {"list"}, "sum": {"list"}, "min": {"list"}, "max": {"list"},
	}
)

// expectedKinds derives from how the value is used which kinds make sense;
// nil when the use says nothing about the type.
func (r reference) expectedKinds() ([]string, string) {
	if r.isPresenceGuarded() && r.self.Kind() == ast.SelectKind {
		return nil, "" // has(): any kind
	}
	use := r.use
	if use == nil {
		return []string{"bool"}, "the expression must yield a bool"
	}
	if use.Kind() != ast.CallKind {
		return nil, ""
	}
	call := use.AsCall()
	fn := call.FunctionName()
	switch fn {
	case operators.LogicalAnd, operators.LogicalOr, operators.LogicalNot:
		return []string{"bool"}, "it is used as a condition"
	}
	if op, ok := comparisons[fn]; ok && len(call.Args()) == 2 {
		other := call.Args()[0]
		if other.ID() == r.via.ID() {
			other = call.Args()[1]
		}
		k, desc := literalKind(other)
		if k == "" {
			return nil, ""
		}
		return []string{k}, fmt.Sprintf("it is compared (%s) with %s", op, desc)
	}
	if call.IsMemberFunction() && call.Target().ID() == r.via.ID() {
		if kinds, ok := memberKinds[fn]; ok {
			return kinds, fmt.Sprintf("%s() needs a %s", fn, strings.Join(kinds, " or "))
		}
	}
	return nil, ""
}

// literalKind tells the kind of a literal or of a semver()/quantity() call.
func literalKind(e ast.Expr) (string, string) {
	switch e.Kind() {
	case ast.LiteralKind:
		switch v := e.AsLiteral().(type) {
		case types.String:
			return "string", fmt.Sprintf("the string %q", string(v))
		case types.Int:
			return "int", fmt.Sprintf("the int %d", int64(v))
		case types.Uint:
			return "int", fmt.Sprintf("the uint %d", uint64(v))
		case types.Double:
			return "int", fmt.Sprintf("the double %v", float64(v))
		case types.Bool:
			return "bool", fmt.Sprintf("the bool %v", bool(v))
		}
	case ast.CallKind:
		switch e.AsCall().FunctionName() {
		case "semver":
			return "version", "a semver"
		case "quantity":
			return "quantity", "a quantity"
		}
	case ast.ListKind:
		return "list", "a list"
	}
	return "", ""
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// closestPublished suggests a published name the reference may have meant:
// the same name in another domain, or a name of the same domain within two
// edits ("architecure" for "architecture").
func (r reference) closestPublished(devices []*Device) string {
	best, bestDist := "", 3
	for _, d := range devices {
		if d == nil {
			continue
		}
		m := d.attrs
		if r.capacity {
			m = d.caps
		}
		for i, domain := range m.names {
			for _, name := range m.vals[i].(*stringMap).names {
				dist := 3
				switch {
				case domain == r.domain:
					dist = editDistance(name, r.name, 3)
				case name == r.name:
					dist = 2
				}
				q := domain + "/" + name
				if dist < bestDist || dist == bestDist && best != "" && q < best {
					best, bestDist = q, dist
				}
			}
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, or limit when it is
// at least limit.
func editDistance(a, b string, limit int) int {
	if d := len(a) - len(b); d >= limit || -d >= limit {
		return limit
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], limit)
}
