package docker

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/drivers/guest"
)

// bridge is v1's: make sure the services' network exists and connect
// every container of the project that is not on it yet.
func (d *Docker) bridge(ctx context.Context, cs ComposeSpec, workdir string) (map[string]any, error) {
	network := guest.NetworkName(d.target.Resolved.Config.Infra, d.target.Sandbox)
	status, err := d.ensureNetwork(ctx, network)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"status": "ok", "network": network, "network_status": status,
		"containers_seen": 0, "containers_connected": 0, "containers_already_connected": 0}
	args, err := ComposeArgs(
		ComposeSpec{Project: cs.Project, File: cs.File, Action: "ps", Services: cs.Services, Quiet: true},
	)
	if err != nil {
		return nil, err
	}
	ps, err := d.run(ctx, d.line(args), call{Timeout: 3 * time.Minute, Workdir: workdir})
	if err != nil {
		return nil, err
	}
	ids := strings.Fields(ps.Stdout)
	if len(ids) == 0 {
		out["status"] = "no_compose_containers"
		return out, nil
	}
	connected, already := 0, 0
	for _, id := range ids {
		nets, err := d.Command(
			ctx,
			[]string{"inspect", "-f", "{{range $k, $_ := .NetworkSettings.Networks}}{{$k}} {{end}}", id},
		)
		if err != nil {
			return nil, err
		}
		if slices.Contains(strings.Fields(nets.Stdout), network) {
			already++
			continue
		}
		if _, err := d.Command(ctx, []string{"network", "connect", network, id}); err != nil {
			return nil, err
		}
		connected++
	}
	out["containers_seen"], out["containers_connected"], out["containers_already_connected"] = len(ids), connected, already
	return out, nil
}

func (d *Docker) ensureNetwork(ctx context.Context, network string) (string, error) {
	res, err := d.exec(ctx, probeReq(d.line([]string{"network", "inspect", network})+" >/dev/null 2>&1"))
	if err != nil {
		return "", err
	}
	if res.ExitCode == 0 {
		return "existing", nil
	}
	if _, err := d.Command(ctx, []string{"network", "create", network}); err != nil {
		return "", err
	}
	return "created", nil
}
