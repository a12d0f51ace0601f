package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/sandboxforge/sbf/spec"
)

// v1Config renders a resolved configuration the way v1's
// validate_workspace_config returned `config` (WorkspaceSettings.to_dict
// in workspace_config.py): the tree carries workspace_root, workspace_id
// and sources itself; a nullable key that is unset is null, not ""; and a
// duration v1 read as hours (check_age_threshold, max_age_threshold) is
// also given as the float v1 named <key>_hours, next to sbf's own
// spelling. Secrets stay redacted: the tree is built from the config's
// JSON, which never shows them.
func v1Config(r *spec.Resolved) (map[string]any, error) {
	raw, err := json.Marshal(r.Config)
	if err != nil {
		return nil, fmt.Errorf("rendering the configuration: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // integers stay integers
	var tree map[string]any
	if err := dec.Decode(&tree); err != nil {
		return nil, fmt.Errorf("rendering the configuration: %w", err)
	}
	v1Table(reflect.ValueOf(r.Config), tree)
	tree["workspace_root"], tree["workspace_id"], tree["sources"] = r.Root, r.WorkspaceID, nonNil(slices.Clone(r.Sources))
	return tree, nil
}

var durationType = reflect.TypeFor[spec.Duration]()

// v1Table walks a struct value next to its JSON object, the struct tags
// telling which keys are nullable and which durations are hours.
func v1Table(v reflect.Value, obj map[string]any) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		tomlName, _, _ := strings.Cut(sf.Tag.Get("toml"), ",")
		if sf.Anonymous && tomlName == "" {
			v1Table(v.Field(i), obj) // inline: its keys are this table's
			continue
		}
		key, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		val, ok := obj[key]
		if key == "" || key == "-" || !ok {
			continue
		}
		fv := v.Field(i)
		if sf.Type == durationType && slices.Contains(strings.Split(sf.Tag.Get("check"), ","), "hours") {
			var hours any
			if d := fv.Interface().(spec.Duration); d != 0 {
				hours = d.Std().Hours()
			}
			obj[key+"_hours"] = hours
		}
		if sf.Tag.Get("nullable") == "true" && val == "" {
			obj[key] = nil
			continue
		}
		switch sf.Type.Kind() {
		case reflect.Struct:
			if sub, ok := val.(map[string]any); ok {
				v1Table(fv, sub)
			}
		case reflect.Map:
			if sf.Type.Key().Kind() != reflect.String || sf.Type.Elem().Kind() != reflect.Struct {
				continue
			}
			entries, _ := val.(map[string]any)
			for _, k := range fv.MapKeys() {
				if sub, ok := entries[k.String()].(map[string]any); ok {
					v1Table(fv.MapIndex(k), sub)
				}
			}
		}
	}
}
