package celenv

import (
	"net/url"
	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// The Kubernetes URL library: url(), isURL() and the getScheme(),
// getHost(), getHostname(), getPort(), getEscapedPath(), getQuery()
// accessors.

var urlType = cel.ObjectType("kubernetes.URL")

// urlVal is a parsed URL as a CEL value.
type urlVal struct{ u *url.URL }

func (v urlVal) ConvertToNative(typeDesc reflect.Type) (any, error) {
	return nativeOf(v.u, v.u.String, "URL", typeDesc)
}

func (v urlVal) ConvertToType(typeVal ref.Type) ref.Val {
	return convertOpaque(v, urlType, nil, typeVal)
}

func (v urlVal) Equal(other ref.Val) ref.Val {
	o, ok := other.(urlVal)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(v.u.String() == o.u.String())
}

func (v urlVal) Type() ref.Type { return urlType }
func (v urlVal) Value() any     { return v.u }

type urlLibrary struct{}

func (urlLibrary) LibraryName() string { return "kubernetes.urls" }

func (urlLibrary) CompileOptions() []cel.EnvOption {
	getter := func(name, id string, f func(*url.URL) string) cel.EnvOption {
		return cel.Function(name, cel.MemberOverload(id, []*cel.Type{urlType}, cel.StringType, cel.UnaryBinding(urlUnary(func(u *url.URL) ref.Val {
			return types.String(f(u))
		}))))
	}
	return []cel.EnvOption{
		cel.Function("url", cel.Overload("string_to_url", []*cel.Type{cel.StringType}, urlType, cel.UnaryBinding(stringToURL))),
		getter("getScheme", "url_get_scheme", func(u *url.URL) string { return u.Scheme }),
		getter("getHost", "url_get_host", func(u *url.URL) string { return u.Host }),
		getter("getHostname", "url_get_hostname", (*url.URL).Hostname),
		getter("getPort", "url_get_port", (*url.URL).Port),
		getter("getEscapedPath", "url_get_escaped_path", (*url.URL).EscapedPath),
		cel.Function("getQuery", cel.MemberOverload("url_get_query", []*cel.Type{urlType},
			cel.MapType(cel.StringType, cel.ListType(cel.StringType)), cel.UnaryBinding(urlUnary(func(u *url.URL) ref.Val {
				result := map[ref.Val]ref.Val{}
				for k, v := range u.Query() {
					result[types.String(k)] = types.NewStringList(types.DefaultTypeAdapter, v)
				}
				return types.NewRefValMap(types.DefaultTypeAdapter, result)
			})))),
		cel.Function("isURL", cel.Overload("is_url_string", []*cel.Type{cel.StringType}, cel.BoolType, cel.UnaryBinding(func(arg ref.Val) ref.Val {
			s, ok := arg.(types.String)
			if !ok {
				return types.MaybeNoSuchOverloadErr(arg)
			}
			_, err := url.ParseRequestURI(string(s))
			return types.Bool(err == nil)
		}))),
	}
}

func (urlLibrary) ProgramOptions() []cel.ProgramOption { return nil }

// stringToURL accepts what url.ParseRequestURI accepts (an absolute URL or
// an absolute path), as Kubernetes does.
func stringToURL(arg ref.Val) ref.Val {
	s, ok := arg.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(arg)
	}
	if _, err := url.ParseRequestURI(string(s)); err != nil {
		return types.NewErr("URL parse error during conversion from string: %v", err)
	}
	u, err := url.Parse(string(s))
	if err != nil {
		return types.NewErr("URL parse error during conversion from string: %v", err)
	}
	return urlVal{u}
}

func urlUnary(f func(*url.URL) ref.Val) func(ref.Val) ref.Val {
	return unaryOf(func(v urlVal) ref.Val { return f(v.u) })
}
