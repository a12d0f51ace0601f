package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The test binary is the relay when these are set, as QEMU runs sbf's:
// stdin, stdout and stderr one end of a loopback TCP connection.
const (
	relayHelperAddr  = "SBF_EGRESS_RELAY_HELPER"
	relayHelperSlots = "SBF_EGRESS_RELAY_SLOTS" // DIR:MAX
	relayHelperMode  = "SBF_EGRESS_RELAY_MODE"  // "copy": the relay of 45f7204, which copied
)

func TestMain(m *testing.M) {
	if addr := os.Getenv(relayHelperAddr); addr != "" {
		var slots RelaySlots
		if v := os.Getenv(relayHelperSlots); v != "" {
			dir, max, _ := strings.Cut(v, ":")
			slots.Dir = dir
			slots.Max, _ = strconv.Atoi(max)
		}
		var err error
		if os.Getenv(relayHelperMode) == "copy" {
			c, ferr := net.FileConn(os.Stdin)
			if ferr != nil {
				os.Exit(3)
			}
			err = Relay(context.Background(), c, addr)
		} else {
			err = RelayStdio(context.Background(), addr, slots)
		}
		switch {
		case errors.Is(err, ErrNoRelaySlot):
			os.Exit(4)
		case err != nil:
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startRelay runs the relay for one new guest connection and returns the
// guest's end of it and the relay process.
func startRelay(t *testing.T, addr, slots string) (net.Conn, *exec.Cmd) {
	t.Helper()
	guest, qemuEnd := tcpPair(t)
	f, err := qemuEnd.(*net.TCPConn).File()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), relayHelperAddr+"="+addr, relayHelperSlots+"="+slots)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = f, f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	qemuEnd.Close()
	return guest, cmd
}

// The relay hands its guest connection to the proxy and exits: the
// connection is then served with no relay process behind it.
func TestRelayHandsTheGuestConnectionToTheProxy(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "proxy.sock")
	up := serveTCP(t, echo)
	_, port, _ := net.SplitHostPort(up)
	tp := startProxyOn(t, "unix", sock, mustPolicy(t, "allowlist", "echo.example:"+port),
		StaticResolver{"echo.example": {otherIP}})
	tp.dialer.route(otherIP+":"+port, up)
	guest, relay := startRelay(t, "unix:"+sock, "")
	if err := relay.Wait(); err != nil {
		t.Fatalf("the relay did not exit once the proxy held the connection: %v", err)
	}
	fmt.Fprintf(guest, "CONNECT echo.example:%s HTTP/1.1\r\nHost: echo.example\r\n\r\n", port)
	head := make([]byte, len("HTTP/1.1 200 Connection established\r\n\r\n"))
	if _, err := io.ReadFull(guest, head); err != nil || !strings.HasPrefix(string(head), "HTTP/1.1 200") {
		t.Fatalf("CONNECT through the handed-off connection: %q %v", head, err)
	}
	io.WriteString(guest, "ping")
	guest.(*net.TCPConn).CloseWrite()
	if got, err := io.ReadAll(guest); err != nil || string(got) != "ping" {
		t.Errorf("echo through the tunnel: %q %v", got, err)
	}
}

// A relay whose stdin and stdout are pipes (a terminal, a test) copies:
// a request that comes a moment after it started still reaches the proxy,
// and the answer comes back (the pipe was once left non-blocking, and the
// relay read "nothing yet" as the end).
func TestARelayOnPipesWaitsForTheRequest(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "proxy.sock")
	startProxyOn(t, "unix", sock, mustPolicy(t, "deny"), StaticResolver{})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), relayHelperAddr+"=unix:"+sock)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the relay is up and reading before the request comes
	io.WriteString(in, "GET http://x.example/ HTTP/1.1\r\nHost: x.example\r\n\r\n")
	buf := make([]byte, 12)
	if _, err := io.ReadFull(out, buf); err != nil || string(buf) != "HTTP/1.1 403" {
		t.Errorf("the answer through a relay on pipes: %q %v", buf, err)
	}
	in.Close()
	cmd.Wait()
}

// A proxy over its connection cap answers 503 without taking the
// connection: the relay passes the answer to the guest.
func TestRelayPassesTheProxysRefusalOn(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "proxy.sock")
	startProxyOn(t, "unix", sock, mustPolicy(t, "deny"), StaticResolver{})
	guest, relay := startRelay(t, "unix:"+sock, "")
	io.WriteString(guest, "GET http://x.example/ HTTP/1.1\r\nHost: x.example\r\n\r\n")
	buf := make([]byte, 12)
	if _, err := io.ReadFull(guest, buf); err != nil || string(buf) != "HTTP/1.1 403" {
		t.Errorf("the guest read %q %v", buf, err)
	}
	relay.Wait()
}

// 2N guest connections at once, to a proxy that takes none: N relays wait
// for it, each holding a slot, and the other N exit at once with the guest
// connection closed; once the proxy answers, the slots are free again.
func TestRelaysOfAVMAreBoundedBySlots(t *testing.T) {
	const n = 4
	sock := filepath.Join(t.TempDir(), "slow.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	held := make(chan net.Conn, 2*n)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held <- c
		}
	}()
	slots := filepath.Join(t.TempDir(), "relays") + ":" + strconv.Itoa(n)
	type exit struct {
		guest net.Conn
		err   error
	}
	exits := make(chan exit, 2*n)
	for range 2 * n {
		g, r := startRelay(t, "unix:"+sock, slots)
		go func() { exits <- exit{g, r.Wait()} }()
	}
	var conns []net.Conn
	for range n { // the n relays that got a slot reached the proxy, and wait for it
		conns = append(conns, <-held)
	}
	for range n { // so the first n to end are the others
		e := <-exits
		var ee *exec.ExitError
		if !errors.As(e.err, &ee) || ee.ExitCode() != 4 {
			t.Errorf("a relay ended while n held their slots: %v, want exit 4 (no slot)", e.err)
		}
		if b, _ := io.ReadAll(e.guest); len(b) != 0 {
			t.Errorf("the refused guest read %q", b)
		}
	}
	if len(held) != 0 {
		t.Errorf("%d more relays reached the proxy", len(held))
	}
	for _, c := range conns {
		ackHandoff(c)
	}
	for range n {
		if e := <-exits; e.err != nil {
			t.Errorf("a relay the proxy took: %v", e.err)
		}
	}
	g, r := startRelay(t, "unix:"+sock, slots) // the slots are free again
	ackHandoff(<-held)
	if err := r.Wait(); err != nil {
		t.Errorf("a relay after the others ended: %v", err)
	}
	g.Close()
}

// ackHandoff plays the proxy's part once it holds a relay's connection.
func ackHandoff(c net.Conn) {
	io.ReadFull(c, make([]byte, 1)) // the byte carrying the descriptor, which is dropped
	c.Write([]byte{handoffAck})
	c.Close()
}
