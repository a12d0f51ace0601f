package spec

import (
	"bytes"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// treeBuilder makes a layer's tree from the expressions of go-toml's
// low-level parser, in the pass that indexes positions, so a document is
// parsed once. go-toml's own decoder parses it a second time and checks
// every key against a list it searches from the start, which made a spec
// of 1,000 sandboxes cost ~8 ms in that search alone. The rules are
// go-toml's (seenTracker is its tracker, indexed by name); numbers and
// dates are decoded by go-toml itself, in one small document. Whatever the
// builder does not accept is handed to go-toml's decoder whole, which then
// gives the tree or the error with its position: FuzzTreeMatchesGoTOML
// holds the two to the same trees.
type treeBuilder struct {
	seen    seenTracker
	root    map[string]any
	current map[string]any // the table key-values go to
	numbers []numberSlot   // integers, floats and dates, decoded together at the end
	failed  bool
}

// numberSlot is where a value go-toml must decode goes: m[key] or a[i].
type numberSlot struct {
	raw []byte
	m   map[string]any
	key string
	a   []any
	i   int
}

func newTreeBuilder() *treeBuilder {
	b := &treeBuilder{root: map[string]any{}}
	b.current = b.root
	b.seen.reset()
	return b
}

// expression adds one top-level expression of the document.
func (b *treeBuilder) expression(e *unstable.Node) {
	if b.failed {
		return
	}
	switch e.Kind {
	case unstable.Table:
		b.table(e, false)
	case unstable.ArrayTable:
		b.table(e, true)
	case unstable.KeyValue:
		b.failed = !b.keyValue(b.seen.current, b.current, e)
	}
}

// table opens a [table] or an [[array table]]'s next element.
func (b *treeBuilder) table(e *unstable.Node, array bool) {
	m, parent := b.root, int32(0)
	for it := e.Key(); it.Next(); {
		name := it.Node().Data
		if it.IsLast() {
			b.openLast(m, parent, name, array)
			return
		}
		id, ok := b.seen.intermediate(parent, name)
		if !ok {
			b.failed = true
			return
		}
		m, parent = descend(m, string(name)), id
	}
}

func (b *treeBuilder) openLast(m map[string]any, parent int32, name []byte, array bool) {
	if !array {
		if !b.seen.tableHeader(parent, name) {
			b.failed = true
			return
		}
		b.current = descend(m, string(name))
		return
	}
	if !b.seen.arrayTableHeader(parent, name) {
		b.failed = true
		return
	}
	elem := map[string]any{}
	list, _ := m[string(name)].([]any)
	m[string(name)] = append(list, elem)
	b.current = elem
}

// descend is the table under name in m, made when there is none; an array
// of tables gives its last element (what the checks allowed).
func descend(m map[string]any, name string) map[string]any {
	switch v := m[name].(type) {
	case map[string]any:
		return v
	case []any:
		if last, ok := v[len(v)-1].(map[string]any); ok {
			return last
		}
	}
	t := map[string]any{}
	m[name] = t
	return t
}

// keyValue sets a possibly dotted key under the table m (tracker entry
// parent); false when the rules refuse it.
func (b *treeBuilder) keyValue(parent int32, m map[string]any, kv *unstable.Node) bool {
	for it := kv.Key(); it.Next(); {
		name := it.Node().Data
		if it.IsLast() {
			id, ok := b.seen.leaf(parent, name)
			if !ok {
				return false
			}
			return b.value(id, kv.Value(), numberSlot{m: m, key: string(name)})
		}
		id, ok := b.seen.dotted(parent, name)
		if !ok {
			return false
		}
		m, parent = descend(m, string(name)), id
	}
	return false // a key-value without a key
}

// value stores v at slot; id is v's tracker entry.
func (b *treeBuilder) value(id int32, v *unstable.Node, at numberSlot) bool {
	switch v.Kind {
	case unstable.String:
		at.set(string(v.Data))
	case unstable.Bool:
		at.set(bytes.Equal(v.Data, []byte("true")))
	case unstable.Integer, unstable.Float, unstable.LocalDate, unstable.LocalTime, unstable.LocalDateTime,
		unstable.DateTime:
		at.raw = v.Data
		b.numbers = append(b.numbers, at)
	case unstable.InlineTable:
		t := map[string]any{}
		at.set(t)
		for it := v.Children(); it.Next(); {
			if c := it.Node(); c.Kind != unstable.KeyValue || !b.keyValue(id, t, c) {
				return false
			}
		}
	case unstable.Array:
		return b.array(id, v, at)
	default:
		return false
	}
	return true
}

func (b *treeBuilder) array(id int32, v *unstable.Node, at numberSlot) bool {
	n := 0
	for it := v.Children(); it.Next(); {
		if it.Node().Kind != unstable.Comment {
			n++
		}
	}
	list := make([]any, n)
	at.set(list)
	i := 0
	for it := v.Children(); it.Next(); {
		c := it.Node()
		if c.Kind == unstable.Comment {
			continue
		}
		elemID := id
		if c.Kind == unstable.InlineTable || c.Kind == unstable.Array {
			elemID = b.seen.anonymous(id)
		}
		if !b.value(elemID, c, numberSlot{a: list, i: i}) {
			return false
		}
		i++
	}
	return true
}

func (s numberSlot) set(v any) {
	if s.m != nil {
		s.m[s.key] = v
		return
	}
	s.a[s.i] = v
}

// finish decodes the numbers and dates and returns the tree; false when
// the builder refused something or go-toml refuses a number.
func (b *treeBuilder) finish() (map[string]any, bool) {
	if b.failed {
		return nil, false
	}
	if len(b.numbers) == 0 {
		return b.root, true
	}
	doc := make([]byte, 0, 8+len(b.numbers)*24)
	doc = append(doc, "v = ["...)
	for i, n := range b.numbers {
		if i > 0 {
			doc = append(doc, ',')
		}
		doc = append(doc, n.raw...)
	}
	doc = append(doc, "]\n"...)
	var decoded struct {
		V []any `toml:"v"`
	}
	if err := toml.Unmarshal(doc, &decoded); err != nil || len(decoded.V) != len(b.numbers) {
		return nil, false
	}
	for i, n := range b.numbers {
		n.set(decoded.V[i])
	}
	return b.root, true
}

// decodeTOML is a document's tree; go-toml's decoder gives the error (with
// its position) of a document the builder does not accept.
func decodeTOML(data []byte) (map[string]any, error) {
	b, p := buildTree(data)
	return b.tree(p, data)
}

// buildTree runs go-toml's parser over data, feeding the builder alone.
func buildTree(data []byte) (*treeBuilder, *unstable.Parser) {
	b := newTreeBuilder()
	p := &unstable.Parser{}
	p.Reset(data)
	for p.NextExpression() {
		b.expression(p.Expression())
	}
	return b, p
}

// tree is what the builder made of the document p parsed, or go-toml's
// decoder's answer when the parser or the builder stopped.
func (b *treeBuilder) tree(p *unstable.Parser, data []byte) (map[string]any, error) {
	if p.Error() == nil {
		if tree, ok := b.finish(); ok {
			return tree, nil
		}
	}
	tree := map[string]any{}
	err := toml.Unmarshal(data, &tree)
	return tree, err
}
