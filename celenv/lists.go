package celenv

import (
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// listsLibrary declares the Kubernetes list functions at library version 1
// (the version Kubernetes 1.37 stores expressions with): isSorted, sum, min,
// max, indexOf, lastIndexOf and, from version 1, includes.
type listsLibrary struct {
	// withIncludes adds includes (library version 1).
	withIncludes bool
}

func (listsLibrary) LibraryName() string { return "kubernetes.lists" }

type namedType struct {
	name string
	t    *cel.Type
}

var (
	summableTypes = []namedType{
		{"int", cel.IntType}, {"uint", cel.UintType}, {"double", cel.DoubleType}, {"duration", cel.DurationType},
	}
	comparableTypes = []namedType{
		{"int", cel.IntType}, {"uint", cel.UintType}, {"double", cel.DoubleType}, {"bool", cel.BoolType},
		{"duration", cel.DurationType}, {"timestamp", cel.TimestampType}, {"string", cel.StringType}, {"bytes", cel.BytesType},
	}
	zeroOfSummable = map[string]ref.Val{
		"int": types.Int(0), "uint": types.Uint(0), "double": types.Double(0), "duration": types.Duration{},
	}
)

func (l listsLibrary) CompileOptions() []cel.EnvOption {
	var isSorted, sum, maxOv, minOv []cel.FunctionOpt
	for _, t := range comparableTypes {
		isSorted = append(isSorted, cel.MemberOverload("list_"+t.name+"_is_sorted_bool",
			[]*cel.Type{cel.ListType(t.t)}, cel.BoolType, cel.UnaryBinding(listIsSorted)))
		maxOv = append(maxOv, cel.MemberOverload("list_"+t.name+"_max_"+t.name,
			[]*cel.Type{cel.ListType(t.t)}, t.t, cel.UnaryBinding(listExtreme("max", types.IntNegOne))))
		minOv = append(minOv, cel.MemberOverload("list_"+t.name+"_min_"+t.name,
			[]*cel.Type{cel.ListType(t.t)}, t.t, cel.UnaryBinding(listExtreme("min", types.IntOne))))
	}
	for _, t := range summableTypes {
		zero := zeroOfSummable[t.name]
		sum = append(sum, cel.MemberOverload("list_"+t.name+"_sum_"+t.name,
			[]*cel.Type{cel.ListType(t.t)}, t.t, cel.UnaryBinding(listSum(zero))))
	}
	paramA := cel.TypeParamType("A")
	opts := []cel.EnvOption{
		cel.Function("isSorted", isSorted...),
		cel.Function("sum", sum...),
		cel.Function("max", maxOv...),
		cel.Function("min", minOv...),
		cel.Function("indexOf", cel.MemberOverload("list_a_index_of_int",
			[]*cel.Type{cel.ListType(paramA), paramA}, cel.IntType, cel.BinaryBinding(listIndexOf))),
		cel.Function("lastIndexOf", cel.MemberOverload("list_a_last_index_of_int",
			[]*cel.Type{cel.ListType(paramA), paramA}, cel.IntType, cel.BinaryBinding(listLastIndexOf))),
	}
	if l.withIncludes {
		opts = append(opts, cel.Function("includes", cel.MemberOverload("list_includes_dyn_dyn",
			[]*cel.Type{cel.DynType, cel.DynType}, cel.BoolType, cel.BinaryBinding(listIncludes))))
	}
	return opts
}

func (listsLibrary) ProgramOptions() []cel.ProgramOption { return nil }

func listIsSorted(val ref.Val) ref.Val {
	iterable, ok := val.(traits.Iterable)
	if !ok {
		return types.MaybeNoSuchOverloadErr(val)
	}
	var prev traits.Comparer
	for it := iterable.Iterator(); it.HasNext() == types.True; {
		next := it.Next()
		nextCmp, ok := next.(traits.Comparer)
		if !ok {
			return types.MaybeNoSuchOverloadErr(next)
		}
		if prev != nil && prev.Compare(next) == types.IntOne {
			return types.False
		}
		prev = nextCmp
	}
	return types.True
}

func listSum(zero ref.Val) func(ref.Val) ref.Val {
	return func(val ref.Val) ref.Val {
		acc, ok := zero.(traits.Adder)
		if !ok {
			return types.MaybeNoSuchOverloadErr(zero)
		}
		iterable, ok := val.(traits.Iterable)
		if !ok {
			return types.MaybeNoSuchOverloadErr(val)
		}
		for it := iterable.Iterator(); it.HasNext() == types.True; {
			next := it.Next()
			if _, ok := next.(traits.Adder); !ok {
				return types.MaybeNoSuchOverloadErr(next)
			}
			s := acc.Add(next)
			sum, ok := s.(traits.Adder)
			if !ok {
				return types.MaybeNoSuchOverloadErr(s)
			}
			acc = sum
		}
		return acc.(ref.Val)
	}
}

// listExtreme returns min (prefer = 1: replace the result when it compares
// greater) or max (prefer = -1).
func listExtreme(name string, prefer ref.Val) func(ref.Val) ref.Val {
	return func(val ref.Val) ref.Val {
		iterable, ok := val.(traits.Iterable)
		if !ok {
			return types.MaybeNoSuchOverloadErr(val)
		}
		var result traits.Comparer
		for it := iterable.Iterator(); it.HasNext() == types.True; {
			next := it.Next()
			nextCmp, ok := next.(traits.Comparer)
			if !ok {
				return types.MaybeNoSuchOverloadErr(next)
			}
			if result == nil || result.Compare(next) == prefer {
				result = nextCmp
			}
		}
		if result == nil {
			return types.NewErr("%s called on empty list", name)
		}
		return result.(ref.Val)
	}
}

func listIndexOf(list, item ref.Val) ref.Val {
	lister, ok := list.(traits.Lister)
	if !ok {
		return types.MaybeNoSuchOverloadErr(list)
	}
	size := lister.Size().(types.Int)
	for i := types.Int(0); i < size; i++ {
		if lister.Get(i).Equal(item) == types.True {
			return i
		}
	}
	return types.IntNegOne
}

func listLastIndexOf(list, item ref.Val) ref.Val {
	lister, ok := list.(traits.Lister)
	if !ok {
		return types.MaybeNoSuchOverloadErr(list)
	}
	for i := lister.Size().(types.Int) - 1; i >= 0; i-- {
		if lister.Get(i).Equal(item) == types.True {
			return i
		}
	}
	return types.IntNegOne
}

// listIncludes is true when target is a list holding arg, or when target is
// a scalar equal to arg: list-type attributes may hold one value or many,
// and includes reads the same for both.
func listIncludes(target, arg ref.Val) ref.Val {
	if list, ok := target.(traits.Lister); ok {
		for it := list.Iterator(); it.HasNext() == types.True; {
			if it.Next().Equal(arg) == types.True {
				return types.True
			}
		}
		return types.False
	}
	if target.Equal(arg) == types.True {
		return types.True
	}
	return types.False
}
