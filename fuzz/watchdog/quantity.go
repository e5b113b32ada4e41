package watchdog

import (
	"strconv"
	"strings"
)

// SlowToParse reports whether k8s.io/apimachinery's resource.ParseQuantity may itself take seconds or more
// on s: an exponent below -1000 (it rounds the number to nano precision: "1E-100000000" takes over a
// minute), an exponent above 1000 with a mantissa of more than 64 characters (100,000 nines with
// E100000000 take minutes), or a string over 64 KiB. Fuzz targets that turn strings into quantities skip
// these: the parse happens before any dralloc code sees the value, and a slow input must be dralloc's.
// Huge values that parse quickly ("1E100000000", "0E100000000") are not skipped.
func SlowToParse(s string) bool {
	if len(s) > 64<<10 {
		return true
	}
	mantissa := len(s) - len(strings.TrimLeft(s, "+-0123456789."))
	rest := s[mantissa:]
	if len(rest) < 2 || (rest[0] != 'e' && rest[0] != 'E') {
		return false
	}
	exp, err := strconv.ParseInt(rest[1:], 10, 64)
	if err != nil {
		// Out of int64 range, or not an exponent at all (a suffix such as "Ei").
		return strings.Trim(rest[1:], "+-0123456789") == ""
	}
	return exp < -1000 || (exp > 1000 && mantissa > 64)
}
