package celenv

import (
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
)

// stringConstructors are the pure functions from a string literal to a
// Kubernetes value that selectors typically call with a constant.
var stringConstructors = map[string]func(ref.Val) ref.Val{
	"quantity": stringToQuantity,
	"semver":   func(s ref.Val) ref.Val { return stringToSemver(s, types.False) },
	"ip":       stringToIP,
	"cidr":     stringToCIDR,
	"url":      stringToURL,
}

// foldConstantCalls evaluates quantity("..."), semver("...") (also with a
// constant normalize flag), ip("..."), cidr("...") and url("...") once,
// when the program is planned, instead of parsing the literal on every
// evaluation. Calls that fail are left alone so that they fail at runtime,
// as in Kubernetes. Only programs without cost tracking use this, because
// it removes the parse cost Kubernetes charges.
func foldConstantCalls(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
	call, ok := i.(interpreter.InterpretableCall)
	if !ok {
		return i, nil
	}
	args := call.Args()
	consts := make([]ref.Val, len(args))
	for n, a := range args {
		c, ok := a.(interpreter.InterpretableConst)
		if !ok {
			return i, nil
		}
		consts[n] = c.Value()
	}
	var val ref.Val
	switch {
	case len(consts) == 1:
		// Only string arguments: ip(cidr) is a member function of the
		// same name.
		if _, isString := consts[0].(types.String); !isString {
			return i, nil
		}
		if f, ok := stringConstructors[call.Function()]; ok {
			val = f(consts[0])
		}
	case len(consts) == 2 && call.Function() == "semver":
		val = stringToSemver(consts[0], consts[1])
	}
	if val == nil || types.IsError(val) {
		return i, nil
	}
	if q, ok := val.(*quantityVal); ok {
		_ = q.q.String() // fill the cache before the value is shared
	}
	return interpreter.NewConstValue(call.ID(), val), nil
}
