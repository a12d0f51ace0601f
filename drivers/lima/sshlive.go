package lima

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sshexec"
)

// hostAgentPatience bounds the host agent's answer; limactl waits 3 s,
// and a slower answer is left to limactl.
const hostAgentPatience = time.Second

// liveTarget reaches a running instance's ssh.config without starting
// limactl (~140 ms on an emulating host, on a warm create's path): Lima's
// own test of a running instance (its host agent answers, its VM process
// lives) and the ssh.config naming the port the host agent says it
// forwards, so a stale file (a stopped instance, a port another took) is
// never dialled (SECURITY.md rule 70). An instance still booting, or
// anything unsure, is not taken: sshTarget asks limactl, whose answer
// says why.
func (d *Driver) liveTarget(ctx context.Context, instance string) (sshexec.Target, error) {
	dir := d.instanceDir(instance)
	probe := drivers.Instance{Status: drivers.Running}
	if observeBoot(&probe, dir); probe.Status != drivers.Running {
		return sshexec.Target{}, errors.New("its boot is not over")
	}
	if !vmProcessLives(dir) {
		return sshexec.Target{}, errors.New("no VM process of it lives")
	}
	port, err := hostAgentSSHPort(ctx, filepath.Join(dir, hostAgentSock))
	if err != nil {
		return sshexec.Target{}, err
	}
	data, err := os.ReadFile(filepath.Join(dir, sshConfigFile))
	if err != nil {
		return sshexec.Target{}, err
	}
	t, err := parseSSHConfig(string(data))
	switch {
	case err != nil:
		return sshexec.Target{}, err
	case t.Port != strconv.Itoa(port):
		return sshexec.Target{}, fmt.Errorf("its ssh.config names port %s, its host agent %d", t.Port, port)
	}
	return t, nil
}

// vmProcessLives is whether a pid file of the instance's VM names a
// process that runs (signal 0; EPERM means it runs as another user;
// Windows cannot tell, and limactl is asked).
func vmProcessLives(dir string) bool {
	for _, name := range vmPIDFiles {
		if pidFileState(filepath.Join(dir, name)) == pidLives {
			return true
		}
	}
	return false
}

// hostAgentSSHPort asks a host agent on its socket the SSH port it
// forwards (GET /v1/info, as limactl list does).
func hostAgentSSHPort(ctx context.Context, sock string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, hostAgentPatience)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://lima-hostagent/v1/info", nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("asking its host agent: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("its host agent answered %s", resp.Status)
	}
	var info struct {
		SSHLocalPort int `json:"sshLocalPort"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&info); err != nil {
		return 0, fmt.Errorf("reading its host agent's answer: %w", err)
	}
	if info.SSHLocalPort <= 0 {
		return 0, errors.New("its host agent names no SSH port")
	}
	return info.SSHLocalPort, nil
}
