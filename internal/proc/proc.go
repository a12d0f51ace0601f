// Package proc is how sbf starts the processes it runs: in a process group
// of its own (Group) or a session of its own (Detach), never in the
// terminal's foreground group. A terminal's Ctrl-C goes to that whole
// group: had limactl, QEMU's wrappers, a compose loader or a plugin been in
// it, the first Ctrl-C — which promises to let the steps in flight finish —
// would have killed them. Only sbf decides what an interrupt does to them.
// Also how a process of sbf's own that waits on guests schedules itself
// (OneP).
package proc

import (
	"context"
	"os/exec"
)

// Command is exec.CommandContext for a tool sbf runs as a step (limactl,
// qemu-img, a plugin): in a group of its own (Group), the whole group
// killed when ctx ends.
func Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	Group(cmd)
	cmd.Cancel = func() error { return KillGroup(cmd) }
	return cmd
}
