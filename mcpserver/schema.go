package mcpserver

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// openSchema is a tool's generated input schema made to say what the tool
// does: no additionalProperties, JSON Schema's default of true (unknown
// arguments are accepted with a warning, as v1 accepted them; the list
// does not say so 58 times) and each argument's default, from the
// `default` tag (a JSON value) of A's field. A tag that is not JSON, or
// names no argument of the schema, is a programming error.
func openSchema[A any](tool string, raw json.RawMessage) json.RawMessage {
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil {
		panic(fmt.Sprintf("tool %s: reading its input schema: %v", tool, err))
	}
	delete(schema, "additionalProperties")
	props, _ := schema["properties"].(map[string]any)
	t := reflect.TypeFor[A]()
	for i := range t.NumField() {
		f := t.Field(i)
		def, ok := f.Tag.Lookup("default")
		if !ok {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		prop, ok := props[name].(map[string]any)
		if !ok {
			panic(fmt.Sprintf("tool %s: field %s has a default but no argument in the schema", tool, f.Name))
		}
		var v any
		if err := json.Unmarshal([]byte(def), &v); err != nil {
			panic(fmt.Sprintf("tool %s: the default of %s is not JSON: %v", tool, name, err))
		}
		prop["default"] = v
	}
	out, err := json.Marshal(schema)
	if err != nil {
		panic(fmt.Sprintf("tool %s: encoding its input schema: %v", tool, err))
	}
	return out
}
