package spec

import (
	"encoding/json"
	"reflect"
	"strings"

	"github.com/sandboxforge/sbf/internal/names"
)

// JSONSchema describes the file format for editors (Taplo / Even Better
// TOML read it through a `#:schema` comment). It is generated from the
// same struct tags the loader enforces, so the two cannot disagree; b are
// the backends a driver key may name, each with its settings table.
func JSONSchema(b Backends) ([]byte, error) {
	defaults := reflect.ValueOf(Defaults(Host{OS: "linux"}.With(b)))
	root := schemaOf{orNone(b)}.object(reflect.TypeFor[Config](), defaults)
	root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	root["title"] = "SandboxForge workspace (.sandboxforge.toml)"
	root["description"] = "Desired state of an sbf workspace. Unknown keys are errors."
	return json.MarshalIndent(root, "", "  ")
}

// schemaOf writes schemas for a build that links backends.
type schemaOf struct{ backends Backends }

func (w schemaOf) object(t reflect.Type, defaults reflect.Value) map[string]any {
	props := map[string]any{}
	for _, f := range fieldsOf(t) {
		var def reflect.Value
		if defaults.IsValid() {
			def = defaults.FieldByIndex(f.index)
		}
		props[f.key] = w.field(f, def)
	}
	for _, name := range tableBackends(t, w.backends) {
		props[name] = backendSchema(w.backends, name, defaults.IsValid())
	}
	return map[string]any{"type": "object", "properties": props, "additionalProperties": false}
}

func (w schemaOf) field(f field, def reflect.Value) map[string]any {
	s := w.value(f, def)
	if f.doc != "" {
		s["description"] = f.doc
	}
	if def.IsValid() && f.key != "vm_type" && isScalar(f.typ) {
		switch f.typ {
		case durationType:
			s["default"] = def.Interface().(Duration).String()
		case secretType:
			// The built-in default ("root", as in v1) is documentation,
			// not anyone's secret.
			s["default"] = def.Interface().(Secret).Reveal()
		default:
			s["default"] = def.Interface()
		}
	}
	return s
}

func (w schemaOf) value(f field, def reflect.Value) map[string]any {
	switch {
	case f.typ == durationType:
		s := map[string]any{"type": "string", "pattern": `^(\d+(\.\d+)?d|(\d+(\.\d+)?(h|m|s|ms))+)?$`}
		if f.has("hours") {
			s = map[string]any{"anyOf": []any{s, map[string]any{"type": "number", "minimum": 0}}}
		}
		return s
	case f.typ == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case f.typ == secretType:
		return w.string(f)
	case f.typ.Kind() == reflect.Struct:
		return w.object(f.typ, def)
	case f.typ == envType:
		return map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}}
	case f.typ.Kind() == reflect.Map:
		return map[string]any{
			"type":                 "object",
			"propertyNames":        map[string]any{"pattern": names.WordsPattern, "maxLength": maxSandboxName},
			"additionalProperties": w.object(f.typ.Elem(), reflect.Value{}),
		}
	case f.typ.Kind() == reflect.Slice:
		item := map[string]any{"type": "string"}
		if enum := f.values(w.backends); enum != nil {
			item["enum"] = enum
		}
		if f.has("port_forward") {
			item["pattern"] = portForwardRE.String()
		}
		return map[string]any{"type": "array", "items": item}
	case f.typ.Kind() == reflect.Bool:
		return map[string]any{"type": "boolean"}
	case f.typ.Kind() == reflect.Int:
		return withMinimum(map[string]any{"type": "integer"}, f, "minimum", 1)
	case f.typ.Kind() == reflect.Float64:
		return withMinimum(map[string]any{"type": "number"}, f, "exclusiveMinimum", 0)
	}
	return w.string(f)
}

func (w schemaOf) string(f field) map[string]any {
	s := map[string]any{"type": "string"}
	if enum := f.values(w.backends); enum != nil {
		// Values are trimmed and lower-cased before the check; editors see
		// the canonical spellings (for a backend, the ones this build links).
		s["enum"] = enum
	}
	if f.has("nonempty") {
		s["pattern"] = `\S`
	}
	if f.has("snapshot_ref") {
		s["pattern"] = `^(([A-Za-z0-9]+([_-][A-Za-z0-9]+)*)/)?[A-Za-z0-9][A-Za-z0-9._-]{0,63}$|^$`
	}
	if strings.Contains(f.doc, "${VAR}") {
		s["examples"] = []string{"${MYSQL_ROOT_PASSWORD}"}
	}
	return s
}

func withMinimum(s map[string]any, f field, key string, v int) map[string]any {
	switch {
	case f.has("positive"):
		s[key] = v
	case f.has("nonnegative"):
		s["minimum"] = 0
	}
	return s
}

func isScalar(t reflect.Type) bool {
	if t == secretType {
		return true
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return false
	}
	return true
}
