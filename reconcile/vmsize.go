package reconcile

import (
	"fmt"
	"strings"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/spec"
)

// sizeWithinCeilings refuses a VM size a request asks for (the shape keys
// of sbf up or create_instance, persisted in the managed overrides) past
// the operator's ceilings, before anything is written: a value already in
// the workspace's files is lowered with a warning instead (spec).
func sizeWithinCeilings(r *spec.Resolved, keys map[string]any) error {
	var over []string
	details := map[string]any{}
	for _, key := range []string{"cpus", "memory_gib", "disk_gib"} {
		asked, ok := number(keys[key])
		row, _ := r.CeilingOf("max_" + key)
		bound, bounded := number(row.Ceiling)
		if !ok || !bounded || asked <= bound {
			continue
		}
		over = append(over, fmt.Sprintf("%s %v is above the operator's ceiling %v (%s)", key, keys[key], row.Ceiling,
			row.Source))
		details[key], details["max_"+key] = keys[key], row.Ceiling
	}
	if len(over) == 0 {
		return nil
	}
	return coded.New(coded.VMSizeLimit, details, "%s; ask for less", strings.Join(over, "; "))
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}
