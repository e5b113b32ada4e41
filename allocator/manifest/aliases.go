package manifest

import (
	"errors"
	"fmt"

	yamlv3 "go.yaml.in/yaml/v3"
)

// errAliasCycle reports an alias inside the node it refers to, which has no JSON form.
var errAliasCycle = errors.New("a YAML alias refers to a node that contains it")

// expandedSize is the size of the JSON that the YAML document root becomes once its aliases are
// expanded, or a number over limit as soon as it is clear that the size is over limit. The YAML
// library bounds aliases by the number of nodes they expand to, not by bytes: a 156 KiB document
// whose 10 KiB anchored string is referred to 50,000 times becomes 500 MB of JSON. The size of
// each anchored node is computed once, so the walk is linear in the document, however deeply
// aliases nest. The size of a scalar is its length with two quotes: an estimate (escapes make the
// JSON longer, numbers have no quotes), good enough to refuse a blow-up before it happens; the
// JSON made is measured again exactly.
func expandedSize(root *yamlv3.Node, limit int64) (int64, error) {
	// anchored holds the sizes of the nodes aliases refer to; -1 while a node is being measured.
	anchored := make(map[*yamlv3.Node]int64)
	add := func(a, b int64) int64 { return min(a+b, limit+1) } // saturate: no overflow
	var size func(n *yamlv3.Node) (int64, error)
	size = func(n *yamlv3.Node) (int64, error) {
		if n == nil {
			return 0, nil
		}
		if n.Anchor != "" || n.Kind == yamlv3.AliasNode {
			target := n
			if n.Kind == yamlv3.AliasNode {
				target = n.Alias
			}
			if s, ok := anchored[target]; ok {
				if s < 0 {
					return 0, errAliasCycle
				}
				return s, nil
			}
			anchored[target] = -1
			s, err := contentSize(target, size, add)
			if err != nil {
				return 0, err
			}
			anchored[target] = s
			return s, nil
		}
		return contentSize(n, size, add)
	}
	return size(root)
}

// contentSize is the JSON size of n, measuring its children with size.
func contentSize(n *yamlv3.Node, size func(*yamlv3.Node) (int64, error), add func(a, b int64) int64) (int64, error) {
	switch n.Kind {
	case yamlv3.ScalarNode:
		return add(int64(len(n.Value)), 2), nil
	case yamlv3.AliasNode:
		return size(n.Alias)
	}
	// A document, a sequence ([a,b]) or a mapping ({"k":v,...}): the children, a separator
	// between every two, and the brackets.
	total := int64(2)
	for _, c := range n.Content {
		s, err := size(c)
		if err != nil {
			return 0, err
		}
		total = add(total, add(s, 1))
	}
	return total, nil
}

// tooLargeDocument reports a document over limit once its aliases are expanded.
func tooLargeDocument(limit int64) error {
	return fmt.Errorf("%w: more than %d bytes (Options.MaxBytes) once its YAML aliases are expanded", ErrTooLarge, limit)
}
