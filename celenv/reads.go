package celenv

import (
	"slices"

	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
)

// AttributeRef is one attribute an expression reads: device.attributes[Domain].Name.
type AttributeRef struct {
	Domain, Name string
}

// AttributeReads returns the attributes the selector can read, sorted by domain and name, when it
// reads device.attributes only through a constant domain and a constant name:
// device.attributes["d"].n, device.attributes["d"]["n"], their optional forms (.?n, [?"n"]) and
// has(device.attributes["d"].n). Its result then depends on those attributes, the device's capacity,
// its driver and allowMultipleAllocations, and nothing else: two devices that agree on these get the
// same verdict (and the same kind of error). ok is false when the expression reads attributes any
// other way — a domain map as a whole, a computed domain or name, a domain map bound to a variable,
// a variable that shadows device —, and then any attribute may matter.
//
// As in Kubernetes, a name without a domain belongs to the driver's domain: a read of
// device.attributes["gpu.nvidia.com"].memory is a read of "memory" as well for driver
// gpu.nvidia.com.
func (s *Selector) AttributeReads() (reads []AttributeRef, ok bool) {
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
				r, known, fine := deviceUse(e)
				if !fine {
					ok = false
					return
				}
				if known {
					reads = append(reads, r)
				}
			}
		}
		for _, child := range e.Children() {
			visit(child)
		}
	}
	visit(root)
	if !ok {
		return nil, false
	}
	slices.SortFunc(reads, func(a, b AttributeRef) int {
		if a.Domain != b.Domain {
			if a.Domain < b.Domain {
				return -1
			}
			return 1
		}
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return slices.Compact(reads), true
}

// deviceUse classifies one use of the device variable: an attribute read by constant domain and name
// (known), a use that reads no attribute (driver, allowMultipleAllocations, capacity: fine, not
// known), or anything else (not fine).
func deviceUse(e ast.NavigableExpr) (r AttributeRef, known, fine bool) {
	field, ok := e.Parent()
	if !ok || field.Kind() != ast.SelectKind || field.AsSelect().IsTestOnly() {
		return r, false, false
	}
	switch field.AsSelect().FieldName() {
	case driverVar, multiAllocVar, capacityVar:
		return r, false, true
	case attributesVar:
	default:
		return r, false, false
	}
	domainMap, ok := field.Parent()
	if !ok {
		return r, false, false
	}
	domain, ok := constantIndex(domainMap, field)
	if !ok {
		return r, false, false
	}
	use, ok := domainMap.Parent()
	if !ok {
		return r, false, false
	}
	switch use.Kind() {
	case ast.SelectKind:
		// device.attributes["d"].n, or has(device.attributes["d"].n).
		return AttributeRef{Domain: domain, Name: use.AsSelect().FieldName()}, true, true
	case ast.CallKind:
		if name, ok := constantIndex(use, domainMap); ok {
			return AttributeRef{Domain: domain, Name: name}, true, true
		}
	}
	return r, false, false
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
