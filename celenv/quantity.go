package celenv

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"k8s.io/apimachinery/pkg/api/resource"
)

// quantityType is the CEL type of Kubernetes quantities, named as in the
// Kubernetes CEL environment so that type errors read the same.
var quantityType = cel.ObjectType("kubernetes.Quantity")

// quantityVal is a resource.Quantity as a CEL value. Device capacities are
// converted to quantityVal once, when a Device is prepared.
//
// computed marks results of add and sub. Kubernetes represents those by
// pointer and its equality only accepts the value form on the right-hand
// side, so "a == b.add(c)" is a "no such overload" error there; computed
// reproduces that.
type quantityVal struct {
	q        resource.Quantity
	computed bool
	// outOfRange marks a value beyond the magnitudes celenv computes with
	// (see quantityInRange); every quantity function refuses it.
	outOfRange bool
}

// newQuantityVal wraps q, marking it when it is out of range.
func newQuantityVal(q resource.Quantity, computed bool) *quantityVal {
	return &quantityVal{q: q, computed: computed, outOfRange: !quantityInRange(&q)}
}

var _ ref.Val = (*quantityVal)(nil)

func (v *quantityVal) ConvertToNative(typeDesc reflect.Type) (any, error) {
	return nativeOf(&v.q, v.q.String, "Quantity", typeDesc)
}

func (v *quantityVal) ConvertToType(typeVal ref.Type) ref.Val {
	return convertOpaque(v, quantityType, nil, typeVal)
}

func (v *quantityVal) Equal(other ref.Val) ref.Val {
	o, ok := other.(*quantityVal)
	if !ok || o.computed {
		return types.MaybeNoSuchOverloadErr(other)
	}
	if v.outOfRange || o.outOfRange {
		return types.WrapErr(ErrQuantityOutOfRange)
	}
	return types.Bool(compareQuantities(&v.q, &o.q) == 0)
}

func (v *quantityVal) Type() ref.Type { return quantityType }

// Value returns *resource.Quantity, as Kubernetes does.
func (v *quantityVal) Value() any { return &v.q }

// quantityLibrary declares the Kubernetes quantity functions.
type quantityLibrary struct{}

func (quantityLibrary) LibraryName() string { return "kubernetes.quantity" }

func (quantityLibrary) CompileOptions() []cel.EnvOption {
	q := quantityType
	addQ, addInt := arithmetic((*resource.Quantity).Add)
	subQ, subInt := arithmetic((*resource.Quantity).Sub)
	return []cel.EnvOption{
		cel.Function("quantity",
			cel.Overload("string_to_quantity", []*cel.Type{cel.StringType}, q, cel.UnaryBinding(stringToQuantity))),
		cel.Function("isQuantity",
			cel.Overload("is_quantity_string", []*cel.Type{cel.StringType}, cel.BoolType, cel.UnaryBinding(isQuantity))),
		cel.Function("sign",
			cel.Overload("quantity_sign", []*cel.Type{q}, cel.IntType, cel.UnaryBinding(quantityUnary(func(x *resource.Quantity) ref.Val {
				return types.Int(x.Sign())
			})))),
		cel.Function("isGreaterThan",
			cel.MemberOverload("quantity_is_greater_than", []*cel.Type{q, q}, cel.BoolType, cel.BinaryBinding(quantityBinary(func(a, b *resource.Quantity) ref.Val {
				return types.Bool(compareQuantities(a, b) == 1)
			})))),
		cel.Function("isLessThan",
			cel.MemberOverload("quantity_is_less_than", []*cel.Type{q, q}, cel.BoolType, cel.BinaryBinding(quantityBinary(func(a, b *resource.Quantity) ref.Val {
				return types.Bool(compareQuantities(a, b) == -1)
			})))),
		cel.Function("compareTo",
			cel.MemberOverload("quantity_compare_to", []*cel.Type{q, q}, cel.IntType, cel.BinaryBinding(quantityBinary(func(a, b *resource.Quantity) ref.Val {
				return types.Int(compareQuantities(a, b))
			})))),
		cel.Function("asApproximateFloat",
			cel.MemberOverload("quantity_get_float", []*cel.Type{q}, cel.DoubleType, cel.UnaryBinding(quantityUnary(func(x *resource.Quantity) ref.Val {
				return types.Double(x.AsApproximateFloat64())
			})))),
		cel.Function("asInteger",
			cel.MemberOverload("quantity_get_int", []*cel.Type{q}, cel.IntType, cel.UnaryBinding(quantityUnary(func(x *resource.Quantity) ref.Val {
				i, ok := x.AsInt64()
				if !ok {
					return types.WrapErr(errors.New("cannot convert value to integer"))
				}
				return types.Int(i)
			})))),
		cel.Function("isInteger",
			cel.MemberOverload("quantity_is_integer", []*cel.Type{q}, cel.BoolType, cel.UnaryBinding(quantityUnary(func(x *resource.Quantity) ref.Val {
				_, ok := x.AsInt64()
				return types.Bool(ok)
			})))),
		cel.Function("add",
			cel.MemberOverload("quantity_add", []*cel.Type{q, q}, q, cel.BinaryBinding(quantityBinary(addQ))),
			cel.MemberOverload("quantity_add_int", []*cel.Type{q, cel.IntType}, q, cel.BinaryBinding(quantityWithInt(addInt)))),
		cel.Function("sub",
			cel.MemberOverload("quantity_sub", []*cel.Type{q, q}, q, cel.BinaryBinding(quantityBinary(subQ))),
			cel.MemberOverload("quantity_sub_int", []*cel.Type{q, cel.IntType}, q, cel.BinaryBinding(quantityWithInt(subInt)))),
	}
}

// arithmetic returns the bodies of the quantity and the int overload of add or sub, op being
// Quantity.Add or Quantity.Sub: a new, computed quantity.
func arithmetic(op func(r *resource.Quantity, x resource.Quantity)) (func(a, b *resource.Quantity) ref.Val, func(a *resource.Quantity, b int64) ref.Val) {
	withQuantity := func(a, b *resource.Quantity) ref.Val {
		r := a.DeepCopy()
		op(&r, *b)
		v := newQuantityVal(r, true)
		if v.outOfRange {
			return types.WrapErr(ErrQuantityOutOfRange)
		}
		return v
	}
	withInt := func(a *resource.Quantity, b int64) ref.Val {
		return withQuantity(a, resource.NewQuantity(b, resource.DecimalExponent))
	}
	return withQuantity, withInt
}

func (quantityLibrary) ProgramOptions() []cel.ProgramOption { return nil }

func stringToQuantity(arg ref.Val) ref.Val {
	s, ok := arg.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(arg)
	}
	q, err := parseQuantity(string(s))
	if err != nil {
		return types.WrapErr(err)
	}
	return &quantityVal{q: q}
}

// isQuantity reports whether quantity() accepts the string; unlike
// Kubernetes it is false for a quantity out of range, so that a guard with
// isQuantity keeps quantity() from failing.
func isQuantity(arg ref.Val) ref.Val {
	s, ok := arg.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(arg)
	}
	_, err := parseQuantity(string(s))
	return types.Bool(err == nil)
}

// maxQuantityExponent bounds the magnitudes the quantity functions accept:
// a value's most significant digit must lie within 10^±maxQuantityExponent.
// Kubernetes (resource.ParseQuantity under its CEL quantity library)
// accepts any exponent, and pays for it: parsing "1E-100000000" rounds a
// hundred-million-digit number and takes over a minute, comparing or adding
// "1E100000000" or "0E100000000" scales a number of that length. celenv
// refuses such values with an error instead; 10^±1000 is far beyond the
// largest quantity Kubernetes can serialise as an int64 with a suffix
// (about 10^37) and the nano precision quantities are rounded to.
const maxQuantityExponent = 1000

// maxQuantityLength bounds the length of a quantity string: a longer one
// has more digits than any magnitude in range needs.
const maxQuantityLength = 2*maxQuantityExponent + 32

// parseQuantity is resource.ParseQuantity for the magnitudes celenv
// computes with. The exponent and the length are checked before parsing,
// because parsing itself is what takes long.
func parseQuantity(s string) (resource.Quantity, error) {
	if len(s) > maxQuantityLength {
		return resource.Quantity{}, fmt.Errorf("quantity of %d characters: %w", len(s), ErrQuantityOutOfRange)
	}
	// The grammar is <sign><digits>.<digits><suffix>; a suffix e<n> or E<n>
	// is a decimal exponent.
	rest := strings.TrimLeft(s, "+-0123456789.")
	if len(rest) > 1 && (rest[0] == 'e' || rest[0] == 'E') {
		exp, err := strconv.ParseInt(rest[1:], 10, 64)
		if err == nil && (exp > maxQuantityExponent || exp < -maxQuantityExponent) || errors.Is(err, strconv.ErrRange) {
			return resource.Quantity{}, fmt.Errorf("quantity %q: %w", s, ErrQuantityOutOfRange)
		}
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return q, err
	}
	if !quantityInRange(&q) {
		return resource.Quantity{}, fmt.Errorf("quantity %q: %w", s, ErrQuantityOutOfRange)
	}
	return q, nil
}

// quantityInRange reports whether q's most significant digit lies within
// 10^±maxQuantityExponent (zero with any exponent counts by its exponent).
// It does not modify q, and reads it in its decimal form: AsInt64 on zero
// with an exponent of 10^8 multiplies by ten 10^8 times.
func quantityInRange(q *resource.Quantity) bool {
	x := *q
	d := x.AsDec()
	// unscaled × 10^-scale, with about BitLen × log10(2) digits.
	top := int64(float64(d.UnscaledBig().BitLen())*math.Log10(2)) - int64(d.Scale())
	return top <= maxQuantityExponent && top >= -maxQuantityExponent && int64(d.Scale()) <= maxQuantityExponent
}

func quantityUnary(f func(*resource.Quantity) ref.Val) func(ref.Val) ref.Val {
	return unaryOf(func(v *quantityVal) ref.Val {
		if v.outOfRange {
			return types.WrapErr(ErrQuantityOutOfRange)
		}
		return f(&v.q)
	})
}

func quantityBinary(f func(a, b *resource.Quantity) ref.Val) func(ref.Val, ref.Val) ref.Val {
	return binaryOf(func(a, b *quantityVal) ref.Val {
		if a.outOfRange || b.outOfRange {
			return types.WrapErr(ErrQuantityOutOfRange)
		}
		return f(&a.q, &b.q)
	})
}

func quantityWithInt(f func(a *resource.Quantity, b int64) ref.Val) func(ref.Val, ref.Val) ref.Val {
	return binaryOf(func(a *quantityVal, b types.Int) ref.Val {
		if a.outOfRange {
			return types.WrapErr(ErrQuantityOutOfRange)
		}
		return f(&a.q, int64(b))
	})
}

// compareQuantities compares without touching a or b: Quantity.Cmp converts
// its receiver to the decimal form in place when the other side is decimal,
// and prepared quantities are shared by concurrent evaluations.
func compareQuantities(a, b *resource.Quantity) int {
	x := *a
	return x.Cmp(*b)
}
