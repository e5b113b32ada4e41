package celenv

import (
	"cmp"
	"slices"
	"strings"

	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
)

// Ref names one attribute or capacity a selector reads: device.attributes[Domain].Name or
// device.capacity[Domain].Name.
type Ref struct {
	Domain, Name string
}

// Reads is what a selector can read of a device, besides its driver and allowMultipleAllocations:
// attributes and capacities, each sorted by domain and name.
type Reads struct {
	Attributes, Capacity []Ref
}

// Reads returns what the selector can read of a device, when it reads device.attributes and
// device.capacity only through a constant domain and a constant name: device.attributes["d"].n,
// device.attributes["d"]["n"], their optional forms (.?n, [?"n"]) and has(device.attributes["d"].n),
// and the same for capacity. Its result then depends on those values, the device's driver and
// allowMultipleAllocations, and nothing else: two devices that agree on these get the same verdict
// (and the same kind of error), provided both are valid as the API server validates devices — an
// attribute NewDevice cannot convert fails every evaluation, and a device beyond the API's limits is
// evaluated with cost tracking. ok is false when the expression reads attributes or capacity any
// other way — a domain map as a whole, a computed domain or name, a domain map bound to a variable,
// a variable that shadows device —, and then any of them may matter.
//
// As in Kubernetes, a name without a domain belongs to the driver's domain: a read of
// device.attributes["gpu.nvidia.com"].memory is a read of "memory" as well for driver
// gpu.nvidia.com.
func (s *Selector) Reads() (reads Reads, ok bool) {
	root := ast.NavigateAST(s.program.ast.NativeRep())
	ok = true
	var visit func(e ast.NavigableExpr)
	visit = func(e ast.NavigableExpr) {
		if !ok {
			return
		}
		switch e.Kind() {
		case ast.ComprehensionKind:
			c := e.AsComprehension()
			if c.IterVar() == deviceVar || c.HasIterVar2() && c.IterVar2() == deviceVar || c.AccuVar() == deviceVar {
				ok = false
				return
			}
		case ast.IdentKind:
			if e.AsIdent() == deviceVar {
				r, capacity, known, fine := deviceUse(e)
				switch {
				case !fine:
					ok = false
					return
				case known && capacity:
					reads.Capacity = append(reads.Capacity, r)
				case known:
					reads.Attributes = append(reads.Attributes, r)
				}
			}
		}
		for _, child := range e.Children() {
			visit(child)
		}
	}
	visit(root)
	if !ok {
		return Reads{}, false
	}
	return Reads{Attributes: sortedRefs(reads.Attributes), Capacity: sortedRefs(reads.Capacity)}, true
}

func sortedRefs(refs []Ref) []Ref {
	slices.SortFunc(refs, func(a, b Ref) int {
		return cmp.Or(strings.Compare(a.Domain, b.Domain), strings.Compare(a.Name, b.Name))
	})
	return slices.Compact(refs)
}

// deviceUse classifies one use of the device variable: a read of an attribute or a capacity by
// constant domain and name (known), a use that reads neither (driver, allowMultipleAllocations: fine,
// not known), or anything else (not fine).
func deviceUse(e ast.NavigableExpr) (r Ref, capacity, known, fine bool) {
	field, ok := e.Parent()
	if !ok || field.Kind() != ast.SelectKind || field.AsSelect().IsTestOnly() {
		return r, false, false, false
	}
	switch field.AsSelect().FieldName() {
	case driverVar, multiAllocVar:
		return r, false, false, true
	case attributesVar:
	case capacityVar:
		capacity = true
	default:
		return r, false, false, false
	}
	domainMap, ok := field.Parent()
	if !ok {
		return r, false, false, false
	}
	domain, ok := constantIndex(domainMap, field)
	if !ok {
		return r, false, false, false
	}
	use, ok := domainMap.Parent()
	if !ok {
		return r, false, false, false
	}
	switch use.Kind() {
	case ast.SelectKind:
		// device.attributes["d"].n, or has(device.attributes["d"].n).
		return Ref{Domain: domain, Name: use.AsSelect().FieldName()}, capacity, true, true
	case ast.CallKind:
		if name, ok := constantIndex(use, domainMap); ok {
			return Ref{Domain: domain, Name: name}, capacity, true, true
		}
	}
	return r, false, false, false
}

// constantIndex: e indexes operand by a string literal (operand[k], operand[?k], operand.?k), which it
// returns.
func constantIndex(e, operand ast.NavigableExpr) (string, bool) {
	if e.Kind() != ast.CallKind {
		return "", false
	}
	call := e.AsCall()
	switch call.FunctionName() {
	case operators.Index, operators.OptIndex, operators.OptSelect:
	default:
		return "", false
	}
	args := call.Args()
	if call.IsMemberFunction() || len(args) != 2 || args[0].ID() != operand.ID() {
		return "", false
	}
	return stringLiteral(args[1])
}
