package celenv

import (
	"math"

	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	resourceapi "k8s.io/api/resource/v1"
)

// costModel prices the Kubernetes library functions, both at compile time
// (checker.CostEstimator, for the worst-case estimate) and at runtime
// (interpreter.ActualCostEstimator, for the cost limit). The prices are the
// ones Kubernetes charges, so an expression runs out of budget here exactly
// when it would there. Functions not priced here keep CEL's default cost.
type costModel struct {
	// sizes describes the device variable; nil at runtime.
	sizes *sizeModel
}

// CallCost implements interpreter.ActualCostEstimator: Kubernetes' price,
// raised where it does not bound the work (see bounds.go).
func (costModel) CallCost(function, overloadID string, args []ref.Val, result ref.Val) *uint64 {
	c := kubernetesCallCost(function, overloadID, args, result)
	if c == nil && overloadID == "" {
		c = dynamicCallCost(function, args)
	}
	if !builders[function] {
		return c
	}
	least := builderCost(function, args, result)
	if c == nil {
		// cel-go's default for the builders it prices (string and bytes
		// concatenation and conversion, quote) is the size of the result or
		// of the first argument; for the others, 1.
		base := uint64(1)
		if len(args) > 0 && (function == "format" || function == "strings.quote" || function == "string" || function == "bytes") {
			base = max(base, resultCost(args[0]))
		}
		least = max(least, base)
		return &least
	}
	least = max(least, *c)
	return &least
}

// kubernetesCallCost is the runtime price Kubernetes charges; nil for
// functions it leaves to cel-go's default.
func kubernetesCallCost(function, overloadID string, args []ref.Val, result ref.Val) *uint64 {
	cost := func(c uint64) *uint64 { return &c }
	traversal := func(v ref.Val, factor float64) *uint64 {
		return cost(uint64(math.Ceil(float64(actualSize(v)) * factor)))
	}
	switch function {
	case "isSorted", "sum", "max", "min", "indexOf", "lastIndexOf", "includes":
		var c uint64
		if len(args) > 0 {
			c = traversalCost(args[0])
		}
		return &c
	case "url", "lowerAscii", "upperAscii", "substring", "trim":
		if len(args) >= 1 {
			return traversal(args[0], common.StringTraversalCostFactor)
		}
	case "replace", "split":
		if len(args) >= 1 {
			return traversal(args[0], 2*common.StringTraversalCostFactor)
		}
	case "join":
		if len(args) >= 1 {
			return traversal(result, 2*common.StringTraversalCostFactor)
		}
	case "find", "findAll":
		if len(args) >= 2 {
			strCost := uint64(math.Ceil((1.0 + float64(actualSize(args[0]))) * common.StringTraversalCostFactor))
			regexCost := uint64(math.Ceil(float64(actualSize(args[1])) * common.RegexStringLengthCostFactor))
			return cost(strCost * regexCost)
		}
	case "cidr", "isIP", "isCIDR":
		if len(args) >= 1 {
			return traversal(args[0], common.StringTraversalCostFactor)
		}
	case "ip":
		if overloadID == "cidr_ip" {
			return cost(1)
		}
		if len(args) >= 1 {
			return traversal(args[0], common.StringTraversalCostFactor)
		}
	case "ip.isCanonical":
		if len(args) >= 1 {
			return traversal(args[0], 2*common.StringTraversalCostFactor)
		}
	case "masked", "prefixLength", "family", "isUnspecified", "isLoopback", "isLinkLocalMulticast",
		"isLinkLocalUnicast", "isGlobalUnicast", "format.named",
		"getScheme", "getHostname", "getHost", "getPort", "getEscapedPath", "getQuery":
		return cost(1)
	case "containsIP", "containsCIDR":
		if len(args) >= 2 {
			cidrSize := actualSize(args[0])
			c := uint64(math.Ceil(float64(cidrSize+cidrSize) * common.StringTraversalCostFactor))
			if function == "containsCIDR" {
				c += uint64(math.Ceil(float64(cidrSize)*common.StringTraversalCostFactor)) + 1
			}
			if overloadID == "cidr_contains_ip_string" || overloadID == "cidr_contains_cidr_string" {
				c += uint64(math.Ceil(float64(actualSize(args[1])) * common.StringTraversalCostFactor))
			}
			return &c
		}
	case "validate":
		if len(args) >= 2 {
			if f, ok := args[0].(*formatVal); ok {
				strCost := uint64(math.Ceil((1.0 + float64(actualSize(args[1]))) * common.StringTraversalCostFactor))
				regexCost := uint64(math.Ceil(float64(f.maxRegexSize) * common.RegexStringLengthCostFactor))
				return cost(strCost * regexCost)
			}
		}
	case "quantity", "isQuantity", "semver", "isSemver":
		if len(args) >= 1 {
			return traversal(args[0], common.StringTraversalCostFactor)
		}
	case "sign", "asInteger", "isInteger", "asApproximateFloat", "isGreaterThan", "isLessThan", "compareTo",
		"add", "sub", "major", "minor", "patch":
		return cost(1)
	case "_==_":
		if len(args) == 2 {
			switch args[0].(type) {
			case *quantityVal, *semverVal, ipVal, cidrVal, *formatVal, urlVal:
				return cost(1)
			}
		}
	}
	return nil
}

// EstimateSize implements checker.CostEstimator.
func (m costModel) EstimateSize(element checker.AstNode) *checker.SizeEstimate {
	if m.sizes == nil {
		return nil
	}
	return m.sizes.estimate(element.Path())
}

// EstimateCallCost implements checker.CostEstimator.
func (m costModel) EstimateCallCost(function, overloadID string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	unit := &checker.CallEstimate{CostEstimate: checker.CostEstimate{Min: 1, Max: 1}}
	switch function {
	case "isSorted", "sum", "max", "min", "indexOf", "lastIndexOf", "includes":
		if target == nil {
			break
		}
		if el := listElementNode(*target); el != nil {
			elCost := checker.CostEstimate{Min: 1, Max: 1}
			if k := el.Type().Kind(); k == types.StringKind || k == types.BytesKind {
				elCost = elCost.Add(m.size(el).MultiplyByCostFactor(common.StringTraversalCostFactor))
			}
			return &checker.CallEstimate{CostEstimate: m.size(*target).MultiplyByCost(elCost)}
		}
		if function == "includes" {
			return &checker.CallEstimate{CostEstimate: m.size(*target).MultiplyByCost(checker.CostEstimate{Min: 1, Max: 1})}
		}
		return &checker.CallEstimate{CostEstimate: m.size(*target).MultiplyByCostFactor(common.StringTraversalCostFactor)}
	case "url":
		if len(args) == 1 {
			sz := m.size(args[0])
			return &checker.CallEstimate{CostEstimate: sz.MultiplyByCostFactor(common.StringTraversalCostFactor), ResultSize: &sz}
		}
	case "lowerAscii", "upperAscii", "substring", "trim":
		if target != nil {
			sz := m.size(*target)
			return &checker.CallEstimate{CostEstimate: sz.MultiplyByCostFactor(common.StringTraversalCostFactor), ResultSize: &sz}
		}
	case "replace":
		if target != nil && len(args) >= 2 {
			return m.replaceEstimate(*target, args[0], args[1])
		}
	case "split":
		if target != nil {
			sz := m.size(*target)
			maxParts := sz.Max
			if len(args) > 1 {
				if v := args[1].Expr().AsLiteral(); v != nil {
					if i, ok := v.Value().(int64); ok {
						maxParts = uint64(i)
					}
				}
			}
			return &checker.CallEstimate{
				CostEstimate: sz.MultiplyByCostFactor(2 * common.StringTraversalCostFactor),
				ResultSize:   &checker.SizeEstimate{Min: 0, Max: maxParts},
			}
		}
	case "join":
		if target != nil {
			var sz checker.SizeEstimate
			listSize := m.size(*target)
			if el := listElementNode(*target); el != nil {
				sz = listSize.Multiply(m.size(el))
			}
			if len(args) > 0 {
				var minSep, maxSep uint64
				if listSize.Min > 0 {
					minSep = listSize.Min - 1
				}
				if listSize.Max > 0 {
					maxSep = listSize.Max - 1
				}
				sz = sz.Add(m.size(args[0]).Multiply(checker.SizeEstimate{Min: minSep, Max: maxSep}))
			}
			return &checker.CallEstimate{CostEstimate: sz.MultiplyByCostFactor(common.StringTraversalCostFactor), ResultSize: &sz}
		}
	case "find", "findAll":
		if target != nil && len(args) >= 1 {
			sz := m.size(*target)
			strCost := sz.Add(checker.SizeEstimate{Min: 1, Max: 1}).MultiplyByCostFactor(common.StringTraversalCostFactor)
			regexCost := m.size(args[0]).MultiplyByCostFactor(common.RegexStringLengthCostFactor)
			return &checker.CallEstimate{CostEstimate: strCost.Multiply(regexCost), ResultSize: &checker.SizeEstimate{Min: 0, Max: sz.Max}}
		}
	case "cidr", "isIP", "isCIDR":
		if len(args) >= 1 {
			return &checker.CallEstimate{CostEstimate: m.size(args[0]).MultiplyByCostFactor(common.StringTraversalCostFactor)}
		}
	case "ip":
		if overloadID == "cidr_ip" {
			return unit
		}
		if len(args) >= 1 {
			return &checker.CallEstimate{CostEstimate: m.size(args[0]).MultiplyByCostFactor(common.StringTraversalCostFactor)}
		}
	case "ip.isCanonical":
		if len(args) >= 1 {
			return &checker.CallEstimate{CostEstimate: m.size(args[0]).MultiplyByCostFactor(2 * common.StringTraversalCostFactor)}
		}
	case "containsIP", "containsCIDR":
		if len(args) >= 1 {
			// An address is 4 to 16 bytes.
			sz := checker.SizeEstimate{Min: 4, Max: 16}
			c := sz.Add(sz).MultiplyByCostFactor(common.StringTraversalCostFactor)
			if function == "containsCIDR" {
				c = c.Add(sz.MultiplyByCostFactor(common.StringTraversalCostFactor)).Add(checker.CostEstimate{Min: 1, Max: 1})
			}
			if overloadID == "cidr_contains_ip_string" || overloadID == "cidr_contains_cidr_string" {
				c = c.Add(checker.CostEstimate(m.size(args[0])).MultiplyByCostFactor(common.StringTraversalCostFactor))
			}
			return &checker.CallEstimate{CostEstimate: c}
		}
	case "validate":
		if len(args) >= 1 {
			return &checker.CallEstimate{CostEstimate: m.size(args[0]).MultiplyByCostFactor(common.StringTraversalCostFactor).
				MultiplyByCostFactor(maxNameFormatRegexSize * common.RegexStringLengthCostFactor)}
		}
	case "quantity", "isQuantity", "semver", "isSemver":
		if len(args) >= 1 {
			return &checker.CallEstimate{CostEstimate: m.size(args[0]).MultiplyByCostFactor(common.StringTraversalCostFactor)}
		}
	case "sign", "asInteger", "isInteger", "asApproximateFloat", "isGreaterThan", "isLessThan", "compareTo",
		"add", "sub", "major", "minor", "patch",
		"masked", "prefixLength", "family", "isUnspecified", "isLoopback", "isLinkLocalMulticast",
		"isLinkLocalUnicast", "isGlobalUnicast", "format.named",
		"getScheme", "getHostname", "getHost", "getPort", "getEscapedPath", "getQuery":
		return unit
	case "_==_":
		if len(args) == 2 && args[0].Type().Equal(args[1].Type()) == types.True {
			t := args[0].Type()
			if t.Kind() == types.OpaqueKind && (t.TypeName() == ipType.TypeName() || t.TypeName() == cidrType.TypeName()) {
				return unit
			}
			if t.Kind() == types.StructKind {
				switch t.TypeName() {
				case quantityType.TypeName(), semverType.TypeName():
					return unit
				case formatType.TypeName():
					return &checker.CallEstimate{CostEstimate: checker.CostEstimate{Min: 1, Max: maxFormatSize}.MultiplyByCostFactor(common.StringTraversalCostFactor)}
				case urlType.TypeName():
					// Kubernetes sizes both sides by the right-hand one.
					size := checker.SizeEstimate{Min: 1, Max: 1}
					if rhs := args[1].ComputedSize(); rhs != nil {
						size = rhs.Union(*rhs)
					}
					return &checker.CallEstimate{CostEstimate: checker.CostEstimate{Min: 1, Max: size.Max}.MultiplyByCostFactor(common.StringTraversalCostFactor)}
				}
			}
		}
	}
	return nil
}

// replaceEstimate prices s.replace(old, new) as Kubernetes does: a double
// traversal of s, with a result size bounded by how often old fits in s.
func (m costModel) replaceEstimate(target, toReplace, replaceWith checker.AstNode) *checker.CallEstimate {
	sz := m.size(target)
	toReplaceSz := m.size(toReplace)
	replaceWithSz := m.size(replaceWith)

	var replaceCount, retainedSz checker.SizeEstimate
	switch {
	case toReplaceSz.Min == 0:
		if sz.Max < math.MaxUint64 {
			replaceCount.Max = sz.Max + 1
		} else {
			replaceCount.Max = sz.Max
		}
		retainedSz.Max = sz.Max
	case replaceWithSz.Max <= toReplaceSz.Min:
		replaceCount.Max = 0
		retainedSz.Max = sz.Max
	default:
		replaceCount.Max = uint64(math.Ceil(float64(sz.Max) / float64(toReplaceSz.Min)))
	}
	switch {
	case toReplaceSz.Max == 0:
		if sz.Min < math.MaxUint64 {
			replaceCount.Min = sz.Min + 1
		} else {
			replaceCount.Min = sz.Min
		}
		retainedSz.Min = sz.Min
	case toReplaceSz.Max <= replaceWithSz.Min:
		replaceCount.Min = 0
		retainedSz.Min = sz.Min
	default:
		replaceCount.Min = uint64(math.Ceil(float64(sz.Min) / float64(toReplaceSz.Max)))
	}
	size := replaceCount.Multiply(replaceWithSz).Add(retainedSz)
	return &checker.CallEstimate{CostEstimate: sz.MultiplyByCostFactor(2 * common.StringTraversalCostFactor), ResultSize: &size}
}

func (m costModel) size(n checker.AstNode) checker.SizeEstimate {
	if sz := n.ComputedSize(); sz != nil {
		return *sz
	}
	if sz := m.EstimateSize(n); sz != nil {
		return *sz
	}
	return checker.SizeEstimate{Min: 0, Max: math.MaxUint64}
}

func listElementNode(list checker.AstNode) checker.AstNode {
	params := list.Type().Parameters()
	if len(params) == 0 {
		return nil
	}
	var path []string
	if p := list.Path(); p != nil {
		path = append(append(make([]string, 0, len(p)+1), p...), "@items")
	}
	return &itemsNode{path: path, t: params[0]}
}

// itemsNode stands for "an element of this list" when pricing list functions.
type itemsNode struct {
	path []string
	t    *types.Type
}

func (i *itemsNode) Path() []string                      { return i.path }
func (i *itemsNode) Type() *types.Type                   { return i.t }
func (i *itemsNode) Expr() ast.Expr                      { return nil }
func (i *itemsNode) ComputedSize() *checker.SizeEstimate { return nil }

func actualSize(v ref.Val) uint64 {
	if sz, ok := v.(traits.Sizer); ok {
		if n, ok := sz.Size().(types.Int); ok {
			return uint64(n)
		}
	}
	return 1
}

func traversalCost(v ref.Val) uint64 {
	switch vt := v.(type) {
	case types.String:
		return uint64(float64(len(string(vt))) * common.StringTraversalCostFactor)
	case types.Bytes:
		return uint64(float64(len([]byte(vt))) * common.StringTraversalCostFactor)
	case traits.Lister:
		var c uint64
		for it := vt.Iterator(); it.HasNext() == types.True; {
			c += traversalCost(it.Next())
		}
		return c
	case traits.Mapper:
		var c uint64
		for it := vt.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			c += traversalCost(k) + traversalCost(vt.Get(k))
		}
		return c
	default:
		return 1
	}
}

// sizeNode is the declared shape of a part of the device variable: how many
// elements (characters, entries) it may have at most, as the API allows.
type sizeNode struct {
	max       int64
	fields    map[string]*sizeNode
	key, elem *sizeNode
}

// sizeModel answers size estimates for paths below "device", the way
// Kubernetes derives them from its declared device type.
type sizeModel struct {
	device, attribute *sizeNode
}

func newSizeModel(withMultiAlloc bool) *sizeModel {
	const perMap = resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice
	domain := &sizeNode{max: resourceapi.DeviceMaxDomainLength}
	id := &sizeNode{max: resourceapi.DeviceMaxIDLength}
	attribute := &sizeNode{max: max(resourceapi.DeviceAttributeMaxValueLength, resourceapi.ResourceSliceMaxAttributeValuesPerDevice)}
	quantity := &sizeNode{}
	device := &sizeNode{fields: map[string]*sizeNode{
		driverVar:     {max: resourceapi.DriverNameMaxLength},
		attributesVar: {max: perMap, key: domain, elem: &sizeNode{max: perMap, key: id, elem: attribute}},
		capacityVar:   {max: perMap, key: domain, elem: &sizeNode{max: perMap, key: id, elem: quantity}},
	}}
	if withMultiAlloc {
		device.fields[multiAllocVar] = &sizeNode{max: 1}
	}
	return &sizeModel{device: device, attribute: attribute}
}

func (s *sizeModel) estimate(path []string) *checker.SizeEstimate {
	if len(path) == 0 || path[0] != deviceVar {
		return nil
	}
	n := s.device
	for _, name := range path[1:] {
		switch name {
		case "@items", "@values":
			if n.elem == nil {
				return nil
			}
			n = n.elem
		case "@keys":
			if n.key == nil {
				return nil
			}
			n = n.key
		default:
			f, ok := n.fields[name]
			if !ok {
				// Any name in a domain's attribute map has the size of an
				// attribute value.
				if n.elem == s.attribute {
					n = s.attribute
					continue
				}
				return nil
			}
			n = f
		}
	}
	return &checker.SizeEstimate{Min: 0, Max: uint64(n.max)}
}
