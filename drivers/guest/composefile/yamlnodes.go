package composefile

import (
	"bytes"
	"errors"
	"io"

	"go.yaml.in/yaml/v4"
)

// documents parses every YAML document of a file into nodes, which keep
// their positions; nil when it does not parse (the loader then says why).
func documents(data []byte) []*yaml.Node {
	var out []*yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			return nil
		}
		if n := deref(&doc); n != nil && n.Kind == yaml.MappingNode {
			out = append(out, n)
		}
	}
}

// deref follows documents and aliases to the node they stand for.
func deref(n *yaml.Node) *yaml.Node {
	for depth := 0; n != nil && depth < 64; depth++ {
		switch {
		case n.Kind == yaml.DocumentNode && len(n.Content) == 1:
			n = n.Content[0]
		case n.Kind == yaml.AliasNode:
			n = n.Alias
		default:
			return n
		}
	}
	return nil
}

type entry struct {
	key string
	val *yaml.Node
}

// entries are a mapping's keys and values, with those a merge key (<<)
// brings in: a path can hide in an anchor as well as in the service.
func entries(n *yaml.Node) []entry {
	return mergedEntries(n, 0)
}

func mergedEntries(n *yaml.Node, depth int) []entry {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode || depth > 16 {
		return nil
	}
	var out []entry
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Tag == "!!merge" || k.Value == "<<" {
			for _, m := range items(v) {
				out = append(out, mergedEntries(m, depth+1)...)
			}
			continue
		}
		out = append(out, entry{k.Value, v})
	}
	return out
}

// field is a mapping's value for key (the last one given), or nil.
func field(n *yaml.Node, key string) *yaml.Node {
	var found *yaml.Node
	for _, e := range entries(n) {
		if e.key == key {
			found = e.val
		}
	}
	return deref(found)
}

// items are a sequence's elements, or the node itself when it is one
// value (compose takes a string where it takes a list of them).
func items(n *yaml.Node) []*yaml.Node {
	n = deref(n)
	switch {
	case n == nil:
		return nil
	case n.Kind == yaml.SequenceNode:
		out := make([]*yaml.Node, 0, len(n.Content))
		for _, c := range n.Content {
			if c = deref(c); c != nil {
				out = append(out, c)
			}
		}
		return out
	}
	return []*yaml.Node{n}
}

// scalar is a node's text when it is a string that is set.
func scalar(n *yaml.Node) (string, bool) {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", false
	}
	return n.Value, true
}
