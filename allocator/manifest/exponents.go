package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
)

// maxExponentDigits bounds the exponent of a number the loader lets through to the decoder. A
// resource.Quantity is parsed when it is decoded, and apimachinery's ParseQuantity rounds a value like
// 1e-10000000 digit by digit: that one string takes seconds, one with a longer exponent minutes, before
// any of dralloc's checks can run. No quantity the allocator accepts has an exponent beyond ±36
// (capacity.ValidateQuantity), so refusing exponents of five or more digits changes no verdict.
const maxExponentDigits = 4

// numberWithLongExponent is a whole JSON string or number that is such a number.
var numberWithLongExponent = regexp.MustCompile(`^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)[eE][+-]?[0-9]{5,}$`)

// hasLongExponent finds the documents worth a closer look (most have no such number at all): it says
// whether data holds a digit or a dot, then e or E, an optional sign and more than maxExponentDigits
// digits, as the regular expression `[0-9.][eE][+-]?[0-9]{5,}` would. It is a scan by hand because
// that regular expression took a third of loading a 10 MiB dump: Go's regexp steps through every
// byte of a document no match starts in.
func hasLongExponent(data []byte) bool {
	for i := 1; i < len(data); i++ {
		if c := data[i]; c != 'e' && c != 'E' {
			continue
		}
		if p := data[i-1]; p != '.' && (p < '0' || p > '9') {
			continue
		}
		j := i + 1
		if j < len(data) && (data[j] == '+' || data[j] == '-') {
			j++
		}
		digits := 0
		for j < len(data) && digits <= maxExponentDigits && data[j] >= '0' && data[j] <= '9' {
			digits++
			j++
		}
		if digits > maxExponentDigits {
			return true
		}
	}
	return false
}

// checkExponents reports a string or number in the JSON document data written with an exponent of more
// than maxExponentDigits digits. Malformed JSON is left to the decoder, which reports it with its path.
func checkExponents(data []byte) error {
	if !hasLongExponent(data) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err == io.EOF || err != nil {
			return nil
		}
		var s string
		switch v := tok.(type) {
		case string:
			s = v
		case json.Number:
			s = string(v)
		default:
			continue
		}
		if numberWithLongExponent.MatchString(s) {
			return fmt.Errorf("%q: exponent out of range (at most %d digits)", s, maxExponentDigits)
		}
	}
}
