package mcpserver

import (
	"maps"
	"path/filepath"
	"slices"

	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// networkPolicy is each sandbox's egress as the workspace resolves it
// (its [sandboxes.NAME.network] over [network]). Whether a driver can
// enforce it is the engine's call when the sandbox is converged: plans
// refuse what it cannot (POLICY_UNSUPPORTED).
func networkPolicy(r *spec.Resolved) map[string]any {
	sandboxes := map[string]any{}
	for _, name := range slices.Sorted(maps.Keys(r.Config.Sandboxes)) {
		sb := r.Config.Sandboxes[name]
		sandboxes[name] = map[string]any{"driver": sb.Driver, "egress": egressMode(sb.Network),
			"allow": nonNil(sb.Network.Allow)}
	}
	return map[string]any{
		"default":   map[string]any{"egress": egressMode(r.Config.Network), "allow": nonNil(r.Config.Network.Allow)},
		"sandboxes": sandboxes,
		"note": "deny and allowlist are enforced outside the guest by drivers that can (Lima with QEMU on " +
			"Linux); a sandbox whose driver cannot is refused with POLICY_UNSUPPORTED, never started open; " +
			"a request may only narrow this",
	}
}

func egressMode(n spec.Network) string {
	if n.Egress == "" {
		return "allow"
	}
	return n.Egress
}

// snapshotIndex is the snapshots the state file records for the
// workspace: what sbf took and has not deleted, per sandbox. The backend
// is not asked (list_snapshots does), so reading it costs no VM a call.
func snapshotIndex(r *spec.Resolved, id string) (any, error) {
	rec, err := state.Read(filepath.Join(r.Root, spec.Dir), r.Root, r.WorkspaceID)
	if err != nil {
		return nil, err
	}
	rows := []map[string]any{}
	for _, s := range rec.Snapshots {
		row := map[string]any{"sandbox": s.Sandbox, "instance": s.Instance, "name": s.Name, "driver": s.Driver,
			"created_at": s.CreatedAt}
		if s.SizeBytes > 0 {
			row["size_bytes"] = s.SizeBytes
		}
		rows = append(rows, row)
	}
	return map[string]any{"workspace_root": r.Root, "workspace_id": id, "snapshots": rows, "count": len(rows)}, nil
}
