package celenv

import (
	"regexp"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
)

// regexLibrary declares the Kubernetes regex functions find and findAll.
// Constant patterns are compiled once per program, as in Kubernetes.
type regexLibrary struct{}

func (regexLibrary) LibraryName() string { return "kubernetes.regex" }

func (regexLibrary) CompileOptions() []cel.EnvOption {
	return []cel.EnvOption{
		cel.Function("find", cel.MemberOverload("string_find_string",
			[]*cel.Type{cel.StringType, cel.StringType}, cel.StringType, cel.BinaryBinding(regexFind))),
		cel.Function("findAll",
			cel.MemberOverload("string_find_all_string", []*cel.Type{cel.StringType, cel.StringType},
				cel.ListType(cel.StringType), cel.BinaryBinding(func(s, re ref.Val) ref.Val {
					return regexFindAll(s, re, types.IntNegOne)
				})),
			cel.MemberOverload("string_find_all_string_int", []*cel.Type{cel.StringType, cel.StringType, cel.IntType},
				cel.ListType(cel.StringType), cel.FunctionBinding(func(args ...ref.Val) ref.Val {
					if len(args) != 3 {
						return types.NoSuchOverloadErr()
					}
					return regexFindAll(args[0], args[1], args[2])
				}))),
	}
}

func (regexLibrary) ProgramOptions() []cel.ProgramOption {
	return []cel.ProgramOption{cel.OptimizeRegex(
		&interpreter.RegexOptimization{Function: "find", RegexIndex: 1, Factory: compiledFind},
		&interpreter.RegexOptimization{Function: "findAll", RegexIndex: 1, Factory: compiledFindAll},
	)}
}

var regexFind = binaryOf(func(str, pattern types.String) ref.Val {
	re, err := regexp.Compile(string(pattern))
	if err != nil {
		return types.NewErr("Illegal regex: %v", err.Error())
	}
	return types.String(re.FindString(string(str)))
})

func regexFindAll(strVal, reVal, nVal ref.Val) ref.Val {
	str, ok := strVal.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(strVal)
	}
	pattern, ok := reVal.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(reVal)
	}
	n, ok := nVal.(types.Int)
	if !ok {
		return types.MaybeNoSuchOverloadErr(nVal)
	}
	re, err := regexp.Compile(string(pattern))
	if err != nil {
		return types.NewErr("Illegal regex: %v", err.Error())
	}
	return types.NewStringList(types.DefaultTypeAdapter, re.FindAllString(string(str), int(n)))
}

func compiledFind(call interpreter.InterpretableCall, pattern string) (interpreter.InterpretableCall, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	return interpreter.NewCall(call.ID(), call.Function(), call.OverloadID(), call.Args(), func(args ...ref.Val) ref.Val {
		if len(args) != 2 {
			return types.NoSuchOverloadErr()
		}
		in, ok := args[0].(types.String)
		if !ok {
			return types.MaybeNoSuchOverloadErr(args[0])
		}
		return types.String(re.FindString(string(in)))
	}), nil
}

func compiledFindAll(call interpreter.InterpretableCall, pattern string) (interpreter.InterpretableCall, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	return interpreter.NewCall(call.ID(), call.Function(), call.OverloadID(), call.Args(), func(args ...ref.Val) ref.Val {
		if len(args) < 2 || len(args) > 3 {
			return types.NoSuchOverloadErr()
		}
		in, ok := args[0].(types.String)
		if !ok {
			return types.MaybeNoSuchOverloadErr(args[0])
		}
		n := types.IntNegOne
		if len(args) == 3 {
			if n, ok = args[2].(types.Int); !ok {
				return types.MaybeNoSuchOverloadErr(args[2])
			}
		}
		return types.NewStringList(types.DefaultTypeAdapter, re.FindAllString(string(in), int(n)))
	}), nil
}
