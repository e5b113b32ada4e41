package celenv

import (
	"errors"
	"reflect"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// semverType is the CEL type of semantic versions, named as in the
// Kubernetes CEL environment.
var semverType = cel.ObjectType("kubernetes.Semver")

// semverVal is a parsed semantic version as a CEL value. Version attributes
// are parsed once, when a Device is prepared, and kept behind a pointer so
// that passing them around does not copy or allocate.
type semverVal struct {
	v semver.Version
}

var _ ref.Val = (*semverVal)(nil)

func (v *semverVal) ConvertToNative(typeDesc reflect.Type) (any, error) {
	return nativeOf(v.v, v.v.String, "Semver", typeDesc)
}

func (v *semverVal) ConvertToType(typeVal ref.Type) ref.Val {
	return convertOpaque(v, semverType, nil, typeVal)
}

func (v *semverVal) Equal(other ref.Val) ref.Val {
	o, ok := other.(*semverVal)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(v.v.EQ(o.v))
}

func (v *semverVal) Type() ref.Type { return semverType }

// Value returns semver.Version, as Kubernetes does.
func (v *semverVal) Value() any { return v.v }

// semverLibrary declares the Kubernetes semver functions (library version 1,
// which adds the normalizing overloads of semver and isSemver).
type semverLibrary struct{}

func (semverLibrary) LibraryName() string { return "kubernetes.Semver" }

func (semverLibrary) CompileOptions() []cel.EnvOption {
	s := semverType
	return []cel.EnvOption{
		cel.Function("semver",
			cel.Overload("string_to_semver", []*cel.Type{cel.StringType}, s, cel.UnaryBinding(func(arg ref.Val) ref.Val {
				return stringToSemver(arg, types.False)
			})),
			cel.Overload("string_bool_to_semver", []*cel.Type{cel.StringType, cel.BoolType}, s, cel.BinaryBinding(stringToSemver))),
		cel.Function("isSemver",
			cel.Overload("is_semver_string", []*cel.Type{cel.StringType}, cel.BoolType, cel.UnaryBinding(func(arg ref.Val) ref.Val {
				return isSemver(arg, types.False)
			})),
			cel.Overload("is_semver_string_bool", []*cel.Type{cel.StringType, cel.BoolType}, cel.BoolType, cel.BinaryBinding(isSemver))),
		cel.Function("isGreaterThan",
			cel.MemberOverload("semver_is_greater_than", []*cel.Type{s, s}, cel.BoolType, cel.BinaryBinding(semverBinary(func(a, b *semver.Version) ref.Val {
				return types.Bool(a.Compare(*b) == 1)
			})))),
		cel.Function("isLessThan",
			cel.MemberOverload("semver_is_less_than", []*cel.Type{s, s}, cel.BoolType, cel.BinaryBinding(semverBinary(func(a, b *semver.Version) ref.Val {
				return types.Bool(a.Compare(*b) == -1)
			})))),
		cel.Function("compareTo",
			cel.MemberOverload("semver_compare_to", []*cel.Type{s, s}, cel.IntType, cel.BinaryBinding(semverBinary(func(a, b *semver.Version) ref.Val {
				return types.Int(a.Compare(*b))
			})))),
		cel.Function("major",
			cel.MemberOverload("semver_major", []*cel.Type{s}, cel.IntType, cel.UnaryBinding(semverUnary(func(v *semver.Version) ref.Val {
				return types.Int(v.Major)
			})))),
		cel.Function("minor",
			cel.MemberOverload("semver_minor", []*cel.Type{s}, cel.IntType, cel.UnaryBinding(semverUnary(func(v *semver.Version) ref.Val {
				return types.Int(v.Minor)
			})))),
		cel.Function("patch",
			cel.MemberOverload("semver_patch", []*cel.Type{s}, cel.IntType, cel.UnaryBinding(semverUnary(func(v *semver.Version) ref.Val {
				return types.Int(v.Patch)
			})))),
	}
}

func (semverLibrary) ProgramOptions() []cel.ProgramOption { return nil }

var stringToSemver = binaryOf(func(s types.String, normalize types.Bool) ref.Val {
	v, err := parseSemver(string(s), bool(normalize))
	if err != nil {
		return types.WrapErr(err)
	}
	return &semverVal{v: v}
})

var isSemver = binaryOf(func(s types.String, normalize types.Bool) ref.Val {
	_, err := parseSemver(string(s), bool(normalize))
	return types.Bool(err == nil)
})

// parseSemver parses strictly (semver.org 2.0.0) or, with normalize, the way
// Kubernetes' semver(s, true) does: a leading "v" is dropped, leading zeros
// in the first three components are removed and missing minor/patch
// components become zero ("v1.02" is 1.2.0). A short version may not carry
// pre-release or build metadata.
func parseSemver(s string, normalize bool) (semver.Version, error) {
	if !normalize {
		return semver.Parse(s)
	}
	s = strings.TrimPrefix(s, "v")
	parts := strings.SplitN(s, ".", 3)
	for i, p := range parts {
		if len(p) <= 1 {
			continue
		}
		p = strings.TrimLeft(p, "0")
		// A component that was all zeros, or whose digits were followed
		// directly by pre-release/build text, keeps a single zero.
		if p == "" || p[0] < '0' || p[0] > '9' {
			p = "0" + p
		}
		parts[i] = p
	}
	if len(parts) < 3 {
		if strings.ContainsAny(parts[len(parts)-1], "+-") {
			return semver.Version{}, errors.New("short version cannot contain PreRelease/Build meta data")
		}
		for len(parts) < 3 {
			parts = append(parts, "0")
		}
	}
	return semver.Parse(strings.Join(parts, "."))
}

func semverUnary(f func(*semver.Version) ref.Val) func(ref.Val) ref.Val {
	return unaryOf(func(v *semverVal) ref.Val { return f(&v.v) })
}

func semverBinary(f func(a, b *semver.Version) ref.Val) func(ref.Val, ref.Val) ref.Val {
	return binaryOf(func(a, b *semverVal) ref.Val { return f(&a.v, &b.v) })
}
