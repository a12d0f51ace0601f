package spec

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"
)

// The committed schema (docs/sandboxforge.schema.json, which example
// specs point editors to) must be what `sbf schema` prints.
func TestCommittedSchemaIsCurrent(t *testing.T) {
	b, err := JSONSchema(linked)
	if err != nil {
		t.Fatal(err)
	}
	const path = "../docs/sandboxforge.schema.json"
	if *update {
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	committed, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(committed) != string(b)+"\n" {
		t.Errorf("%s is stale: run go test ./spec -update", path)
	}
}

// Every key the loader accepts is in the schema, nothing else is, and
// tables forbid unknown keys as the loader does.
func TestSchemaMirrorsTheLoader(t *testing.T) {
	b, _ := JSONSchema(linked)
	var s map[string]any
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	var walk func(obj map[string]any, typ reflect.Type, path string)
	walk = func(obj map[string]any, typ reflect.Type, path string) {
		if obj["additionalProperties"] != false {
			t.Errorf("%s: additionalProperties must be false", path)
		}
		props := obj["properties"].(map[string]any)
		fields := fieldsOf(typ)
		if len(props) != len(fields)+len(tableBackends(typ, linked)) {
			t.Errorf("%s: schema has %d keys, loader %d and %d backend tables", path, len(props), len(fields),
				len(tableBackends(typ, linked)))
		}
		for _, b := range tableBackends(typ, linked) {
			settings, _, _ := linked.Table(b)
			p, ok := props[b].(map[string]any)
			if !ok || p["additionalProperties"] != false || len(p["properties"].(map[string]any)) != len(settings) {
				t.Errorf("%s.%s: %v", path, b, p)
			}
		}
		for _, f := range fields {
			p, ok := props[f.key].(map[string]any)
			if !ok {
				t.Errorf("%s.%s missing from the schema", path, f.key)
				continue
			}
			if f.typ.Kind() == reflect.Struct && f.typ != timeType && f.typ != secretType {
				walk(p, f.typ, path+"."+f.key)
			}
			if f.typ == reflect.TypeFor[map[string]Sandbox]() {
				walk(p["additionalProperties"].(map[string]any), reflect.TypeFor[Sandbox](), path+".sandboxes.*")
			}
		}
	}
	walk(s, reflect.TypeFor[Config](), "root")
}
