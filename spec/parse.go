package spec

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// Pos is a place in a layer's source.
type Pos struct {
	Line, Column int
}

// layer is one source of desired state: a decoded tree plus where each
// key and value was written, so every later check can point at it.
// Where they were written is found again from the source when a check
// first asks (placed): most loads report nothing, and recording every
// place up front was a quarter of what loading a large spec cost.
type layer struct {
	source string // absolute path, "defaults", or a pseudo-file such as "request_overrides"
	tree   map[string]any
	keys   map[string]Pos // path → position of the key
	values map[string]Pos // path → position of the value
	global bool           // a global config file: the operator's

	data  []byte    // the source, while its places are not yet recorded
	lim   Limits    // what the source was parsed within
	place sync.Once // records the places of data in keys and values
}

func newLayer(source string) *layer {
	return &layer{source: source, tree: map[string]any{}, keys: map[string]Pos{}, values: map[string]Pos{}}
}

// at returns the best position for a path: its value, else its key, else
// the nearest enclosing key.
func (l *layer) at(path string, preferKey bool) Pos {
	l.placed()
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

// placed records where each key and value of the layer's source was
// written, once, by parsing the source again: it parsed within its limits
// the first time, so it does again.
func (l *layer) placed() {
	l.place.Do(func() {
		if l.data != nil {
			x := &indexer{l: l, data: l.data, lim: l.lim, record: true}
			x.walk(nil)
			l.data = nil
		}
	})
}

func (l *layer) errorAt(path string, preferKey bool, msg string) Error {
	pos := l.at(path, preferKey)
	return Error{File: l.source, Line: pos.Line, Column: pos.Column, Key: clip(path), Message: msg}
}

var bom = []byte("\xef\xbb\xbf")

// parseLayer decodes a TOML document within DefaultLimits.
func parseLayer(source string, data []byte) (*layer, error) {
	return parseLayerWithin(source, data, DefaultLimits)
}

// parseLayerWithin decodes a TOML document. One pass of go-toml's
// low-level parser gives the positions, enforces the limits before
// anything large is built, and builds the tree (tomltree.go); go-toml's
// full decoder answers for a document that pass does not accept, so every
// TOML rule is enforced and every error has its position.
func parseLayerWithin(source string, data []byte, lim Limits) (*layer, error) {
	data = bytes.TrimPrefix(data, bom) // editors on Windows write one; TOML allows none
	if lim.MaxBytes > 0 && len(data) > lim.MaxBytes {
		return nil, Error{File: source, Message: lim.sizeMessage(len(data))}
	}
	l := newLayer(source)
	tree, err := indexPositions(l, data, lim)
	if err == nil {
		l.tree, l.data, l.lim = tree, data, lim
		return l, nil
	}
	var de *toml.DecodeError
	switch {
	case errors.As(err, &de):
		line, col := de.Position()
		msg := strings.TrimPrefix(de.Error(), "toml: ")
		return nil, Error{File: source, Line: line, Column: col, Message: "invalid TOML: " + msg}
	case errors.As(err, new(Error)):
		return nil, err
	}
	return nil, Error{File: source, Message: "invalid TOML: " + err.Error()}
}

// lineIndex turns byte offsets into line and column in O(log lines): the
// parser's own Shape rescans the document from the start for every node,
// which made large documents quadratic.
type lineIndex []int // offsets where lines start

func newLineIndex(data []byte) lineIndex {
	idx := lineIndex{0}
	for i, b := range data {
		if b == '\n' {
			idx = append(idx, i+1)
		}
	}
	return idx
}

func (li lineIndex) pos(offset int) Pos {
	line := sort.Search(len(li), func(i int) bool { return li[i] > offset }) - 1
	return Pos{Line: line + 1, Column: offset - li[line] + 1}
}

// indexer walks one document's keys and values and stops at the first
// limit the document exceeds; with record, it notes where each is. A
// syntax error ends the walk quietly: the decoder reports it with its
// position.
type indexer struct {
	l      *layer
	data   []byte
	lines  lineIndex // made when a position is first asked for
	lim    Limits
	record bool
	err    error
}

// indexPositions checks data's limits and builds its tree in one pass;
// the error is a limit's (an Error) or the decoder's. Where each key and
// value is gets recorded later, if ever (layer.placed).
func indexPositions(l *layer, data []byte, lim Limits) (map[string]any, error) {
	x := &indexer{l: l, data: data, lim: lim}
	b := newTreeBuilder()
	p := x.walk(b)
	if x.err != nil {
		return nil, x.err
	}
	return b.tree(p, data)
}

// walk goes through the document once, giving each expression to b when
// there is one, and returns the parser for b's end.
func (x *indexer) walk(b *treeBuilder) *unstable.Parser {
	p := &unstable.Parser{}
	p.Reset(x.data)
	var table []string
	arrayTables := map[string]int{}
	for x.err == nil && p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table:
			table = x.keyParts(nil, e.Key())
		case unstable.ArrayTable:
			table = x.keyParts(nil, e.Key())
			k := joinPath(table)
			table = append(table, "["+strconv.Itoa(arrayTables[k])+"]")
			arrayTables[k]++
		case unstable.KeyValue:
			x.keyValue(table, e)
		}
		if b != nil {
			b.expression(e)
		}
	}
	return p
}

func (x *indexer) at(n *unstable.Node) (Pos, bool) {
	if n.Raw.Length == 0 && n.Raw.Offset == 0 {
		return Pos{}, false
	}
	if x.lines == nil {
		x.lines = newLineIndex(x.data)
	}
	return x.lines.pos(int(n.Raw.Offset)), true
}

func (x *indexer) keyParts(prefix []string, it unstable.Iterator) []string {
	parts := append([]string(nil), prefix...)
	for x.err == nil && it.Next() {
		n := it.Node()
		parts = append(parts, string(n.Data))
		if x.tooDeep(parts, n) || !x.record {
			continue
		}
		pos, ok := x.at(n)
		if !ok {
			continue
		}
		if path := joinPath(parts); !hasKey(x.l.keys, path) {
			x.l.keys[path] = pos
		}
	}
	return parts
}

func hasKey[V any](m map[string]V, k string) bool {
	_, ok := m[k]
	return ok
}

func (x *indexer) keyValue(prefix []string, kv *unstable.Node) {
	x.value(x.keyParts(prefix, kv.Key()), kv.Value())
}

func (x *indexer) value(path []string, v *unstable.Node) {
	if x.err != nil {
		return
	}
	if x.tooDeep(path, v) {
		return
	}
	if x.record {
		if pos, ok := x.at(v); ok {
			x.l.values[joinPath(path)] = pos
		}
	}
	switch v.Kind {
	case unstable.Array:
		i := 0
		for it := v.Children(); x.err == nil && it.Next(); {
			c := it.Node()
			if c.Kind == unstable.Comment {
				continue
			}
			if i == x.lim.MaxArrayLen && x.lim.MaxArrayLen > 0 {
				pos, _ := x.at(v)
				x.err = x.limitError(
					path,
					pos,
					"has more than %d items; arrays are limited to %d",
					x.lim.MaxArrayLen,
					x.lim.MaxArrayLen,
				)
				return
			}
			x.value(append(path[:len(path):len(path)], "["+strconv.Itoa(i)+"]"), c)
			i++
		}
	case unstable.InlineTable:
		for it := v.Children(); x.err == nil && it.Next(); {
			if c := it.Node(); c.Kind == unstable.KeyValue {
				x.keyValue(path, c)
			}
		}
	}
}

// tooDeep checks the key depth before the path is ever joined, so a key of
// thousands of parts costs no more than the limit.
func (x *indexer) tooDeep(path []string, n *unstable.Node) bool {
	if x.lim.MaxKeyDepth <= 0 || len(path) <= x.lim.MaxKeyDepth {
		return false
	}
	if x.err == nil {
		pos, _ := x.at(n)
		x.err = x.limitError(path[:x.lim.MaxKeyDepth], pos, "nests deeper than %d levels; keys are limited to %d parts",
			x.lim.MaxKeyDepth, x.lim.MaxKeyDepth)
	}
	return true
}

func (x *indexer) limitError(path []string, pos Pos, format string, args ...any) Error {
	key := joinPath(path)
	if len(path) >= x.lim.MaxKeyDepth && x.lim.MaxKeyDepth > 0 {
		key += "…"
	}
	return Error{
		File:    x.l.source,
		Line:    pos.Line,
		Column:  pos.Column,
		Key:     clip(key),
		Message: fmt.Sprintf(format, args...),
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
