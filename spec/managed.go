package spec

import (
	"bytes"
	"fmt"
	"reflect"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/sandboxforge/sbf/internal/ownfile"
)

// Managed is the managed overrides document (.sandboxforge/overrides.toml):
// leases, and sandboxes declared by `sbf up NAME` or MCP's create_instance.
// Only sbf writes it, always through EditManaged.
type Managed struct {
	tree map[string]any
}

const managedHeader = "# Written by sbf: leases and sandboxes from 'sbf up', 'sbf extend', 'sbf destroy' and MCP " +
	"tools.\n" +
	"# Edit .sandboxforge.toml or .sandboxforge.local.toml instead; sbf rewrites this file.\n\n"

// managedFolder is the workspace's .sandboxforge folder: sbf's own, so
// neither it nor overrides.toml may be a link (package ownfile).
func managedFolder(root string) ownfile.Folder { return ownfile.In(root, Dir) }

// Clone copies the document so an edit can be tried without touching it.
func (m *Managed) Clone() *Managed { return &Managed{tree: cloneTree(m.tree)} }

// Encode renders the document; it is checked like any layer first, so sbf
// never writes a managed document it would itself reject.
func (m *Managed) Encode() ([]byte, error) {
	body, err := toml.Marshal(m.tree)
	if err != nil {
		return nil, fmt.Errorf("encoding managed overrides: %w", err)
	}
	l, err := parseLayer(OverridesFile, body)
	if err != nil {
		return nil, fmt.Errorf("managed overrides would not parse: %w", err)
	}
	// Backend tables were checked against the linked backends when the
	// edit was resolved (Options.Managed); here, only their form.
	if errs := validateLayer(l, true, nil); len(errs) > 0 {
		return nil, fmt.Errorf("managed overrides would be invalid: %w", errs)
	}
	return append([]byte(managedHeader), body...), nil
}

// Equal reports whether two documents would be written identically.
func (m *Managed) Equal(o *Managed) bool {
	a, errA := toml.Marshal(m.tree)
	b, errB := toml.Marshal(o.tree)
	return errA == nil && errB == nil && bytes.Equal(a, b)
}

// Lease returns a sandbox's lease.
func (m *Managed) Lease(name string) (LeaseRecord, bool) {
	t, ok := m.table("leases", name)
	if !ok {
		return LeaseRecord{}, false
	}
	var l LeaseRecord
	l.AcquiredAt, _ = t["acquired_at"].(time.Time)
	l.ExpiresAt, _ = t["expires_at"].(time.Time)
	return l, !l.ExpiresAt.IsZero()
}

// SetLease writes a sandbox's lease.
func (m *Managed) SetLease(name string, l LeaseRecord) {
	m.ensure("leases")[name] = map[string]any{"acquired_at": l.AcquiredAt.UTC(), "expires_at": l.ExpiresAt.UTC()}
}

// DropLease removes a sandbox's lease: the sandbox is no longer wanted.
func (m *Managed) DropLease(name string) { m.drop("leases", name) }

// Declare adds a sandbox (with optional [vm] key overrides) to this
// document, keeping keys it already has.
func (m *Managed) Declare(name string, keys map[string]any) {
	sb, ok := m.ensure("sandboxes")[name].(map[string]any)
	if !ok {
		sb = map[string]any{}
		m.tree["sandboxes"].(map[string]any)[name] = sb
	}
	for k, v := range keys {
		sb[k] = v
	}
}

// Undeclare removes a sandbox this document declared.
func (m *Managed) Undeclare(name string) { m.drop("sandboxes", name) }

// Declares reports whether this document declares the sandbox.
func (m *Managed) Declares(name string) bool {
	_, ok := m.table("sandboxes", name)
	return ok
}

func (m *Managed) table(section, name string) (map[string]any, bool) {
	s, _ := m.tree[section].(map[string]any)
	t, ok := s[name].(map[string]any)
	return t, ok
}

func (m *Managed) ensure(section string) map[string]any {
	s, ok := m.tree[section].(map[string]any)
	if !ok {
		s = map[string]any{}
		m.tree[section] = s
	}
	return s
}

func (m *Managed) drop(section, name string) {
	s, ok := m.tree[section].(map[string]any)
	if !ok {
		return
	}
	delete(s, name)
	if len(s) == 0 {
		delete(m.tree, section)
	}
}

// Keys is a table as a layer sets it, for Declare: each key its tag names,
// typed as the decoder reads TOML (int64, float64, string, bool, []any,
// tables as maps, a duration as its spelling). For tables of plain keys,
// such as a sandbox's: it renders no secret or time.
func Keys(table any) map[string]any { return treeOf(reflect.ValueOf(table)).(map[string]any) }

func treeOf(v reflect.Value) any {
	switch {
	case v.Type() == durationType:
		return Duration(v.Int()).String()
	case v.Kind() == reflect.Struct:
		out := map[string]any{}
		for _, f := range fieldsOf(v.Type()) {
			out[f.key] = treeOf(v.FieldByIndex(f.index))
		}
		return out
	case v.Kind() == reflect.Slice:
		out := make([]any, v.Len())
		for i := range out {
			out[i] = treeOf(v.Index(i))
		}
		return out
	case v.CanInt():
		return v.Int()
	}
	return v.Interface()
}
