package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/clock"
)

// runProcess starts RunProcess and returns the published address and the
// channel its result arrives on.
func runProcess(t *testing.T, cfg ProcessConfig, deps ProcessDeps) (string, chan error) {
	t.Helper()
	ready := make(chan string, 1)
	deps.Ready = func(addr string) { ready <- addr }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- RunProcess(ctx, cfg, deps) }()
	t.Cleanup(cancel)
	select {
	case addr := <-ready:
		return addr, done
	case err := <-done:
		t.Fatalf("RunProcess: %v", err)
	}
	return "", nil
}

func TestRunProcessServesThroughTheRelayAndExitsWithTheWatchedProcess(t *testing.T) {
	upAddr := serveTCP(t, echo)
	dir := t.TempDir()
	cfg := ProcessConfig{Sandbox: "api", Egress: "allowlist", Allow: []string{"10.9.9.9:7"},
		Listen: "unix:" + filepath.Join(dir, "proxy.sock"), AddrFile: filepath.Join(dir, "proxy.addr"),
		LogPath: filepath.Join(dir, "egress.log"), WatchPID: 4242}
	var alive atomic.Bool
	alive.Store(true)
	clk := clock.NewFake(testEpoch)
	d := newRouteDialer()
	d.route("10.9.9.9:7", upAddr)
	addr, done := runProcess(t, cfg, ProcessDeps{Clock: clk, Dialer: d, Resolver: StaticResolver{},
		Alive: func(pid int) bool { return pid == 4242 && alive.Load() }})
	if published, _ := os.ReadFile(cfg.AddrFile); strings.TrimSpace(string(published)) != addr {
		t.Errorf("address file says %q, want %q", published, addr)
	}
	if st, err := os.Stat(filepath.Join(dir, "proxy.sock")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("socket: %v %v, want mode 0600", st, err)
	}

	guest, relayEnd := tcpPair(t)
	go Relay(context.Background(), relayEnd, addr)
	fmt.Fprint(guest, "CONNECT 10.9.9.9:7 HTTP/1.1\r\nHost: 10.9.9.9:7\r\n\r\n")
	br := bufio.NewReader(guest)
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT through the relay: %v %v", resp, err)
	}
	io.WriteString(guest, "ping")
	buf := make([]byte, 4)
	if _, err := io.ReadFull(br, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("echo through relay and proxy: %q %v", buf, err)
	}

	alive.Store(false)
	for i := 0; ; i++ {
		clk.Advance(time.Second)
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("RunProcess after the watched process died: %v", err)
			}
			for _, p := range []string{cfg.AddrFile, filepath.Join(dir, "proxy.sock")} {
				if _, err := os.Stat(p); err == nil {
					t.Errorf("%s is left behind", p)
				}
			}
			return
		case <-time.After(10 * time.Millisecond):
		}
		if i == 500 {
			t.Fatal("the proxy outlived the process it watches")
		}
	}
}

func TestRunProcessGivesUpWhenThePIDFileNeverAppears(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewFake(testEpoch)
	cfg := ProcessConfig{Egress: "deny", Listen: "127.0.0.1:0", LogPath: filepath.Join(dir, "egress.log"),
		WatchPIDFile: filepath.Join(dir, "qemu.pid")}
	addr, done := runProcess(t, cfg, ProcessDeps{Clock: clk, PIDFileWait: 3 * time.Second})
	if !strings.HasPrefix(addr, "127.0.0.1:") || strings.HasSuffix(addr, ":0") {
		t.Errorf("published address %q, want the bound port", addr)
	}
	for i := 0; ; i++ {
		clk.Advance(time.Second)
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "no process ID in") {
				t.Fatalf("RunProcess: %v", err)
			}
			return
		case <-time.After(10 * time.Millisecond):
		}
		if i == 500 {
			t.Fatal("the proxy waits forever for a PID file")
		}
	}
}

func TestRunProcessRefusesAListenAddressOffLoopback(t *testing.T) {
	dir := t.TempDir()
	for _, listen := range []string{"0.0.0.0:0", "192.0.2.1:3128", "localhost:0"} {
		cfg := ProcessConfig{Egress: "allowlist", Listen: listen, LogPath: filepath.Join(dir, "l.log")}
		if err := RunProcess(context.Background(), cfg, ProcessDeps{}); err == nil ||
			!strings.Contains(err.Error(), "loopback") {
			t.Errorf("listen %q: %v", listen, err)
		}
	}
}

func TestLoadProcessConfig(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	os.WriteFile(good, []byte(`{"sandbox":"api","egress":"allowlist","allow":["pypi.org"],
		"listen":"unix:/run/p.sock","log_path":"/tmp/e.log","watch_pid":7}`), 0o600)
	cfg, err := LoadProcessConfig(good)
	if err != nil || cfg.WatchPID != 7 || cfg.Allow[0] != "pypi.org" {
		t.Fatalf("%+v %v", cfg, err)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"egress":"allowlist","alow":["x"]}`), 0o600)
	if _, err := LoadProcessConfig(bad); err == nil || !strings.Contains(err.Error(), "alow") {
		t.Errorf("a misspelt field: %v", err)
	}
}

// tcpPair is both ends of a loopback TCP connection (what libslirp hands a
// guestfwd command).
func tcpPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

func TestRelayCarriesHalfClosesBothWays(t *testing.T) {
	// A proxy stand-in that reads to EOF, then answers and closes.
	sock := filepath.Join(t.TempDir(), "p.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		b, _ := io.ReadAll(c)
		fmt.Fprintf(c, "read %d bytes", len(b))
		c.Close()
	}()
	guest, relayEnd := tcpPair(t)
	relayDone := make(chan error, 1)
	go func() { relayDone <- Relay(context.Background(), relayEnd, "unix:"+sock) }()
	io.WriteString(guest, strings.Repeat("z", 100000))
	guest.(*net.TCPConn).CloseWrite()
	got, err := io.ReadAll(guest)
	if err != nil || string(got) != "read 100000 bytes" {
		t.Fatalf("got %q %v", got, err)
	}
	if err := <-relayDone; err != nil {
		t.Errorf("Relay: %v", err)
	}
}
