package lima

import (
	"context"

	"github.com/sandboxforge/sbf/drivers"
)

// ListAll reports every instance `limactl list --json` shows, sbf's or
// not (SandboxForge v1's agent-XXXXXXXX, a person's "default"), with the
// same fields List gives sbf's: status, the shape Lima reports, the SSH
// address and any label sbf wrote in the instance's folder. It is for
// `sbf import-v1`, which must see VMs sbf did not name; nothing else
// should act on what only ListAll shows.
func (d *Driver) ListAll(ctx context.Context) ([]drivers.Instance, error) {
	return d.list(ctx, func(string, *drivers.Label) bool { return true })
}
