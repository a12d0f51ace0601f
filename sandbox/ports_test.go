package sandbox_test

import (
	"errors"
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/internal/testutil"
	"github.com/sandboxforge/sbf/sandbox"
)

// guestEcho stands for a server in the guest: for the sim, on this
// host's loopback.
func guestEcho(t *testing.T) int { return testutil.ServeTCP(t, testutil.Echo).Port }

func roundTrip(t *testing.T, addr, msg string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte(msg))
	c.(*net.TCPConn).CloseWrite()
	got, _ := io.ReadAll(c)
	return string(got)
}

func TestForwardCarriesConnectionsToTheGuest(t *testing.T) {
	tgt, _ := simTarget(t)
	port := guestEcho(t)
	f, err := tgt.Forward(t.Context(), 0, port, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if host, _, _ := net.SplitHostPort(f.Addr()); host != "127.0.0.1" || f.HostPort == 0 || f.HostPort == port {
		t.Fatalf("listens on %s", f.Addr())
	}
	for i := range 3 {
		if got := roundTrip(t, f.Addr(), "hello "+strconv.Itoa(i)); got != "hello "+strconv.Itoa(i) {
			t.Errorf("round trip %d = %q", i, got)
		}
	}
	if f.Connections.Load() != 3 || f.BytesIn.Load() != 21 || f.BytesOut.Load() != 21 {
		t.Errorf("counted %d connections, %d in, %d out", f.Connections.Load(), f.BytesIn.Load(), f.BytesOut.Load())
	}
	f.Close()
	<-f.Done()
	if c, err := net.Dial("tcp", f.Addr()); err == nil {
		c.Close()
		t.Error("the port still accepts connections after Close")
	}
}

// Close ends the connections a forward carries, not only its listener.
func TestForwardCloseEndsOpenConnections(t *testing.T) {
	tgt, _ := simTarget(t)
	f, err := tgt.Forward(t.Context(), 0, guestEcho(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", f.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("x"))
	buf := make([]byte, 1)
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := c.Read(buf); err == nil {
		t.Error("the connection outlived its forward")
	}
}

// A sandbox whose lease ended gets no new connection, and its forward
// stops.
func TestForwardStopsWhenItsSandboxIsNoLongerAdmitted(t *testing.T) {
	tgt, _ := simTarget(t)
	var ended atomic.Bool
	f, err := tgt.Forward(t.Context(), 0, guestEcho(t), func() error {
		if ended.Load() {
			return errors.New("lease ended")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if roundTrip(t, f.Addr(), "a") != "a" {
		t.Fatal("no round trip while admitted")
	}
	ended.Store(true)
	if got := roundTrip(t, f.Addr(), "b"); got != "" {
		t.Errorf("an ended sandbox answered %q", got)
	}
	<-f.Done()
}

func TestForwardRefusals(t *testing.T) {
	tgt, _ := simTarget(t)
	port := guestEcho(t)
	for name, c := range map[string]struct {
		host, guest int
		code        string
	}{
		"guest port 0":            {0, 0, coded.InvalidArguments},
		"guest port too big":      {0, 70000, coded.InvalidArguments},
		"negative host port":      {-1, port, coded.InvalidArguments},
		"the sim's own port":      {port, port, coded.InvalidArguments},
		"a host port in use here": {port, 1, sandbox.CodePortInUse},
	} {
		f, err := tgt.Forward(t.Context(), c.host, c.guest, nil)
		if f != nil {
			f.Close()
		}
		if got := codeOf(err); got != c.code {
			t.Errorf("%s: %v, want %s", name, err, c.code)
		}
	}
}
