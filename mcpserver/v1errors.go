package mcpserver

import (
	"errors"
	"fmt"

	"github.com/sandboxforge/sbf/internal/coded"
)

// v1Error words the engine's verdicts on an instance as SandboxForge v1
// did: the same codes and details, v1's sentences, the instance named by
// its MCP id ("" for one a refused call did not make). It renames; the
// engine decided.
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
		d := map[string]any{}
		if id != "" { // a refusal before anything was made names no instance
			d["instance_id"] = id
		}
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

// nextSteps are the calls that get an agent past an error about an
// instance it cannot use, each naming the tool and the argument to give:
// the same whatever the reason (an id that never existed reads as one of
// a workspace the client may not use).
var nextSteps = map[string][]string{
	coded.InstanceNotFound: {
		"call list_instances to see the instance_id of every instance this server serves",
		"call create_instance with workspace_root to make a new instance",
	},
	coded.InstanceTerminal: {
		"call create_instance with workspace_root to make a new instance: this one's lease has ended",
		"call list_instances with include_expired: true to see this instance's record",
	},
}

// withNextSteps adds an error's next calls to its details, unless the
// error names its own.
func withNextSteps(te *coded.Error) *coded.Error {
	steps, ok := nextSteps[te.Code]
	if !ok {
		return te
	}
	if te.Details == nil {
		te.Details = map[string]any{}
	}
	if _, own := te.Details["next_steps"]; !own {
		te.Details["next_steps"] = steps
	}
	return te
}
