package mcpserver

import (
	"errors"
	"fmt"

	"github.com/sandboxforge/sbf/internal/coded"
)

// v1Error words the engine's verdicts on an instance as SandboxForge v1
// did: the same codes and details, v1's sentences, the instance named by
// its MCP id. It renames; the engine decided.
func v1Error(err error, id string) error {
	var ce *coded.Error
	if !errors.As(err, &ce) {
		return err
	}
	switch ce.Code {
	case coded.InstanceTerminal:
		status := ce.Details["status"]
		return newToolError(coded.InstanceTerminal, fmt.Sprintf("Instance '%s' is %s", id, status),
			map[string]any{"instance_id": id, "status": status})
	case coded.TTLInvalid:
		d := map[string]any{"instance_id": id}
		for _, k := range []string{"ttl_minutes", "default_ttl_minutes", "max_ttl_minutes", "max_lifetime_minutes"} {
			d[k] = ce.Details[k]
		}
		for _, k := range []string{"max_ttl_source", "max_lifetime_source"} {
			if src, ok := ce.Details[k]; ok {
				d[k] = src // the operator's ceiling, which no argument raises
			}
		}
		return newToolError(coded.TTLInvalid, fmt.Sprintf("ttl_minutes must be between 1 and %v (%s)",
			ce.Details["max_ttl_minutes"], ce.Message), d)
	}
	return err
}
