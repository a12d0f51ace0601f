package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/sandboxforge/sbf/internal/names"
)

// Backends are the backends this build links, as a workspace file may name
// them: each one's name (a value of [vm] driver) and its own settings table
// ([vm.NAME], [sandboxes.S.NAME]). The drivers registry implements it
// (drivers.Linked) and the engine hands it in (Options.Backends): a spec
// never links a backend (internal/layering) yet checks the keys of every
// linked one, so adding a backend edits nothing here. Nil links none.
type Backends interface {
	// Names lists the linked backends, sorted.
	Names() []string
	// Table is a linked backend's settings table: each key with its doc
	// (every value is a string) and the table's doc; linked is false for
	// a backend this build does not link.
	Table(backend string) (keys map[string]string, doc string, linked bool)
	// Auto is the backend driver = "auto" names on a host of this OS and
	// architecture (runtime.GOOS and GOARCH spellings) and the vm_type its
	// VMs run there by default; "" when no linked backend wants to be.
	Auto(os, arch string) (backend, vmType string)
}

// noBackends stands in for a nil Backends: nothing is linked.
type noBackends struct{}

func (noBackends) Names() []string                                { return nil }
func (noBackends) Table(string) (map[string]string, string, bool) { return nil, "", false }
func (noBackends) Auto(string, string) (string, string)           { return "", "" }

func orNone(b Backends) Backends {
	if b == nil {
		return noBackends{}
	}
	return b
}

// BackendTables are a VM's backend settings tables, [vm.NAME] and
// [sandboxes.S.NAME], by backend and then key. They are no struct fields:
// each backend declares its table (Backends.Table), so adding a backend
// edits nothing here. A linked backend's keys are checked; an unlinked
// one's table is kept unchecked when a driver key names that backend,
// since a spec is valid on every host and such a sandbox is the engine's
// BACKEND_UNAVAILABLE, not a configuration error.
type BackendTables map[string]map[string]string

var backendTablesType = reflect.TypeFor[BackendTables]()

func (b BackendTables) clone() BackendTables {
	if b == nil {
		return nil
	}
	out := make(BackendTables, len(b))
	for name, t := range b {
		out[name] = maps.Clone(t)
	}
	return out
}

// BackendSettings are the settings of a sandbox's own backend table for
// driver that are set (nil when none are), as drivers.Spec.Backend
// carries them: the planner asks here rather than knowing which driver
// has a table. An empty value is unset: the driver's own default applies.
func (s Sandbox) BackendSettings(driver string) map[string]string {
	out := map[string]string{}
	for k, v := range s.Backends[driver] {
		if v != "" {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// backendTablesIndex finds the BackendTables field of a table's type (of
// VM, and of Sandbox through the VM it inlines).
func backendTablesIndex(t reflect.Type) ([]int, bool) {
	sf, ok := t.FieldByName("Backends")
	if !ok || sf.Type != backendTablesType {
		return nil, false
	}
	return sf.Index, true
}

// tableBackends are the linked backends whose tables a table of type t
// may hold (those with settings), sorted.
func tableBackends(t reflect.Type, b Backends) []string {
	if _, ok := backendTablesIndex(t); !ok {
		return nil
	}
	var out []string
	b = orNone(b)
	for _, name := range b.Names() {
		if keys, _, _ := b.Table(name); len(keys) > 0 {
			out = append(out, name)
		}
	}
	return out
}

// backendTable checks key = val of a table of type typ that may hold
// backend tables. A linked backend's table holds its declared keys, each
// a string; a table named like a backend this build does not link is
// kept, its values strings, for checkBackends to judge once every layer
// is merged. handled is false for a key that is no backend table at all.
func (v *validator) backendTable(typ reflect.Type, key string, val any, path string) (norm any, ok, handled bool) {
	if _, has := backendTablesIndex(typ); !has {
		return nil, false, false
	}
	settings, _, linked := v.backends.Table(key)
	m, isTable := val.(map[string]any)
	switch {
	case linked && len(settings) > 0 && !isTable:
		v.fail(path, false, "must be a table")
		return nil, false, true
	case linked && len(settings) > 0:
	case !linked && isTable && names.Backend(key):
	default:
		return nil, false, false
	}
	good := true
	for k, x := range m {
		p := childPath(path, k)
		switch {
		case linked && !hasKey(settings, k):
			v.fail(p, true, "is not supported (allowed: %s)", strings.Join(slices.Sorted(maps.Keys(settings)), ", "))
			good = false
		case !linked && !names.BackendSetting(k):
			v.fail(p, true, "is not a setting's name (letters, digits, '-' and '_')")
			good = false
		default:
			if s, ok := v.value(field{key: k, typ: reflect.TypeFor[string]()}, x, p); ok {
				m[k] = s
			} else {
				good = false
			}
		}
	}
	return m, good, true
}

// assignBackendTable lays a validated backend table over dst's.
func assignBackendTable(dst reflect.Value, key string, val any) bool {
	idx, ok := backendTablesIndex(dst.Type())
	m, isTable := val.(map[string]any)
	if !ok || !isTable {
		return false
	}
	tv := dst.FieldByIndex(idx)
	if tv.IsNil() {
		tv.Set(reflect.ValueOf(BackendTables{}))
	}
	tables := tv.Interface().(BackendTables)
	if tables[key] == nil {
		tables[key] = map[string]string{}
	}
	for k, x := range m {
		tables[key][k] = x.(string)
	}
	return true
}

// checkBackends judges the backends a merged configuration names. A
// driver this build does not link is valid, with a warning: the spec may
// be meant for another sbf (BACKEND_UNAVAILABLE here). A table for an
// unlinked backend that no driver key names is an unknown key, as any
// misspelt key is.
func (r *Resolved) checkBackends(b Backends) (errs Errors) {
	c, b := &r.Config, orNone(b)
	named := map[string]bool{c.VM.Driver: true}
	for _, sb := range c.Sandboxes {
		named[sb.Driver] = true
	}
	for _, p := range c.Pools {
		named[p.Driver] = true
	}
	unlinked := func(path, driver string) {
		if r.origin(path) == nil || driver == "auto" {
			return
		}
		if _, _, ok := b.Table(driver); !ok {
			r.Warnings = append(r.Warnings, r.errorAt(path, fmt.Sprintf("names %q, a backend this build of sbf "+
				"does not link (it links: %s): its sandboxes fail with BACKEND_UNAVAILABLE until an sbf that has it "+
				"runs them", driver, strings.Join(b.Names(), ", "))))
		}
	}
	tables := func(prefix string, t BackendTables) {
		for _, name := range slices.Sorted(maps.Keys(t)) {
			path := prefix + "." + name
			if r.origin(path) == nil || named[name] {
				continue
			}
			if _, _, ok := b.Table(name); !ok {
				errs = append(errs, r.errorAt(path, "is not supported (allowed: "+
					allowedKeys(reflect.TypeFor[VM](), b)+")"))
			}
		}
	}
	unlinked("vm.driver", c.VM.Driver)
	tables("vm", c.VM.Backends)
	for _, name := range r.names {
		unlinked("sandboxes."+name+".driver", c.Sandboxes[name].Driver)
		tables("sandboxes."+name, c.Sandboxes[name].Backends)
	}
	for _, name := range slices.Sorted(maps.Keys(c.Pools)) {
		unlinked("pool."+name+".driver", c.Pools[name].Driver)
	}
	return errs
}

// backendSchema is a backend table's JSON Schema; [vm]'s shows the
// default of each key (unset), as its other keys do.
func backendSchema(b Backends, backend string, withDefaults bool) map[string]any {
	settings, doc, _ := b.Table(backend)
	props := map[string]any{}
	for key, keyDoc := range settings {
		p := map[string]any{"type": "string"}
		if keyDoc != "" {
			p["description"] = keyDoc
		}
		if withDefaults {
			p["default"] = ""
		}
		props[key] = p
	}
	out := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if doc != "" {
		out["description"] = doc
	}
	return out
}

func (c Config) hasBackendTables() bool {
	if len(c.VM.Backends) > 0 {
		return true
	}
	for _, sb := range c.Sandboxes {
		if len(sb.Backends) > 0 {
			return true
		}
	}
	return false
}

// MarshalJSON renders the configuration with its backend tables where a
// file has them (vm.kubevirt, sandboxes.S.kubevirt), as the struct's own
// keys are.
func (c Config) MarshalJSON() ([]byte, error) {
	type plain Config // the same fields, without this method
	raw, err := json.Marshal(plain(c))
	if err != nil || !c.hasBackendTables() {
		return raw, err
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	if doc["vm"], err = withBackendTables(doc["vm"], c.VM.Backends); err != nil {
		return nil, err
	}
	var sandboxes map[string]json.RawMessage
	if err := json.Unmarshal(doc["sandboxes"], &sandboxes); err != nil {
		return nil, err
	}
	for name, sb := range c.Sandboxes {
		if sandboxes[name], err = withBackendTables(sandboxes[name], sb.Backends); err != nil {
			return nil, err
		}
	}
	if doc["sandboxes"], err = json.Marshal(sandboxes); err != nil {
		return nil, err
	}
	return json.Marshal(doc)
}

func withBackendTables(obj json.RawMessage, t BackendTables) (json.RawMessage, error) {
	if len(t) == 0 {
		return obj, nil
	}
	var m map[string]any
	if err := json.Unmarshal(obj, &m); err != nil {
		return nil, err
	}
	for name, settings := range t {
		m[name] = settings
	}
	return json.Marshal(m)
}

// TOML renders the configuration as a workspace file would say it. The
// backend tables, which go-toml cannot place among a struct's fields,
// follow as tables of their own ([vm.kubevirt] after [sandboxes]), which
// TOML allows: the document loads back to the same configuration.
func (c Config) TOML() ([]byte, error) {
	out, err := toml.Marshal(c)
	if err != nil {
		return nil, err
	}
	b := bytes.NewBuffer(out)
	add := func(prefix string, t BackendTables) error {
		for _, name := range slices.Sorted(maps.Keys(t)) {
			body, err := toml.Marshal(t[name])
			if err != nil {
				return err
			}
			fmt.Fprintf(b, "\n[%s.%s]\n", prefix, name)
			b.Write(body)
		}
		return nil
	}
	if err := add("vm", c.VM.Backends); err != nil {
		return nil, err
	}
	for _, name := range slices.Sorted(maps.Keys(c.Sandboxes)) {
		if err := add("sandboxes."+name, c.Sandboxes[name].Backends); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}
