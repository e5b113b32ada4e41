package manifest

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
)

// An entry of a YAML List is parsed once by go.yaml.in/yaml/v3, for its duplicate keys and its size
// (parseYAMLTree), and was parsed a second time by sigs.k8s.io/yaml to convert it to JSON: half the
// time of reading a dump in YAML. nodeJSON writes the JSON from the tree already parsed instead, for
// the YAML that Kubernetes objects are written in (kubectl get -o yaml, hand-written manifests), and
// declines anything else, which is then converted as before.
//
// The JSON must be byte for byte what sigs.k8s.io/yaml.YAMLToJSON writes, which resolves plain
// scalars as go.yaml.in/yaml/v2 does (YAML 1.1: yes, on and y are true) and writes the result with
// encoding/json (the keys of a mapping sorted, strings with HTML characters escaped). nodeJSON
// writes only what it resolves exactly as that: mappings with keys that are strings and not given
// twice, sequences, quoted and block scalars (strings), and plain scalars that are null, a boolean,
// a canonical decimal integer, or a string that no rule of YAML 1.1 reads as anything else. It
// declines a tag (a "!" anywhere in the entry), a merge key ("<<"), an alias, any other number
// (floats, octal, hexadecimal, binary, underscores, .inf) and a key that is not a string.

// maxFastIntDigits bounds the decimal integers nodeJSON writes: every one fits an int64.
const maxFastIntDigits = 18

// nodeJSON appends the JSON of n to b; ok is false when n is not in the form nodeJSON writes (see
// above), and b is then to be discarded. depth is n's nesting; deeper than maxPartDepth is declined.
func nodeJSON(b *bytes.Buffer, n *yamlv3.Node, depth int) (ok bool) {
	if depth > maxPartDepth || n.Anchor != "" {
		return false
	}
	switch n.Kind {
	case yamlv3.ScalarNode:
		if n.Style&yamlv3.TaggedStyle != 0 {
			return false
		}
		if n.Style&(yamlv3.DoubleQuotedStyle|yamlv3.SingleQuotedStyle|yamlv3.LiteralStyle|yamlv3.FoldedStyle) != 0 {
			writeJSONString(b, n.Value)
			return true
		}
		return plainJSON(b, n.Value)
	case yamlv3.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if !nodeJSON(b, c, depth+1) {
				return false
			}
		}
		b.WriteByte(']')
		return true
	case yamlv3.MappingNode:
		if len(n.Content)%2 != 0 {
			return false
		}
		// encoding/json writes a map's keys sorted; order holds the pairs' indexes by key.
		order := make([]int, 0, len(n.Content)/2)
		for i := 0; i < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yamlv3.ScalarNode || k.Anchor != "" || k.Style&yamlv3.TaggedStyle != 0 || !stringKey(k) {
				return false
			}
			order = append(order, i)
		}
		slices.SortFunc(order, func(i, j int) int { return strings.Compare(n.Content[i].Value, n.Content[j].Value) })
		b.WriteByte('{')
		for j, i := range order {
			if j > 0 {
				if n.Content[order[j-1]].Value == n.Content[i].Value {
					return false // a key given twice: the caller reports it
				}
				b.WriteByte(',')
			}
			writeJSONString(b, n.Content[i].Value)
			b.WriteByte(':')
			if !nodeJSON(b, n.Content[i+1], depth+1) {
				return false
			}
		}
		b.WriteByte('}')
		return true
	}
	return false // a document or an alias
}

// stringKey reports whether the scalar k is a string as go.yaml.in/yaml/v2 reads it: quoted, in
// block style, or plain that resolves to a string; and not the merge key.
func stringKey(k *yamlv3.Node) bool {
	if k.Style&(yamlv3.DoubleQuotedStyle|yamlv3.SingleQuotedStyle|yamlv3.LiteralStyle|yamlv3.FoldedStyle) != 0 {
		return true
	}
	return k.Value != "<<" && plainKind(k.Value) == plainString
}

type plainResolution int

const (
	plainOther plainResolution = iota // a number nodeJSON does not write, or not sure
	plainString
	plainNull
	plainTrue
	plainFalse
	plainInt
)

// plainKind resolves a plain scalar as go.yaml.in/yaml/v2's resolve does, as far as nodeJSON
// writes it. The first byte picks the rules there: a letter other than those of the words below, or
// any byte but a digit, sign, dot or tilde, is a string; y, n, t, f, o and ~ begin the words of
// booleans and null, else a string; a digit or sign begins a timestamp (a string, decoded into an
// interface), an integer (base 0 of strconv.ParseInt, underscores dropped, or 0b binary) or a float
// (digits, dot, exponent), else a string; a dot begins a float.
func plainKind(v string) plainResolution {
	switch v {
	case "", "~", "null", "Null", "NULL":
		return plainNull
	case "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON":
		return plainTrue
	case "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF":
		return plainFalse
	case "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF":
		return plainOther // the words of infinity, looked up before a sign's rules
	}
	c := v[0]
	switch {
	case c == '.':
		return plainOther // a float, .inf or .nan, or a string
	case c >= '0' && c <= '9', c == '-', c == '+':
		if canonicalInt(v) {
			return plainInt
		}
		// Integers in any base and floats are written with these bytes only; a value with another
		// byte is neither, and a timestamp is a string.
		for i := 0; i < len(v); i++ {
			if !strings.ContainsRune("0123456789abcdefABCDEFxXoO_+-.", rune(v[i])) {
				return plainString
			}
		}
		return plainOther
	}
	return plainString
}

// canonicalInt: an optional minus and a decimal integer without leading zeros, of at most
// maxFastIntDigits digits; strconv and encoding/json write it back unchanged.
func canonicalInt(v string) bool {
	digits := strings.TrimPrefix(v, "-")
	if digits == "" || len(digits) > maxFastIntDigits || (digits[0] == '0' && (len(digits) > 1 || len(v) > 1)) {
		return false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	return true
}

// plainJSON writes a plain scalar value; false when plainKind does not resolve it.
func plainJSON(b *bytes.Buffer, v string) bool {
	switch plainKind(v) {
	case plainString:
		writeJSONString(b, v)
	case plainNull:
		b.WriteString("null")
	case plainTrue:
		b.WriteString("true")
	case plainFalse:
		b.WriteString("false")
	case plainInt:
		b.WriteString(v)
	default:
		return false
	}
	return true
}

// writeJSONString writes s as encoding/json does.
func writeJSONString(b *bytes.Buffer, s string) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&':
			data, _ := json.Marshal(s) // escapes, invalid UTF-8: encoding/json's own rules
			b.Write(data)
			return
		}
	}
	b.WriteByte('"')
	b.WriteString(s)
	b.WriteByte('"')
}

// entryJSON is the JSON of the one entry of a YAML List cut out by splitYAMLList (root is the
// document "- <entry>" parsed), as sigs.k8s.io/yaml would convert it; ok is false when nodeJSON
// declines it or the entry has a "!" (maybe a tag, which the tree does not always show).
func entryJSON(b *bytes.Buffer, root *yamlv3.Node, entry []byte) (item []byte, ok bool) {
	if bytes.IndexByte(entry, '!') >= 0 || root.Kind != yamlv3.DocumentNode || len(root.Content) != 1 {
		return nil, false
	}
	seq := root.Content[0]
	if seq.Kind != yamlv3.SequenceNode || len(seq.Content) != 1 || seq.Anchor != "" || seq.Style&yamlv3.TaggedStyle != 0 {
		return nil, false
	}
	b.Reset()
	if !nodeJSON(b, seq.Content[0], 1) {
		return nil, false
	}
	return bytes.Clone(b.Bytes()), true
}
