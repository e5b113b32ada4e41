package celenv

import (
	"fmt"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The Kubernetes format library: format.named(name) and the constant
// formats format.dns1123Label() etc., each with validate(string), which
// yields optional.none() for a valid string and the list of problems
// otherwise.

var formatType = cel.ObjectType("kubernetes.NamedFormat")

const (
	// maxFormatSize and maxNameFormatRegexSize are Kubernetes' cost bounds
	// for formats.
	maxFormatSize          = 64
	maxNameFormatRegexSize = 128
)

// formatVal is a named format as a CEL value.
type formatVal struct {
	name     string
	validate func(string) []string
	// maxRegexSize prices validate() in the cost model.
	maxRegexSize int
}

func (f *formatVal) ConvertToNative(typeDesc reflect.Type) (any, error) {
	return nil, fmt.Errorf("type conversion error from 'Format' to '%v'", typeDesc)
}

func (f *formatVal) ConvertToType(typeVal ref.Type) ref.Val {
	return convertOpaque(f, formatType, nil, typeVal)
}

func (f *formatVal) Equal(other ref.Val) ref.Val {
	o, ok := other.(*formatVal)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(f.name == o.name)
}

func (f *formatVal) Type() ref.Type { return formatType }
func (f *formatVal) Value() any     { return f }

var (
	// The patterns OpenAPI's string formats check, as Kubernetes uses them.
	uuidPattern      = `(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$`
	uuidRegexp       = regexp.MustCompile(uuidPattern)
	base64Regexp     = regexp.MustCompile(`^(?:[A-Za-z0-9+\/]{4})*(?:[A-Za-z0-9+\/]{2}==|[A-Za-z0-9+\/]{3}=|[A-Za-z0-9+\/]{4})$`)
	timeOfDayPattern = `^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$`
	timeOfDayRegexp  = regexp.MustCompile(timeOfDayPattern)
)

func isDate(s string) bool {
	_, err := time.Parse("2006-01-02", s)
	return err == nil
}

// isDateTime accepts "<full-date>T<time>" the way OpenAPI's datetime
// format does (case-insensitive T and Z, no range check on the date part
// beyond its parse).
func isDateTime(s string) bool {
	if len(s) < 4 {
		return false
	}
	parts := strings.Split(strings.ToLower(s), "t")
	if len(parts) < 2 || !isDate(parts[0]) {
		return false
	}
	m := timeOfDayRegexp.FindStringSubmatch(parts[1])
	return m != nil && m[1] <= "23" && m[2] <= "59" && m[3] <= "59"
}

func problemUnless(ok bool, problem string) []string {
	if ok {
		return nil
	}
	return []string{problem}
}

var namedFormats = map[string]*formatVal{
	"dns1123Label": {name: "DNS1123Label", maxRegexSize: 30,
		validate: func(s string) []string { return apimachineryvalidation.NameIsDNSLabel(s, false) }},
	"dns1123Subdomain": {name: "DNS1123Subdomain", maxRegexSize: 60,
		validate: func(s string) []string { return apimachineryvalidation.NameIsDNSSubdomain(s, false) }},
	"dns1035Label": {name: "DNS1035Label", maxRegexSize: 30,
		validate: func(s string) []string { return apimachineryvalidation.NameIsDNS1035Label(s, false) }},
	"qualifiedName": {name: "QualifiedName", maxRegexSize: 60, validate: validation.IsQualifiedName},
	"dns1123LabelPrefix": {name: "DNS1123LabelPrefix", maxRegexSize: 30,
		validate: func(s string) []string { return apimachineryvalidation.NameIsDNSLabel(s, true) }},
	"dns1123SubdomainPrefix": {name: "DNS1123SubdomainPrefix", maxRegexSize: 60,
		validate: func(s string) []string { return apimachineryvalidation.NameIsDNSSubdomain(s, true) }},
	"dns1035LabelPrefix": {name: "DNS1035LabelPrefix", maxRegexSize: 30,
		validate: func(s string) []string { return apimachineryvalidation.NameIsDNS1035Label(s, true) }},
	"labelValue": {name: "LabelValue", maxRegexSize: 40, validate: validation.IsValidLabelValue},
	"uri": {name: "URI", maxRegexSize: 1103, validate: func(s string) []string {
		if _, err := url.ParseRequestURI(s); err != nil {
			return []string{err.Error()}
		}
		return nil
	}},
	"uuid": {name: "uuid", maxRegexSize: len(uuidPattern),
		validate: func(s string) []string {
			return problemUnless(uuidRegexp.MatchString(s), "does not match the UUID format")
		}},
	"byte": {name: "byte", maxRegexSize: 84,
		validate: func(s string) []string { return problemUnless(base64Regexp.MatchString(s), "invalid base64") }},
	"date": {name: "date", maxRegexSize: len(timeOfDayPattern),
		validate: func(s string) []string { return problemUnless(isDate(s), "invalid date") }},
	"datetime": {name: "datetime", maxRegexSize: len(timeOfDayPattern),
		validate: func(s string) []string { return problemUnless(isDateTime(s), "invalid datetime") }},
}

type formatLibrary struct{}

func (formatLibrary) LibraryName() string { return "kubernetes.format" }

func (formatLibrary) CompileOptions() []cel.EnvOption {
	opts := []cel.EnvOption{
		cel.Function("validate", cel.MemberOverload("format-validate", []*cel.Type{formatType, cel.StringType},
			cel.OptionalType(cel.ListType(cel.StringType)), cel.BinaryBinding(formatValidate))),
		cel.Function("format.named", cel.Overload("format-named", []*cel.Type{cel.StringType},
			cel.OptionalType(formatType), cel.UnaryBinding(func(name ref.Val) ref.Val {
				s, ok := name.(types.String)
				if !ok {
					return types.MaybeNoSuchOverloadErr(name)
				}
				f, ok := namedFormats[string(s)]
				if !ok {
					return types.OptionalNone
				}
				return types.OptionalOf(f)
			}))),
	}
	for name, f := range namedFormats {
		fn := "format." + name
		opts = append(opts, cel.Function(fn, cel.Overload(fn, []*cel.Type{}, formatType,
			cel.FunctionBinding(func(...ref.Val) ref.Val { return f }))))
	}
	return opts
}

func (formatLibrary) ProgramOptions() []cel.ProgramOption { return nil }

func formatValidate(fv, sv ref.Val) ref.Val {
	f, ok := fv.(*formatVal)
	if !ok {
		return types.MaybeNoSuchOverloadErr(fv)
	}
	s, ok := sv.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(sv)
	}
	problems := f.validate(string(s))
	if len(problems) == 0 {
		return types.OptionalNone
	}
	return types.OptionalOf(types.NewStringList(types.DefaultTypeAdapter, problems))
}
