package manifest

import (
	"bytes"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"sigs.k8s.io/yaml"

	corev1 "k8s.io/api/core/v1"
)

// A List in YAML (kubectl get -o yaml) is one document: converted whole to JSON, as yamlToJSON
// does, it is parsed into two trees of every node of the dump at once (the YAML nodes that find
// duplicate keys and measure aliases, and the values the conversion makes), hundreds of MB for
// a dump of 14 MB. yamlList converts it item by item instead: the lines of the block sequence
// under the top-level key "items:" are cut at each entry ("- " at the sequence's indentation), and
// each entry, a one-entry sequence, is converted alone, as is the rest of the document with
// "items: []" in their place.
//
// The answer is the one yamlToJSON and document give for the whole document. The checks on the
// whole document are made on its parts, whose sums are the whole's: the size with aliases
// expanded (a sequence is its brackets and its entries with a separator each), the size of the
// JSON (the entries and a comma between every two), the long exponents, the duplicate keys. The
// items are decoded only once every part is converted and checked, so that an error of the whole
// document is reported as before, before any item's. A cut that is not between two entries
// leaves a part that does not parse (an entry ended inside a quoted or flow scalar, an alias to an
// anchor of another entry); then, and for anything not plainly a List with its items in block
// style, the whole document is converted as before.

// yamlListParts are the parts of a YAML document cut by splitYAMLList.
type yamlListParts struct {
	skeleton []byte
	entries  [][]byte
}

// splitYAMLList cuts doc into the entries of its top-level "items:" block sequence and the rest;
// ok is false when doc has no such sequence.
func splitYAMLList(doc []byte) (parts yamlListParts, ok bool) {
	var skeleton bytes.Buffer
	rest := doc
	// Before "items:": the lines of the rest.
	for {
		if len(rest) == 0 {
			return yamlListParts{}, false
		}
		line, after := cutLine(rest)
		if string(bytes.TrimRight(line, " \r\n")) == "items:" {
			skeleton.WriteString("items: []\n")
			rest = after
			break
		}
		skeleton.Write(line)
		rest = after
	}
	indent := -1
	var entry []byte // the entry being read: a sub-slice of doc
	for len(rest) > 0 {
		line, after := cutLine(rest)
		text := bytes.TrimRight(line, " \r\n")
		trimmed := bytes.TrimLeft(text, " ")
		if len(trimmed) == 0 || trimmed[0] == '#' {
			if entry != nil {
				entry = entry[:len(entry)+len(line)]
			}
			rest = after
			continue
		}
		n := len(text) - len(trimmed)
		isEntry := trimmed[0] == '-' && (len(trimmed) == 1 || trimmed[1] == ' ')
		if indent < 0 {
			if !isEntry {
				return yamlListParts{}, false // not a block sequence
			}
			indent = n
		}
		switch {
		case n > indent && entry != nil:
			entry = entry[:len(entry)+len(line)]
		case n == indent && isEntry:
			if entry != nil {
				parts.entries = append(parts.entries, entry)
			}
			entry = line
		default:
			// The sequence has ended: the rest is the document's.
			if entry != nil {
				parts.entries = append(parts.entries, entry)
			}
			skeleton.Write(rest)
			parts.skeleton = skeleton.Bytes()
			return parts, true
		}
		rest = after
	}
	if entry != nil {
		parts.entries = append(parts.entries, entry)
	}
	parts.skeleton = skeleton.Bytes()
	return parts, true
}

// cutLine returns the first line of b, its newline included, and what follows; the line is a
// sub-slice of b that may grow into what follows.
func cutLine(b []byte) (line, rest []byte) {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return b[: i+1 : len(b)], b[i+1:]
	}
	return b, nil
}

// yamlList decodes the YAML document doc as a List item by item (see above); handled is false
// when doc is not plainly a List in block style, or one of the checks of the whole document
// fails on a part, and nothing was decoded: the caller converts the whole document.
func (d *decoder) yamlList(doc []byte, src Source) (handled bool, err error) {
	if bytes.IndexByte(doc, '*') >= 0 {
		// Maybe an alias: the YAML libraries bound aliases by their share of the whole
		// document's nodes, which no part tells.
		return false, nil
	}
	parts, ok := splitYAMLList(doc)
	if !ok || len(parts.entries) == 0 {
		return false, nil
	}
	limit := d.opts.MaxBytes
	dups, size, empty, err := parseYAML(parts.skeleton, limit)
	if err != nil || empty || len(dups) > 0 {
		return false, nil
	}
	skeleton, err := yaml.YAMLToJSON(parts.skeleton)
	if err != nil || hasLongExponent(skeleton) {
		return false, nil
	}
	jsonSize := int64(len(skeleton))
	entries := convertEntries(parts.entries, limit)
	items := make([][]byte, len(entries))
	itemDups := make([][]string, len(entries))
	for i, e := range entries {
		if !e.ok {
			return false, nil
		}
		// The entry alone is a document ({2} + the sequence + 1) whose sequence is {2} + the
		// entry + 1; in the whole document it adds the entry and a separator.
		size += e.size - 6 + 1
		jsonSize += int64(len(e.item))
		if i > 0 {
			jsonSize++ // the comma
		}
		if size > limit || jsonSize > limit {
			return false, nil
		}
		items[i], itemDups[i] = e.item, e.dups
		entries[i] = convertedEntry{}
	}
	_, ser := codec()
	obj, gvk, err := ser.Decode(skeleton, nil, nil)
	if _, isList := obj.(*corev1.List); !isList || err != nil {
		return false, nil
	}
	if err := d.decodeError(obj, gvk, nil, src, nil); err != nil {
		return true, err
	}
	return true, d.listItems(items, src, func(i int) []string { return itemDups[i] })
}

// maxPartDepth is the deepest nesting of an item yamlList converts alone: the libraries bound
// nesting, and an item two levels shallower alone than in its List must not pass their bounds
// alone only.
const maxPartDepth = 1000

// jsonShape reads data, JSON that json.Marshal made: the deepest nesting of its arrays and objects,
// and the number of values in it, if it is an array.
func jsonShape(data []byte) (deepest, entries int) {
	depth, inString, escaped := 0, false, false
	for _, c := range data {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString:
		case c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
		case c == ']' || c == '}':
			depth--
		case c == ',' && depth == 1:
			entries++
		}
	}
	if len(data) > 2 && data[0] == '[' {
		entries++ // n values, n-1 commas
	}
	return deepest, entries
}

// convertedEntry is an entry of a YAML List converted alone: its JSON, the paths of its duplicate
// keys (relative to the item) and its size as JSON with aliases expanded (see expandedSize); ok is
// false when the entry is not one item the whole document's conversion would give as it is.
type convertedEntry struct {
	item []byte
	dups []string
	size int64
	ok   bool
}

// minEntriesPerWorker is the fewest entries that are worth one more goroutine.
const minEntriesPerWorker = 64

// convertEntries converts the entries of a YAML List, on as many goroutines as the machine runs Go
// code on (parsing is most of the time of reading a dump in YAML, and the entries are independent);
// the answer is the one converting them in turn gives.
func convertEntries(entries [][]byte, limit int64) []convertedEntry {
	out := make([]convertedEntry, len(entries))
	workers := min(runtime.GOMAXPROCS(0), len(entries)/minEntriesPerWorker+1)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			var scratch bytes.Buffer
			// Each round takes one more entry, so the loop ends with the entries.
			for {
				i := int(next.Add(1) - 1)
				if i >= len(entries) {
					return
				}
				out[i] = convertEntry(entries[i], limit, &scratch)
			}
		})
	}
	wg.Wait()
	return out
}

// convertEntry converts one entry of a YAML List. A panic (a bug in a YAML library) leaves the entry
// not converted, so that the whole document is converted in the caller's goroutine, as before.
func convertEntry(entry []byte, limit int64, scratch *bytes.Buffer) (e convertedEntry) {
	defer func() {
		if recover() != nil {
			e = convertedEntry{}
		}
	}()
	root, dups, size, empty, err := parseYAMLTree(entry, limit)
	if err != nil || empty {
		return convertedEntry{}
	}
	// The JSON from the tree parsed (see yamljson.go), else converted by sigs.k8s.io/yaml.
	item, fast := entryJSON(scratch, root, entry)
	if !fast {
		data, err := yaml.YAMLToJSON(entry)
		if err != nil || len(data) < 2 || data[0] != '[' || data[len(data)-1] != ']' {
			return convertedEntry{}
		}
		item = data[1 : len(data)-1]
		if depth, entries := jsonShape(data); depth > maxPartDepth+1 || entries != 1 {
			return convertedEntry{} // too deep, or not one entry after all
		}
	}
	if hasLongExponent(item) {
		return convertedEntry{} // a number for the whole to report
	}
	e = convertedEntry{item: item, size: size, ok: true}
	for _, p := range dups {
		// "[0].metadata.name" in the entry is "metadata.name" in the item, as splitItemPaths
		// makes "items[3].metadata.name".
		path, _ := strings.CutPrefix(p, "[0]")
		e.dups = append(e.dups, strings.TrimPrefix(path, "."))
	}
	return e
}
