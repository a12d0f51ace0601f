package spec

import (
	"maps"
	"reflect"
)

// mergeTrees lays src over dst: tables merge key by key, everything else
// (scalars and arrays) replaces.
func mergeTrees(dst, src map[string]any) {
	for k, v := range src {
		sm, srcIsTable := v.(map[string]any)
		dm, dstIsTable := dst[k].(map[string]any)
		if srcIsTable && dstIsTable {
			mergeTrees(dm, sm)
			continue
		}
		if srcIsTable {
			fresh := map[string]any{}
			mergeTrees(fresh, sm)
			v = fresh
		}
		dst[k] = v
	}
}

// assign writes a validated, canonical tree into a struct, leaving keys the
// tree does not mention as they were. Applied to the defaults, this is the
// deep merge of the layers.
func assign(tree map[string]any, dst reflect.Value) {
	for key, val := range tree {
		f, ok := lookupField(dst.Type(), key)
		if !ok {
			assignBackendTable(dst, key, val)
			continue
		}
		target := dst.FieldByIndex(f.index)
		switch {
		case f.typ == durationType || f.typ == timeType:
			target.Set(reflect.ValueOf(val).Convert(f.typ))
		case f.typ == secretType:
			target.Set(reflect.ValueOf(NewSecret(val.(string))))
		case f.typ == envType:
			m := map[string]string{}
			for k, x := range val.(map[string]any) {
				m[k] = x.(string)
			}
			target.Set(reflect.ValueOf(NewEnv(m)))
		case f.typ.Kind() == reflect.Struct:
			assign(val.(map[string]any), target)
		case f.typ.Kind() == reflect.Map &&
			(f.typ.Elem() == reflect.TypeFor[Sandbox]() || f.typ.Elem() == reflect.TypeFor[Pool]()):
			// Sandboxes and pools are resolved separately: each inherits [vm].
		case f.typ.Kind() == reflect.Map:
			m := reflect.MakeMap(f.typ)
			for k, x := range val.(map[string]any) {
				elem := reflect.New(f.typ.Elem()).Elem()
				assign(x.(map[string]any), elem)
				m.SetMapIndex(reflect.ValueOf(k), elem)
			}
			target.Set(m)
		default:
			target.Set(reflect.ValueOf(val).Convert(f.typ))
		}
	}
}

// resolveSandboxes builds each named sandbox from the final [vm] plus the
// keys its own table sets, so a sandbox override beats [vm] at any layer.
func resolveSandboxes(merged map[string]any, vm VM, network Network) map[string]Sandbox {
	tables, _ := merged["sandboxes"].(map[string]any)
	out := make(map[string]Sandbox, len(tables))
	for name, t := range tables {
		sb := Sandbox{VM: vm, Services: []string{}, Ports: []string{}}
		sb.Backends = vm.Backends.clone() // its own tables are laid over [vm]'s, which stay as they are
		sb.Mounts = append([]string{}, vm.Mounts...)
		sb.Network = Network{Egress: network.Egress, Allow: append([]string{}, network.Allow...)}
		assign(t.(map[string]any), reflect.ValueOf(&sb).Elem())
		out[name] = sb
	}
	return out
}

func cloneTree(t map[string]any) map[string]any {
	out := maps.Clone(t)
	for k, v := range out {
		if m, ok := v.(map[string]any); ok {
			out[k] = cloneTree(m)
		}
	}
	return out
}
