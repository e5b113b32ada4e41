package celenv

import (
	"fmt"
	"math"
	"net/netip"
	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// The Kubernetes IP and CIDR libraries: ip(), isIP(), ip.isCanonical(),
// family(), the is...() classifications, cidr(), isCIDR(), containsIP(),
// containsCIDR(), prefixLength(), masked(), ip(cidr) and string().

var (
	ipType   = cel.OpaqueType("net.IP")
	cidrType = cel.OpaqueType("net.CIDR")
)

// ipVal is an IP address as a CEL value.
type ipVal struct{ addr netip.Addr }

func (v ipVal) ConvertToNative(typeDesc reflect.Type) (any, error) {
	return nativeOf(v.addr, v.addr.String, "IP", typeDesc)
}

func (v ipVal) ConvertToType(typeVal ref.Type) ref.Val {
	return convertOpaque(v, ipType, v.addr.String, typeVal)
}

func (v ipVal) Equal(other ref.Val) ref.Val {
	o, ok := other.(ipVal)
	if !ok {
		return types.ValOrErr(other, "no such overload")
	}
	return types.Bool(v.addr == o.addr)
}

func (v ipVal) Type() ref.Type { return ipType }
func (v ipVal) Value() any     { return v.addr }

// Size is the address length in bytes; the cost model reads it.
func (v ipVal) Size() ref.Val { return types.Int(int(math.Ceil(float64(v.addr.BitLen()) / 8))) }

// cidrVal is a network prefix as a CEL value.
type cidrVal struct{ prefix netip.Prefix }

func (v cidrVal) ConvertToNative(typeDesc reflect.Type) (any, error) {
	return nativeOf(v.prefix, v.prefix.String, "CIDR", typeDesc)
}

func (v cidrVal) ConvertToType(typeVal ref.Type) ref.Val {
	return convertOpaque(v, cidrType, v.prefix.String, typeVal)
}

func (v cidrVal) Equal(other ref.Val) ref.Val {
	o, ok := other.(cidrVal)
	if !ok {
		return types.ValOrErr(other, "no such overload")
	}
	return types.Bool(v.prefix == o.prefix)
}

func (v cidrVal) Type() ref.Type { return cidrType }
func (v cidrVal) Value() any     { return v.prefix }

// Size is the prefix length in bytes; the cost model reads it.
func (v cidrVal) Size() ref.Val { return types.Int(int(math.Ceil(float64(v.prefix.Bits()) / 8))) }

type netLibrary struct{}

func (netLibrary) LibraryName() string { return "kubernetes.net" }

func (netLibrary) CompileOptions() []cel.EnvOption {
	ipBool := func(id string, f func(netip.Addr) bool) cel.FunctionOpt {
		return cel.MemberOverload(id, []*cel.Type{ipType}, cel.BoolType, cel.UnaryBinding(func(arg ref.Val) ref.Val {
			ip, ok := arg.(ipVal)
			if !ok {
				return types.MaybeNoSuchOverloadErr(arg)
			}
			return types.Bool(f(ip.addr))
		}))
	}
	return []cel.EnvOption{
		cel.Types(ipType, cidrType),
		cel.Function("ip",
			cel.Overload("string_to_ip", []*cel.Type{cel.StringType}, ipType, cel.UnaryBinding(stringToIP)),
			cel.MemberOverload("cidr_ip", []*cel.Type{cidrType}, ipType, cel.UnaryBinding(cidrUnary(func(c netip.Prefix) ref.Val {
				return ipVal{c.Addr()}
			})))),
		cel.Function("family", cel.MemberOverload("ip_family", []*cel.Type{ipType}, cel.IntType, cel.UnaryBinding(ipFamily))),
		cel.Function("ip.isCanonical", cel.Overload("ip_is_canonical", []*cel.Type{cel.StringType}, cel.BoolType, cel.UnaryBinding(ipIsCanonical))),
		cel.Function("isUnspecified", ipBool("ip_is_unspecified", netip.Addr.IsUnspecified)),
		cel.Function("isLoopback", ipBool("ip_is_loopback", netip.Addr.IsLoopback)),
		cel.Function("isLinkLocalMulticast", ipBool("ip_is_link_local_multicast", netip.Addr.IsLinkLocalMulticast)),
		cel.Function("isLinkLocalUnicast", ipBool("ip_is_link_local_unicast", netip.Addr.IsLinkLocalUnicast)),
		cel.Function("isGlobalUnicast", ipBool("ip_is_global_unicast", netip.Addr.IsGlobalUnicast)),
		cel.Function("isIP", cel.Overload("is_ip", []*cel.Type{cel.StringType}, cel.BoolType, cel.UnaryBinding(func(arg ref.Val) ref.Val {
			s, ok := arg.(types.String)
			if !ok {
				return types.MaybeNoSuchOverloadErr(arg)
			}
			_, err := parseIPAddr(string(s))
			return types.Bool(err == nil)
		}))),
		cel.Function("string",
			cel.Overload("ip_to_string", []*cel.Type{ipType}, cel.StringType, cel.UnaryBinding(func(arg ref.Val) ref.Val {
				ip, ok := arg.(ipVal)
				if !ok {
					return types.MaybeNoSuchOverloadErr(arg)
				}
				return types.String(ip.addr.String())
			})),
			cel.Overload("cidr_to_string", []*cel.Type{cidrType}, cel.StringType, cel.UnaryBinding(cidrUnary(func(c netip.Prefix) ref.Val {
				return types.String(c.String())
			})))),
		cel.Function("cidr", cel.Overload("string_to_cidr", []*cel.Type{cel.StringType}, cidrType, cel.UnaryBinding(stringToCIDR))),
		cel.Function("containsIP",
			cel.MemberOverload("cidr_contains_ip_string", []*cel.Type{cidrType, cel.StringType}, cel.BoolType, cel.BinaryBinding(func(c, s ref.Val) ref.Val {
				return cidrContainsIP(c, stringToIP(s))
			})),
			cel.MemberOverload("cidr_contains_ip_ip", []*cel.Type{cidrType, ipType}, cel.BoolType, cel.BinaryBinding(cidrContainsIP))),
		cel.Function("containsCIDR",
			cel.MemberOverload("cidr_contains_cidr_string", []*cel.Type{cidrType, cel.StringType}, cel.BoolType, cel.BinaryBinding(func(c, s ref.Val) ref.Val {
				return cidrContainsCIDR(c, stringToCIDR(s))
			})),
			cel.MemberOverload("cidr_contains_cidr", []*cel.Type{cidrType, cidrType}, cel.BoolType, cel.BinaryBinding(cidrContainsCIDR))),
		cel.Function("prefixLength", cel.MemberOverload("cidr_prefix_length", []*cel.Type{cidrType}, cel.IntType, cel.UnaryBinding(cidrUnary(func(c netip.Prefix) ref.Val {
			return types.Int(c.Bits())
		})))),
		cel.Function("masked", cel.MemberOverload("cidr_masked", []*cel.Type{cidrType}, cidrType, cel.UnaryBinding(cidrUnary(func(c netip.Prefix) ref.Val {
			return cidrVal{c.Masked()}
		})))),
		cel.Function("isCIDR", cel.Overload("is_cidr", []*cel.Type{cel.StringType}, cel.BoolType, cel.UnaryBinding(func(arg ref.Val) ref.Val {
			s, ok := arg.(types.String)
			if !ok {
				return types.MaybeNoSuchOverloadErr(arg)
			}
			_, err := parseCIDR(string(s))
			return types.Bool(err == nil)
		}))),
	}
}

func (netLibrary) ProgramOptions() []cel.ProgramOption { return nil }

func stringToIP(arg ref.Val) ref.Val {
	s, ok := arg.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(arg)
	}
	addr, err := parseIPAddr(string(s))
	if err != nil {
		return types.NewErr("%v", err)
	}
	return ipVal{addr}
}

func ipFamily(arg ref.Val) ref.Val {
	ip, ok := arg.(ipVal)
	if !ok {
		return types.MaybeNoSuchOverloadErr(arg)
	}
	switch {
	case ip.addr.Is4():
		return types.Int(4)
	case ip.addr.Is6():
		return types.Int(6)
	}
	return types.NewErr("IP address %q is not an IPv4 or IPv6 address", ip.addr.String())
}

func ipIsCanonical(arg ref.Val) ref.Val {
	s, ok := arg.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(arg)
	}
	addr, err := parseIPAddr(string(s))
	if err != nil {
		return types.NewErr("%v", err)
	}
	return types.Bool(addr.String() == string(s))
}

// parseIPAddr accepts IPv4 and IPv6 addresses without zone, and rejects
// IPv4-mapped IPv6 addresses, as Kubernetes does.
func parseIPAddr(raw string) (netip.Addr, error) {
	addr, err := netip.ParseAddr(raw)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("IP Address %q parse error during conversion from string: %v", raw, err)
	}
	if addr.Zone() != "" {
		return netip.Addr{}, fmt.Errorf("IP address %q with zone value is not allowed", raw)
	}
	if addr.Is4In6() {
		return netip.Addr{}, fmt.Errorf("IPv4-mapped IPv6 address %q is not allowed", raw)
	}
	return addr, nil
}

func stringToCIDR(arg ref.Val) ref.Val {
	s, ok := arg.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(arg)
	}
	prefix, err := parseCIDR(string(s))
	if err != nil {
		return types.NewErr("network address parse error during conversion from string: %v", err)
	}
	return cidrVal{prefix}
}

func parseCIDR(raw string) (netip.Prefix, error) {
	prefix, err := netip.ParsePrefix(raw)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("network address parse error during conversion from string: %v", err)
	}
	if prefix.Addr().Is4In6() {
		return netip.Prefix{}, fmt.Errorf("IPv4-mapped IPv6 address %q is not allowed", raw)
	}
	return prefix, nil
}

func cidrUnary(f func(netip.Prefix) ref.Val) func(ref.Val) ref.Val {
	return unaryOf(func(c cidrVal) ref.Val { return f(c.prefix) })
}

var (
	cidrContainsIP = binaryOf(func(c cidrVal, ip ipVal) ref.Val {
		return types.Bool(c.prefix.Contains(ip.addr))
	})
	cidrContainsCIDR = binaryOf(func(c, o cidrVal) ref.Val {
		return types.Bool(c.prefix.Overlaps(o.prefix) && c.prefix.Bits() <= o.prefix.Bits())
	})
)
