package guest

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/internal/coded"
)

// Runner runs commands in, and copies files into, one instance.
type Runner interface {
	Exec(ctx context.Context, req drivers.ExecRequest) (drivers.ExecResult, error)
	CopyIn(ctx context.Context, localPath, remotePath string) error
}

// The runtime probe prints "ready:<docker command>" when Docker and
// Compose v2 answer (directly, or through passwordless sudo), else what is
// missing.
const probeScript = `for d in docker "sudo -n docker"; do
  if $d version -f '{{.Server.Version}}' >/dev/null 2>&1 &&
    $d compose version --short >/dev/null 2>&1; then echo "ready:$d"; exit 0; fi
done
if ! command -v docker >/dev/null 2>&1; then echo missing; exit 0; fi
if docker compose version >/dev/null 2>&1 || sudo -n docker compose version >/dev/null 2>&1; then echo daemon
else echo no-compose; fi`

// installScript follows v1: apt (docker.io with the compose v2 plugin) or
// dnf; exit 2 when the guest has neither.
const installScript = `set -e
if command -v apt-get >/dev/null 2>&1; then
  sudo -n apt-get update -qq
  sudo -n env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io docker-compose-v2 ||
    sudo -n env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io docker-compose-plugin
elif command -v dnf >/dev/null 2>&1; then
  sudo -n dnf install -y -q docker docker-compose-plugin
else
  echo "no apt-get or dnf in the guest" >&2; exit 2
fi`

const startScript = `sudo -n systemctl enable --now docker >/dev/null 2>&1 ||
  sudo -n service docker start >/dev/null 2>&1 || true`

// ProbeRuntime reports the docker command prefix when the runtime is
// ready, else the probe's verdict (missing, daemon, no-compose).
func ProbeRuntime(ctx context.Context, r Runner) (prefix, verdict string, err error) {
	res, err := r.Exec(ctx, drivers.ExecRequest{Command: probeScript, Timeout: time.Minute})
	if err != nil {
		return "", "", fmt.Errorf("probing docker in the guest: %w", err)
	}
	out := strings.TrimSpace(res.Stdout)
	if p, ok := strings.CutPrefix(out, "ready:"); ok {
		return p, "ready", nil
	}
	return "", out, nil
}

// EnsureRuntime makes Docker and Compose usable in the guest: installs
// them when missing and allowed, starts the daemon, and probes again. It
// returns the docker command prefix ("docker" or "sudo -n docker").
func EnsureRuntime(ctx context.Context, r Runner, install bool) (string, error) {
	prefix, verdict, err := ProbeRuntime(ctx, r)
	if err != nil || verdict == "ready" {
		return prefix, err
	}
	if verdict == "missing" || verdict == "no-compose" {
		if !install {
			return "", notReady(verdict, "",
				"Docker is not installed in the guest and [docker] install_if_missing is false",
				"install docker and the compose v2 plugin in the guest image",
				"or set [docker] install_if_missing = true")
		}
		res, err := r.Exec(ctx, drivers.ExecRequest{Command: installScript, Timeout: 15 * time.Minute})
		if err != nil || res.ExitCode != 0 {
			return "", notReady(
				verdict,
				res.Stdout+res.Stderr,
				fmt.Sprintf("installing Docker in the guest failed (exit %d)", res.ExitCode),
				"check the guest's network and package sources",
				"or use a guest image with docker and the compose v2 plugin",
			)
		}
	}
	if _, err := r.Exec(ctx, drivers.ExecRequest{Command: startScript, Timeout: 2 * time.Minute}); err != nil {
		return "", err
	}
	prefix, verdict, err = ProbeRuntime(ctx, r)
	if err != nil || verdict == "ready" {
		return prefix, err
	}
	return "", notReady(verdict, "", "the Docker daemon does not answer in the guest",
		"look at 'sudo journalctl -u docker' in the guest (sbf exec NAME -- sudo journalctl -u docker)")
}

func notReady(verdict, output, msg string, steps ...string) *coded.Error {
	return &coded.Error{Code: "RUNTIME_NOT_READY", Message: msg, Details: map[string]any{
		"probe": verdict, "output": tail(output, 4000), "next_steps": steps}}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
