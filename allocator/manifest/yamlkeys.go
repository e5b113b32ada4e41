package manifest

import (
	"fmt"

	yamlv3 "go.yaml.in/yaml/v3"
)

// duplicateKeys parses a YAML document and returns the field paths of the keys that a mapping gives
// twice, like "spec.devices.requests[0].name", in document order; empty reports a document without
// content. kube-apiserver refuses such documents under strict field validation; the YAML to JSON
// conversion alone would keep the last value silently. A document that would be larger than limit
// bytes of JSON once its aliases are expanded is an error wrapping ErrTooLarge, found before any
// alias is expanded.
func duplicateKeys(doc []byte, limit int64) (dups []string, empty bool, err error) {
	dups, _, empty, err = parseYAML(doc, limit)
	return dups, empty, err
}

// parseYAML is duplicateKeys that also returns the size of the document as JSON, its aliases
// expanded (see expandedSize).
func parseYAML(doc []byte, limit int64) (dups []string, size int64, empty bool, err error) {
	_, dups, size, empty, err = parseYAMLTree(doc, limit)
	return dups, size, empty, err
}

// parseYAMLTree is parseYAML that also returns the parsed document.
func parseYAMLTree(doc []byte, limit int64) (root *yamlv3.Node, dups []string, size int64, empty bool, err error) {
	root = new(yamlv3.Node)
	if err := yamlv3.Unmarshal(doc, root); err != nil {
		return nil, nil, 0, false, err
	}
	if root.Kind == 0 || (root.Kind == yamlv3.DocumentNode && len(root.Content) == 0) {
		return nil, nil, 0, true, nil
	}
	if size, err = expandedSize(root, limit); err != nil {
		return nil, nil, 0, false, err
	} else if size > limit {
		return nil, nil, 0, false, tooLargeDocument(limit)
	}
	var walk func(n *yamlv3.Node, path string)
	walk = func(n *yamlv3.Node, path string) {
		switch n.Kind {
		case yamlv3.DocumentNode:
			for _, c := range n.Content {
				walk(c, path)
			}
		case yamlv3.AliasNode:
			// An alias repeats a node checked where it is defined.
		case yamlv3.SequenceNode:
			for i, c := range n.Content {
				walk(c, fmt.Sprintf("%s[%d]", path, i))
			}
		case yamlv3.MappingNode:
			seen := make(map[string]bool, len(n.Content)/2)
			for i := 0; i+1 < len(n.Content); i += 2 {
				key := n.Content[i].Value
				child := key
				if path != "" {
					child = path + "." + key
				}
				if seen[key] {
					dups = append(dups, child)
				}
				seen[key] = true
				walk(n.Content[i+1], child)
			}
		}
	}
	walk(root, "")
	return root, dups, size, false, nil
}
