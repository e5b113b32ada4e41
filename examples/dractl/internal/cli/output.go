package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"

	"sigs.k8s.io/yaml"
)

// encode writes v as YAML or JSON, as -o asks.
func (e *env) encode(v any) error {
	if e.output == "json" {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	data, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	_, err = e.stdout.Write(data)
	return err
}

// listEncoder writes the document {key: [item, ...]} item by item, byte for byte as encode writes
// it whole (TestListEncoderAsWhole), so that a command answering for every pod of a large cluster
// keeps one item at a time, not all of them until the end. An error before end leaves the document
// unfinished.
type listEncoder struct {
	e *env
	// key is a plain word, which JSON and YAML write as it is.
	key string
	n   int
	buf bytes.Buffer
}

// list starts the document {key: [...]} in the format of -o (json or yaml): its items are given to
// add, and end closes it.
func (e *env) list(key string) *listEncoder {
	return &listEncoder{e: e, key: key}
}

// add writes one item of the list.
func (l *listEncoder) add(v any) error {
	l.buf.Reset()
	if l.e.output == "json" {
		// As json.Encoder with SetIndent("", "  ") writes an item of a list that is a key's value at
		// the top level: its lines indented by four spaces, after "[" or ",".
		data, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if l.n == 0 {
			l.buf.WriteString("{\n  " + strconv.Quote(l.key) + ": [\n    ")
		} else {
			l.buf.WriteString(",\n    ")
		}
		if err := json.Indent(&l.buf, data, "    ", "  "); err != nil {
			return err
		}
	} else {
		// YAML writes a list that is a key's value at the top level at the key's indentation, so
		// each item is written as the one item of a list of its own.
		data, err := yaml.Marshal([]any{v})
		if err != nil {
			return err
		}
		if l.n == 0 {
			l.buf.WriteString(l.key + ":\n")
		}
		l.buf.Write(data)
	}
	l.n++
	_, err := l.e.stdout.Write(l.buf.Bytes())
	return err
}

// end closes the list and the document.
func (l *listEncoder) end() error {
	switch {
	case l.n == 0:
		return l.e.encode(map[string]any{l.key: []any{}})
	case l.e.output == "json":
		_, err := io.WriteString(l.e.stdout, "\n  ]\n}\n")
		return err
	}
	return nil
}
