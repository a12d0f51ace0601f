package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Request is a layer of per-call overrides: `--set vm.cpus=4` flags or an
// MCP tool's `overrides` object. It is validated like any file and named
// "request_overrides" in sources.
type Request struct{ l *layer }

// layer is a copy of the request's layer as it was read (its places are
// recorded as it is read, so they are shared, never changed).
func (r *Request) layer() *layer {
	return &layer{source: r.l.source, tree: cloneTree(r.l.tree), keys: r.l.keys, values: r.l.values,
		global: r.l.global}
}

// ParseSet reads `key.path=value` assignments. The value is read as a TOML
// value (4, true, "x", ["a"]); anything that is not valid TOML is taken as a
// plain string, so `--set vm.arch=aarch64` needs no quotes. Errors point
// at the assignment: line N is the Nth --set.
func ParseSet(assignments []string) (*Request, error) {
	if len(assignments) == 0 {
		return nil, nil
	}
	l := newLayer(SourceRequest)
	for i, a := range assignments {
		key, raw, ok := strings.Cut(a, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			return nil, fmt.Errorf("--set %q: want key.path=value", a)
		}
		parts := strings.Split(key, ".")
		for _, p := range parts {
			if p == "" {
				return nil, fmt.Errorf("--set %q: empty part in key %q", a, key)
			}
		}
		if err := setPath(l.tree, parts, parseSetValue(raw)); err != nil {
			return nil, fmt.Errorf("--set %q: %w", a, err)
		}
		path := joinPath(parts)
		l.keys[path] = Pos{Line: i + 1, Column: 1}
		l.values[path] = Pos{Line: i + 1, Column: len(key) + 2}
	}
	return &Request{l: l}, nil
}

func parseSetValue(raw string) any {
	var doc map[string]any
	if err := toml.Unmarshal([]byte("v = "+raw), &doc); err == nil {
		return doc["v"]
	}
	return raw
}

func setPath(t map[string]any, parts []string, v any) error {
	for _, p := range parts[:len(parts)-1] {
		next, ok := t[p].(map[string]any)
		if !ok {
			if _, exists := t[p]; exists {
				return fmt.Errorf("%s is already set to a value, not a table", p)
			}
			next = map[string]any{}
			t[p] = next
		}
		t = next
	}
	t[parts[len(parts)-1]] = v
	return nil
}

// JSONOverrides reads an overrides object as MCP tools receive it. JSON
// null resets a nullable key; integers stay integers.
func JSONOverrides(raw json.RawMessage) (*Request, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("reading overrides: %w", err)
	}
	if v == nil {
		return nil, nil
	}
	tree, ok := fromJSON(v).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("overrides must be a JSON object")
	}
	l := newLayer(SourceRequest)
	l.tree = tree
	return &Request{l: l}, nil
}

func fromJSON(v any) any {
	switch x := v.(type) {
	case nil:
		return null{}
	case json.Number:
		if n, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return n
		}
		f, _ := x.Float64()
		return f
	case []any:
		for i := range x {
			x[i] = fromJSON(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = fromJSON(x[k])
		}
	}
	return v
}

// Key identifies the request's overrides (the same overrides, the same
// key), so a desired state resolved with them can be reused.
func (r *Request) Key() string {
	if r == nil || r.l == nil {
		return ""
	}
	data, err := json.Marshal(r.l.tree)
	if err != nil {
		return fmt.Sprintf("%p", r) // never equal to another's: no reuse
	}
	return string(data)
}
