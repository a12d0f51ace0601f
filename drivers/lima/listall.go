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
	out, _, err := d.run(ctx, nil, "list", "--json")
	if err != nil {
		return nil, err
	}
	listed, err := parseList(out)
	if err != nil {
		return nil, err
	}
	insts := make([]drivers.Instance, 0, len(listed))
	for _, l := range listed {
		dir := l.Dir
		if dir == "" {
			dir = d.instanceDir(l.Name)
		}
		label, err := drivers.ReadLabelDir(dir)
		if err != nil {
			return nil, err
		}
		inst := l.instance()
		inst.Label = label
		insts = append(insts, inst)
	}
	return insts, nil
}
