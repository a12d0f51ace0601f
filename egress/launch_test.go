package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var limaArgv = []string{"-m", "2048", "-machine", "q35,accel=tcg", "-netdev",
	"user,id=net0,net=192.168.5.0/24,dhcpstart=192.168.5.15,hostfwd=tcp:127.0.0.1:40000-:22",
	"-device", "virtio-net-pci,netdev=net0,mac=52:55:55:e1:9d:ef"}

// inProcess starts the proxy a launch asks for inside the test: the config
// the launcher wrote is the one the real `sbf egress-proxy` would read.
func inProcess(t *testing.T) func(cmd *exec.Cmd) error {
	return func(cmd *exec.Cmd) error {
		cfg, err := LoadProcessConfig(cmd.Args[len(cmd.Args)-1])
		if err != nil {
			return err
		}
		cfg.WatchPID = 0 // the test process is QEMU here
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- RunProcess(ctx, cfg, ProcessDeps{}) }()
		t.Cleanup(func() { cancel(); <-done })
		return nil
	}
}

func TestLaunchStartsTheProxyAndRestrictsTheNetwork(t *testing.T) {
	dir := t.TempDir()
	allowed := serveTCP(t, func(c net.Conn) { io.WriteString(c, "hello from the allowed host") })
	_, port, _ := net.SplitHostPort(allowed)
	c := LaunchConfig{Sandbox: "api", Egress: "allowlist", Allow: []string{"allowed.test:" + port,
		"127.0.0.1:" + port}, Dir: dir, Hosts: map[string][]string{"allowed.test": {"127.0.0.1"},
		"denied.test": {"127.0.0.1"}}, ProxyCommand: []string{"/opt/sbf", "egress-proxy"},
		RelayCommand: []string{"/opt/sbf", "egress-relay"}}
	out, err := Launch(c, limaArgv, LaunchDeps{PID: 4242, Start: inProcess(t)})
	if err != nil {
		t.Fatal(err)
	}
	netdev := out.Argv[5]
	wantRelay := "-cmd:/opt/sbf egress-relay --slots " + filepath.Join(dir, "relays") + " --max 64 --guard-pid " +
		filepath.Join(dir, "guard.pid") + " unix:" + filepath.Join(dir, "proxy-4242.sock")
	if out.ProxyAddr != "unix:"+filepath.Join(dir, "proxy-4242.sock") {
		t.Errorf("proxy address = %q", out.ProxyAddr)
	}
	if !strings.Contains(netdev, "restrict=on") || !strings.Contains(netdev, "guestfwd=tcp:192.168.5.4:3128") ||
		!strings.Contains(strings.ReplaceAll(netdev, ",,", ","), wantRelay) {
		t.Fatalf("netdev = %s, want restrict=on and a guestfwd to %s", netdev, wantRelay)
	}
	guest, host := net.Pipe()
	go Relay(context.Background(), host, "unix:"+filepath.Join(dir, "proxy-4242.sock"))
	fmt.Fprintf(guest, "CONNECT allowed.test:%s HTTP/1.1\r\nHost: allowed.test\r\n\r\n", port)
	guest.SetDeadline(time.Now().Add(10 * time.Second))
	head := make([]byte, 4096)
	n, _ := io.ReadAtLeast(guest, head, len("HTTP/1.1 200"))
	if !strings.HasPrefix(string(head[:n]), "HTTP/1.1 200") {
		t.Fatalf("CONNECT through the launched proxy: %q", head[:n])
	}
	guest.Close()
	resp, _ := connectUnix(t, filepath.Join(dir, "proxy-4242.sock"), "denied.test:"+port)
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("denied name answered %d, want 403", resp.StatusCode)
	}
}

func TestDenyStartsNoProxyAndQueriesPassThrough(t *testing.T) {
	started := false
	deps := LaunchDeps{PID: 1, Start: func(*exec.Cmd) error { started = true; return nil }}
	out, err := Launch(LaunchConfig{Egress: "deny", Dir: t.TempDir()}, limaArgv, deps)
	if err != nil || started || !strings.Contains(out.Argv[5], "restrict=on") ||
		strings.Contains(out.Argv[5], "guestfwd") {
		t.Fatalf("deny: %v, %v (proxy started: %v)", out, err, started)
	}
	for _, q := range [][]string{{"--version"}, {"-cpu", "help"}, {"-machine", "q35", "-accel", "help"}} {
		if got, err := Launch(LaunchConfig{Egress: "allowlist"}, q, deps); err != nil ||
			strings.Join(got.Argv, " ") != strings.Join(q, " ") || started {
			t.Errorf("query %v = %v, %v", q, got, err)
		}
	}
	if _, err := Launch(LaunchConfig{Egress: "deny"}, []string{"-m", "2048"}, deps); err == nil {
		t.Error("a boot with no user netdev to restrict was let through")
	}
}

// allow keeps Lima's network as it is (the host guard keeps the guest off
// the host), but only slirp's: another backend would route around it.
func TestAllowKeepsTheUserNetworkAndNothingElse(t *testing.T) {
	deps := LaunchDeps{PID: 1, Start: func(*exec.Cmd) error { t.Error("allow started a proxy"); return nil }}
	out, err := Launch(LaunchConfig{Egress: "allow", Dir: t.TempDir()}, limaArgv, deps)
	if err != nil || strings.Join(out.Argv, " ") != strings.Join(limaArgv, " ") || out.ProxyAddr != "" {
		t.Fatalf("allow: %v, %v", out, err)
	}
	vmnet := append(append([]string{}, limaArgv...), "-netdev", "socket,id=net1,fd=3")
	if _, err := Launch(LaunchConfig{Egress: "allow"}, vmnet, deps); err == nil ||
		!strings.Contains(err.Error(), "cannot restrict") {
		t.Errorf("allow with a second network: %v", err)
	}
}

func connectUnix(t *testing.T, sock, target string) (*http.Response, error) {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	return http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
}
