package spec

import (
	"errors"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// Pos is a place in a layer's source.
type Pos struct {
	Line, Column int
}

// layer is one source of desired state: a decoded tree plus where each
// key and value was written, so every later check can point at it.
type layer struct {
	source string // absolute path, "defaults", or a pseudo-file such as "request_overrides"
	tree   map[string]any
	keys   map[string]Pos // path → position of the key
	values map[string]Pos // path → position of the value
}

func newLayer(source string) *layer {
	return &layer{source: source, tree: map[string]any{}, keys: map[string]Pos{}, values: map[string]Pos{}}
}

// at returns the best position for a path: its value, else its key, else
// the nearest enclosing key.
func (l *layer) at(path string, preferKey bool) Pos {
	for p := path; ; {
		if preferKey {
			if pos, ok := l.keys[p]; ok {
				return pos
			}
		}
		if pos, ok := l.values[p]; ok {
			return pos
		}
		if pos, ok := l.keys[p]; ok {
			return pos
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			return Pos{}
		}
		p = p[:i]
	}
}

func (l *layer) errorAt(path string, preferKey bool, msg string) Error {
	pos := l.at(path, preferKey)
	return Error{File: l.source, Line: pos.Line, Column: pos.Column, Key: path, Message: msg}
}

// parseLayer decodes a TOML document. The tree comes from go-toml's full
// decoder (so every TOML rule is enforced); positions come from its
// low-level parser, which the decoder does not expose.
func parseLayer(source string, data []byte) (*layer, error) {
	l := newLayer(source)
	if err := toml.Unmarshal(data, &l.tree); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			line, col := de.Position()
			msg := strings.TrimPrefix(de.Error(), "toml: ")
			return nil, Error{File: source, Line: line, Column: col, Message: "invalid TOML: " + msg}
		}
		return nil, Error{File: source, Message: "invalid TOML: " + err.Error()}
	}
	indexPositions(l, data)
	return l, nil
}

func indexPositions(l *layer, data []byte) {
	p := &unstable.Parser{}
	p.Reset(data)
	shape := func(n *unstable.Node) (Pos, bool) {
		if n.Raw.Length == 0 && n.Raw.Offset == 0 {
			return Pos{}, false
		}
		s := p.Shape(n.Raw)
		return Pos{Line: s.Start.Line, Column: s.Start.Column}, true
	}
	var table []string
	arrayTables := map[string]int{}
	var keyValue func(prefix []string, kv *unstable.Node)
	var value func(path []string, v *unstable.Node)
	keyParts := func(prefix []string, it unstable.Iterator) []string {
		parts := append([]string(nil), prefix...)
		for it.Next() {
			n := it.Node()
			parts = append(parts, string(n.Data))
			if pos, ok := shape(n); ok {
				if _, seen := l.keys[joinPath(parts)]; !seen {
					l.keys[joinPath(parts)] = pos
				}
			}
		}
		return parts
	}
	value = func(path []string, v *unstable.Node) {
		if pos, ok := shape(v); ok {
			l.values[joinPath(path)] = pos
		}
		switch v.Kind {
		case unstable.Array:
			i := 0
			for it := v.Children(); it.Next(); {
				if c := it.Node(); c.Kind != unstable.Comment {
					value(append(path[:len(path):len(path)], "["+strconv.Itoa(i)+"]"), c)
					i++
				}
			}
		case unstable.InlineTable:
			for it := v.Children(); it.Next(); {
				if c := it.Node(); c.Kind == unstable.KeyValue {
					keyValue(path, c)
				}
			}
		}
	}
	keyValue = func(prefix []string, kv *unstable.Node) {
		value(keyParts(prefix, kv.Key()), kv.Value())
	}
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table:
			table = keyParts(nil, e.Key())
		case unstable.ArrayTable:
			table = keyParts(nil, e.Key())
			k := joinPath(table)
			table = append(table, "["+strconv.Itoa(arrayTables[k])+"]")
			arrayTables[k]++
		case unstable.KeyValue:
			keyValue(table, e)
		}
	}
}

// joinPath spells a key path the way errors name it: vm.cpus,
// sandboxes.api.ports[0].
func joinPath(parts []string) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 && !strings.HasPrefix(p, "[") {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String()
}

func childPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
