package mcpserver

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"time"
)

// Output schemas (issue 31): what each tool's structured result holds, so
// an agent knows the fields before its first call and a validating client
// can check them. Each is derived from the type the tool's handler
// returns (resultSchema), the one value it answers with.

// withoutEchoes is a tool's output schema as listed: without the fields
// that only echo a required argument (an instance_id, a path, a command):
// the caller knows them, the answer still carries them (additionalProperties
// is true) and every turn of a conversation carries the list. A field
// with a description says more than an echo (a clone's instance_id is the
// new instance's) and stays.
func withoutEchoes(schema map[string]any, required []string) json.RawMessage {
	props := maps.Clone(schema["properties"].(map[string]any))
	for _, arg := range required {
		if p, ok := props[arg].(map[string]any); ok && p["description"] == nil {
			delete(props, arg)
		}
	}
	raw, err := json.Marshal(map[string]any{"type": "object", "properties": props})
	if err != nil {
		panic(fmt.Sprintf("encoding an output schema: %v", err))
	}
	return raw
}

// resultSchema renders the output schema of a tool whose handler answers
// R (a pointer to a result struct): each JSON field of the struct, its
// embedded structs' included as encoding/json flattens them, with its
// JSON type ("null" too for a pointer) and its `jsonschema` tag as its
// description. The value a handler returns is that struct, so the schema
// cannot say other than the answer. Nested objects and arrays are named by
// type only: every turn of a conversation carries the list. Nothing is
// required and additionalProperties stays JSON Schema's default (true):
// an answer may grow, as v1's did, without breaking a client; "warnings"
// may come with any answer, which the instructions say once.
func resultSchema(t reflect.Type) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("a tool result is a struct, not %s", t))
	}
	props := map[string]any{}
	resultFields(t, props)
	return map[string]any{"type": "object", "properties": props}
}

func resultFields(t reflect.Type, props map[string]any) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" { // a nil embedded pointer's fields are left out, never null
			if f.Type.Kind() == reflect.Pointer {
				resultFields(f.Type.Elem(), props)
			} else {
				resultFields(f.Type, props)
			}
			continue
		}
		if !f.IsExported() || name == "-" || name == "warnings" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, twice := props[name]; twice { // encoding/json would drop both
			panic(fmt.Sprintf("result %s: two fields named %s", t, name))
		}
		prop := map[string]any{}
		typ := jsonType(f.Type)
		if _, opts, _ := strings.Cut(f.Tag.Get("json"), ","); opts == "omitempty" && f.Type.Kind() == reflect.Pointer {
			typ = jsonType(f.Type.Elem()) // left out when nil, never null
		}
		if typ != nil {
			prop["type"] = typ
		}
		if desc := f.Tag.Get("jsonschema"); desc != "" {
			prop["description"] = desc
		}
		props[name] = prop
	}
}

var timeType = reflect.TypeFor[time.Time]()

// jsonType is the JSON Schema type a Go value encodes as; nil for any.
func jsonType(t reflect.Type) any {
	if t.Kind() == reflect.Pointer {
		if elem, ok := jsonType(t.Elem()).(string); ok {
			return []string{elem, "null"}
		}
		return nil
	}
	switch {
	case t == timeType:
		return "string"
	case t.Implements(reflect.TypeFor[json.Marshaler]()):
		return nil
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Map, reflect.Struct:
		return "object"
	}
	return nil
}
