package validation_test

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func ptr[T any](v T) *T { return &v }

func q(s string) resource.Quantity { return resource.MustParse(s) }

func qp(s string) *resource.Quantity { return ptr(q(s)) }

// wantField checks that errs holds an error at exactly path (and, when typ is not empty, of that type), or
// that errs is empty when path is "".
func wantField(t *testing.T, errs field.ErrorList, path string, typ field.ErrorType) {
	t.Helper()
	if path == "" {
		if len(errs) > 0 {
			t.Fatalf("want no errors, got %v", errs)
		}
		return
	}
	for _, e := range errs {
		if e.Field == path && (typ == "" || e.Type == typ) {
			return
		}
	}
	t.Fatalf("want an error at %s (%s), got:\n%s", path, typ, list(errs))
}

func list(errs field.ErrorList) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "  %s\n", e.Error())
	}
	if len(errs) == 0 {
		b.WriteString("  (none)\n")
	}
	return b.String()
}
