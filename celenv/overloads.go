package celenv

import (
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// unaryOf adapts f to a CEL unary function whose argument must be a V. An argument of another type yields
// "no such overload" (or passes an error or unknown value through), as cel-go's own functions do.
func unaryOf[V ref.Val](f func(V) ref.Val) func(ref.Val) ref.Val {
	return func(arg ref.Val) ref.Val {
		v, ok := arg.(V)
		if !ok {
			return types.MaybeNoSuchOverloadErr(arg)
		}
		return f(v)
	}
}

// binaryOf adapts f to a CEL binary function whose arguments must be an A and a B; the first argument of the
// wrong type is the one reported.
func binaryOf[A, B ref.Val](f func(A, B) ref.Val) func(ref.Val, ref.Val) ref.Val {
	return func(arg, other ref.Val) ref.Val {
		a, ok := arg.(A)
		if !ok {
			return types.MaybeNoSuchOverloadErr(arg)
		}
		b, ok := other.(B)
		if !ok {
			return types.MaybeNoSuchOverloadErr(other)
		}
		return f(a, b)
	}
}
