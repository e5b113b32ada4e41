package celenv

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// Run-time bounds beyond Kubernetes' cost model.
//
// Kubernetes charges a call after it returns, by the size of its arguments.
// Three kinds of call can therefore do unbounded work before the cost limit
// is consulted, in Kubernetes as well:
//
//   - calls dispatched at run time (an operand of type dyn, such as an
//     attribute value): cel-go charges them 1 whatever the operands, so
//     doubling a string attribute 30 times costs 30;
//   - list concatenation, charged 1 while the result grows: l + l
//     repeated makes a list of 2^n elements for the price of n, and walking
//     a list concatenated n times takes time in n;
//   - producers whose result outgrows their price: format (charged by the
//     format string; "%s%s".format([s, s]) doubles s), replace (charged by
//     the target; s.replace("", s) squares s) and join.
//
// celenv closes these gaps at run time, so that the cost limit bounds time
// and memory: calls dispatched at run time are charged what the overload
// they reach is charged when it is chosen at compile time; every call that
// builds a string, bytes or list is charged at least the size of its result
// (a tenth per character, one per list element; list concatenation one per
// element of its shorter operand); and format, replace and
// join refuse, before allocating, a result whose size alone would exceed
// the cost limit. An evaluation that stays within the limit in Kubernetes
// without building such values costs the same here.

// errResultTooLarge is the cause when a call would build a value whose
// size alone exceeds the cost limit.
var errResultTooLarge = errors.New("operation cancelled: actual cost limit exceeded")

// builders are the functions whose result is a new string, bytes or list.
// Calls that return a value that already exists (index, select, optional
// access) are not among them: they are charged as in Kubernetes.
var builders = map[string]bool{
	"_+_": true, "format": true, "replace": true, "join": true, "split": true, "strings.quote": true,
	"lowerAscii": true, "upperAscii": true, "trim": true, "substring": true, "reverse": true,
	"string": true, "bytes": true, "sort": true, "distinct": true, "flatten": true, "slice": true,
	"lists.range": true, "findAll": true,
}

// builderCost is the least a call of a builder is charged: what reading
// its result once costs, except for list concatenation, which costs the
// shorter operand (the part copied). Charging the whole result would make
// the appends of map and filter, which Kubernetes charges 1, quadratic.
func builderCost(function string, args []ref.Val, result ref.Val) uint64 {
	if function == "_+_" && len(args) == 2 {
		a, aList := args[0].(traits.Lister)
		b, bList := args[1].(traits.Lister)
		if aList && bList {
			return min(actualSize(a), actualSize(b))
		}
	}
	return resultCost(result)
}

// resultCost is what reading v once costs: a tenth per character or byte,
// one per list element.
func resultCost(v ref.Val) uint64 {
	switch v := v.(type) {
	case types.String:
		return uint64(math.Ceil(float64(len(v)) * common.StringTraversalCostFactor))
	case types.Bytes:
		return uint64(math.Ceil(float64(len(v)) * common.StringTraversalCostFactor))
	case traits.Lister:
		if n, ok := v.Size().(types.Int); ok {
			return uint64(n)
		}
	}
	return 0
}

// dynamicCallCost charges a call dispatched at run time what cel-go charges
// the overload it reaches when that is chosen at compile time. nil leaves
// the call to cel-go's default.
func dynamicCallCost(function string, args []ref.Val) *uint64 {
	scaled := func(n uint64) uint64 { return uint64(math.Ceil(float64(n) * common.StringTraversalCostFactor)) }
	var c uint64
	switch function {
	case "_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_":
		if len(args) != 2 || !sized(args[0]) || !sized(args[1]) {
			return nil
		}
		c = scaled(min(actualSize(args[0]), actualSize(args[1])))
	case "startsWith", "endsWith":
		if len(args) != 2 {
			return nil
		}
		c = scaled(actualSize(args[1]))
	case "contains":
		if len(args) != 2 {
			return nil
		}
		c = scaled(actualSize(args[0])) * scaled(actualSize(args[1]))
	case "matches":
		if len(args) != 2 {
			return nil
		}
		c = uint64(math.Ceil((1+float64(actualSize(args[0])))*common.StringTraversalCostFactor)) *
			uint64(math.Ceil(float64(actualSize(args[1]))*common.RegexStringLengthCostFactor))
	case "@in":
		if len(args) != 2 {
			return nil
		}
		c = actualSize(args[1])
	default:
		return nil
	}
	return &c
}

// sized reports whether v is a value cel-go prices by its size.
func sized(v ref.Val) bool {
	switch v.(type) {
	case types.String, types.Bytes, traits.Lister, traits.Mapper:
		return true
	}
	return false
}

// guardedBuilders rebinds format, replace and join of base so that they
// refuse a result longer than maxSize before building it. The declarations
// stay as they are; only the implementations are wrapped.
func guardedBuilders(base *cel.Env, maxSize uint64) ([]cel.EnvOption, error) {
	bounds := map[string]func(args []ref.Val) uint64{
		"format":  formatBound,
		"replace": replaceBound,
		"join":    joinBound,
	}
	var opts []cel.EnvOption
	for name, bound := range bounds {
		decl, ok := base.Functions()[name]
		if !ok {
			continue
		}
		impls, err := decl.Bindings()
		if err != nil {
			return nil, err
		}
		byID := map[string]func(args ...ref.Val) ref.Val{}
		for _, o := range impls {
			byID[o.Operator] = callOf(o.Unary, o.Binary, o.Function)
		}
		var overloads []cel.FunctionOpt
		for _, o := range decl.OverloadDecls() {
			impl := byID[o.ID()]
			if impl == nil {
				continue
			}
			guarded := func(args ...ref.Val) ref.Val {
				if n := bound(args); n > maxSize {
					return types.WrapErr(fmt.Errorf("%w: %s would build a result of up to %d characters", errResultTooLarge, name, n))
				}
				return impl(args...)
			}
			var binding cel.OverloadOpt
			switch len(o.ArgTypes()) {
			case 1:
				binding = cel.UnaryBinding(func(a ref.Val) ref.Val { return guarded(a) })
			case 2:
				binding = cel.BinaryBinding(func(a, b ref.Val) ref.Val { return guarded(a, b) })
			default:
				binding = cel.FunctionBinding(guarded)
			}
			if o.IsMemberFunction() {
				overloads = append(overloads, cel.MemberOverload(o.ID(), o.ArgTypes(), o.ResultType(), binding))
			} else {
				overloads = append(overloads, cel.Overload(o.ID(), o.ArgTypes(), o.ResultType(), binding))
			}
		}
		opts = append(opts, cel.Function(name, overloads...))
	}
	return opts, nil
}

// callOf turns the bindings of one overload into a variadic call.
func callOf(unary func(ref.Val) ref.Val, binary func(ref.Val, ref.Val) ref.Val, fn func(...ref.Val) ref.Val) func(args ...ref.Val) ref.Val {
	return func(args ...ref.Val) ref.Val {
		switch {
		case len(args) == 1 && unary != nil:
			return unary(args[0])
		case len(args) == 2 && binary != nil:
			return binary(args[0], args[1])
		case fn != nil:
			return fn(args...)
		}
		return types.NoSuchOverloadErr()
	}
}

// maxResultSize is the longest string a call may build under costLimit:
// reading it once would cost the whole limit.
func maxResultSize(costLimit uint64) uint64 {
	if costLimit > math.MaxUint64/10 {
		return math.MaxUint64
	}
	return costLimit * 10
}

// replaceBound is the length of s.replace(old, new[, n]).
func replaceBound(args []ref.Val) uint64 {
	if len(args) < 3 {
		return 0
	}
	s, ok1 := args[0].(types.String)
	old, ok2 := args[1].(types.String)
	repl, ok3 := args[2].(types.String)
	if !ok1 || !ok2 || !ok3 || len(repl) <= len(old) {
		return 0
	}
	var count uint64
	if old == "" {
		count = uint64(utf8.RuneCountInString(string(s))) + 1
	} else {
		count = uint64(strings.Count(string(s), string(old)))
	}
	if len(args) > 3 {
		if n, ok := args[3].(types.Int); ok && n >= 0 && uint64(n) < count {
			count = uint64(n)
		}
	}
	return satAdd(uint64(len(s)), satMul(count, uint64(len(repl)-len(old))))
}

// joinBound is the length of list.join([separator]).
func joinBound(args []ref.Val) uint64 {
	if len(args) == 0 {
		return 0
	}
	l, ok := args[0].(traits.Lister)
	if !ok {
		return 0
	}
	n, _ := l.Size().(types.Int)
	var sep uint64
	if len(args) > 1 {
		if s, ok := args[1].(types.String); ok {
			sep = uint64(len(s))
		}
	}
	total := satMul(uint64(max(n, 0)), sep)
	for it := l.Iterator(); it.HasNext() == types.True; {
		total = satAdd(total, renderBound(it.Next()))
	}
	return total
}

// formatBound bounds the length of format.format(args): every verb prints
// at most the longest argument, padded to the widest number the format
// names.
func formatBound(args []ref.Val) uint64 {
	if len(args) < 2 {
		return 0
	}
	f, ok := args[0].(types.String)
	if !ok {
		return 0
	}
	verbs := uint64(strings.Count(string(f), "%"))
	var widest, run uint64
	for _, r := range string(f) {
		if r >= '0' && r <= '9' {
			run = satAdd(satMul(run, 10), uint64(r-'0'))
			widest = max(widest, run)
			continue
		}
		run = 0
	}
	var longest uint64
	if l, ok := args[1].(traits.Lister); ok {
		for it := l.Iterator(); it.HasNext() == types.True; {
			longest = max(longest, renderBound(it.Next()))
		}
	}
	per := satAdd(satAdd(longest, widest), 64)
	return satAdd(uint64(len(f)), satMul(verbs, per))
}

// renderBound bounds the length of v printed by format or join.
func renderBound(v ref.Val) uint64 {
	switch v := v.(type) {
	case types.String:
		return 2 * uint64(len(v))
	case types.Bytes:
		return 2 * uint64(len(v))
	case traits.Lister:
		total := uint64(2)
		for it := v.Iterator(); it.HasNext() == types.True; {
			total = satAdd(total, satAdd(renderBound(it.Next()), 2))
		}
		return total
	case traits.Mapper:
		total := uint64(2)
		for it := v.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			total = satAdd(total, satAdd(satAdd(renderBound(k), renderBound(v.Get(k))), 4))
		}
		return total
	}
	return 64
}

func satAdd(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}

func satMul(a, b uint64) uint64 {
	if a != 0 && b > math.MaxUint64/a {
		return math.MaxUint64
	}
	return a * b
}
