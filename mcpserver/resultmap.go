package mcpserver

import (
	"encoding/json"
	"reflect"
	"strings"
)

// resultMap is a typed result as the map render fits to the budget,
// made without rendering it: a string field (a command's output, a file's
// text: megabytes of bytes that JSON may escape six-fold) is shared, not
// encoded; the other fields, small, go through JSON. ok is false for what
// is not a struct (or a pointer to one).
func resultMap(out any) (m map[string]any, ok bool) {
	if _, own := out.(json.Marshaler); own {
		return nil, false
	}
	v := reflect.ValueOf(out)
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil, false
	}
	m = map[string]any{}
	return m, addFields(m, v)
}

// addFields puts v's JSON fields into m as encoding/json names them,
// embedded structs' fields inline.
func addFields(m map[string]any, v reflect.Value) bool {
	t := v.Type()
	for i := range t.NumField() {
		f, fv := t.Field(i), v.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported() && !f.Anonymous:
			continue
		case f.Anonymous && name == "" && fv.Kind() == reflect.Pointer && fv.Type().Elem().Kind() == reflect.Struct:
			if !fv.IsNil() && !addFields(m, fv.Elem()) {
				return false
			}
			continue
		case f.Anonymous && name == "" && fv.Kind() == reflect.Struct:
			if !addFields(m, fv) {
				return false
			}
			continue
		case name == "":
			name = f.Name
		}
		if omitted(fv, opts) {
			continue
		}
		if fv.Kind() == reflect.String && fv.Type() == reflect.TypeFor[string]() {
			m[name] = fv.String()
			continue
		}
		raw, err := json.Marshal(fv.Interface())
		if err != nil {
			return false
		}
		var val any
		if json.Unmarshal(raw, &val) != nil {
			return false
		}
		m[name] = val
	}
	return true
}

// omitted says whether encoding/json would leave the field out.
func omitted(v reflect.Value, opts string) bool {
	has := func(o string) bool { return strings.Contains(","+opts+",", ","+o+",") }
	if has("omitzero") && v.IsZero() {
		return true
	}
	if !has("omitempty") {
		return false
	}
	switch v.Kind() {
	case reflect.String, reflect.Slice, reflect.Map, reflect.Array:
		return v.Len() == 0
	case reflect.Pointer, reflect.Interface:
		return v.IsNil()
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return v.IsZero()
	}
	return false
}
