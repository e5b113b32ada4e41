package celenv

import (
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
)

// foldConstantCalls evaluates quantity("...") and semver("...") with
// constant arguments once, when the program is planned, instead of parsing
// the literal on every evaluation. Only programs without cost tracking use
// it, because it removes the parse cost Kubernetes charges.
func foldConstantCalls(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
	call, ok := i.(interpreter.InterpretableCall)
	if !ok {
		return i, nil
	}
	var val ref.Val
	switch args := call.Args(); {
	case call.Function() == "quantity" && len(args) == 1:
		if c, ok := args[0].(interpreter.InterpretableConst); ok {
			val = stringToQuantity(c.Value())
			if q, ok := val.(*quantityVal); ok {
				_ = q.q.String() // fill the cache before the value is shared
			}
		}
	case call.Function() == "semver" && len(args) == 1:
		if c, ok := args[0].(interpreter.InterpretableConst); ok {
			val = stringToSemver(c.Value(), types.False)
		}
	case call.Function() == "semver" && len(args) == 2:
		c0, ok0 := args[0].(interpreter.InterpretableConst)
		c1, ok1 := args[1].(interpreter.InterpretableConst)
		if ok0 && ok1 {
			val = stringToSemver(c0.Value(), c1.Value())
		}
	}
	if val == nil || types.IsError(val) {
		return i, nil
	}
	return interpreter.NewConstValue(call.ID(), val), nil
}
