package egress

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/internal/atomicfile"
	"github.com/sandboxforge/sbf/internal/clock"
)

// ProcessConfig is the JSON file a supervised proxy process reads (the
// hidden `sbf egress-proxy CONFIG` subcommand).
//
// The proxy is a process of its own because its lifetime is the VM's, not
// any sbf command's: `sbf up` returns while the VM runs on, the MCP server
// may restart, and the guest's connections must keep being served (and
// refused) all the while; and when the VM stops or crashes, its proxy must
// go too. So it watches the QEMU process and exits when that is gone.
type ProcessConfig struct {
	Sandbox string   `json:"sandbox"`
	Egress  string   `json:"egress"`
	Allow   []string `json:"allow"`
	// Listen is "unix:/path/proxy.sock" (preferred: only the user can use
	// it) or a loopback "127.0.0.1:PORT" (0 picks a port).
	Listen string `json:"listen"`
	// AddrFile, when set, receives the bound address once the proxy listens
	// (written atomically; removed on exit): readiness and a dynamic port.
	AddrFile    string `json:"addr_file,omitempty"`
	LogPath     string `json:"log_path"`
	LogMaxBytes int64  `json:"log_max_bytes,omitempty"`
	// WatchPID is the QEMU process; the proxy exits once it is gone.
	WatchPID int `json:"watch_pid,omitempty"`
	// WatchPIDFile is read for the PID to watch when WatchPID is 0 (Lima's
	// qemu.pid); the proxy waits for it up to PIDFileWait.
	WatchPIDFile string `json:"watch_pid_file,omitempty"`
	MaxConns     int    `json:"max_conns,omitempty"`
	// Hosts, when set, is the proxy's whole DNS (a StaticResolver).
	Hosts map[string][]string `json:"hosts,omitempty"`
}

// ProcessDeps are RunProcess's collaborators; zero values are the real ones.
type ProcessDeps struct {
	// Clock stamps the log and paces the PID polls.
	Clock clock.Clock
	// PollInterval is how often the watched process is checked (1s).
	PollInterval time.Duration
	// PIDFileWait bounds the wait for WatchPIDFile to name a process (5m).
	PIDFileWait time.Duration
	Resolver    Resolver
	Dialer      Dialer
	// Alive reports whether a process exists; nil is a signal-0 probe.
	Alive func(pid int) bool
	// Ready, when set, is called with the bound address once listening.
	Ready func(addr string)
}

// LoadProcessConfig reads a ProcessConfig; unknown fields are errors.
func LoadProcessConfig(path string) (ProcessConfig, error) {
	var cfg ProcessConfig
	data, err := os.ReadFile(path)
	if err != nil {
		return cfg, fmt.Errorf("reading egress proxy config: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return cfg, fmt.Errorf("reading egress proxy config %s: %w", path, err)
	}
	return cfg, nil
}

// RunProcess runs the proxy for one sandbox until ctx ends or the watched
// process is gone (then it returns nil), removing its socket and AddrFile.
func RunProcess(ctx context.Context, cfg ProcessConfig, deps ProcessDeps) error {
	pol, err := ParsePolicy(cfg.Egress, cfg.Allow)
	if err != nil {
		return fmt.Errorf("egress proxy for %s: %w", cfg.Sandbox, err)
	}
	if cfg.Hosts != nil && deps.Resolver == nil {
		deps.Resolver = StaticResolver(cfg.Hosts)
	}
	deps = deps.withDefaults()
	lg, err := OpenLog(cfg.LogPath, cfg.LogMaxBytes)
	if err != nil {
		return err
	}
	defer lg.Close()
	p, err := New(Config{Sandbox: cfg.Sandbox, Policy: pol, Resolver: deps.Resolver, Dialer: deps.Dialer,
		Log: lg, Clock: deps.Clock, MaxConns: cfg.MaxConns})
	if err != nil {
		return err
	}
	ln, addr, err := listen(cfg.Listen)
	if err != nil {
		return err
	}
	defer cleanupListener(cfg.Listen)
	if cfg.AddrFile != "" {
		if err := atomicfile.WriteFile(cfg.AddrFile, []byte(addr+"\n"), 0o600); err != nil {
			ln.Close()
			return fmt.Errorf("writing the egress proxy address: %w", err)
		}
		defer os.Remove(cfg.AddrFile)
	}
	if deps.Ready != nil {
		deps.Ready(addr)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if cfg.WatchPID != 0 || cfg.WatchPIDFile != "" {
		go func() { cancel(watchProcess(ctx, cfg, deps)) }()
	}
	if err := p.Serve(ctx, ln); err != nil {
		return err
	}
	if err := context.Cause(ctx); err != nil && !errors.Is(err, errWatchedExited) && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

func (d ProcessDeps) withDefaults() ProcessDeps {
	if d.Clock == nil {
		d.Clock = clock.Real{}
	}
	setDefault(&d.PollInterval, time.Second)
	setDefault(&d.PIDFileWait, 5*time.Minute)
	if d.Alive == nil {
		d.Alive = processAlive
	}
	return d
}

// listen opens the proxy's listener: a unix socket (mode 0600, a stale one
// replaced) or a loopback TCP address. It returns the address to publish.
func listen(spec string) (net.Listener, string, error) {
	if path, ok := strings.CutPrefix(spec, "unix:"); ok {
		if st, err := os.Lstat(path); err == nil && st.Mode().Type() == fs.ModeSocket {
			os.Remove(path) // left by a proxy that was killed
		}
		ln, err := net.Listen("unix", path)
		if err != nil {
			return nil, "", fmt.Errorf("egress proxy listening on %s: %w", path, err)
		}
		if err := os.Chmod(path, 0o600); err != nil {
			ln.Close()
			return nil, "", fmt.Errorf("egress proxy socket %s: %w", path, err)
		}
		return ln, spec, nil
	}
	ap, err := netip.ParseAddrPort(spec)
	if err != nil || !ap.Addr().IsLoopback() {
		return nil, "", fmt.Errorf("egress proxy listen address %q: want unix:PATH or a loopback IP:PORT", spec)
	}
	ln, err := net.Listen("tcp", spec)
	if err != nil {
		return nil, "", fmt.Errorf("egress proxy listening on %s: %w", spec, err)
	}
	return ln, ln.Addr().String(), nil
}

func cleanupListener(spec string) {
	if path, ok := strings.CutPrefix(spec, "unix:"); ok {
		os.Remove(path)
	}
}

var errWatchedExited = errors.New("the watched process exited")

// watchProcess returns errWatchedExited once the watched process is gone,
// another error when no PID could be found in time, nil when ctx ends.
func watchProcess(ctx context.Context, cfg ProcessConfig, deps ProcessDeps) error {
	tick := deps.Clock.NewTicker(deps.PollInterval)
	defer tick.Stop()
	pid, waited := cfg.WatchPID, time.Duration(0)
	for {
		if pid == 0 {
			pid = readPIDFile(cfg.WatchPIDFile)
			if pid == 0 && waited >= deps.PIDFileWait {
				return fmt.Errorf("no process ID in %s after %s", cfg.WatchPIDFile, deps.PIDFileWait)
			}
		}
		if pid != 0 && !deps.Alive(pid) {
			return errWatchedExited
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C():
			waited += deps.PollInterval
		}
	}
}

func readPIDFile(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}
