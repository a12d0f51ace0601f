package sshexec

import (
	"context"
	"errors"
	"io"
	"net"
	"path/filepath"
	"testing"

	"github.com/sandboxforge/sbf/internal/testutil"
	"golang.org/x/crypto/ssh"
)

// A guest port is reached over the kept-open connection: no new TCP
// connection to sshd per forwarded connection, and a port where nothing
// listens is the guest's refusal.
func TestDialGuestUsesTheKeptConnection(t *testing.T) {
	p, g := guest(t, Fallbacks{})
	echo := echoServer(t)
	ctx := context.Background()
	for range 3 {
		c, err := p.DialGuest(ctx, instance, echo)
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte("ping"))
		c.(interface{ CloseWrite() error }).CloseWrite()
		if got, _ := io.ReadAll(c); string(got) != "ping" {
			t.Errorf("echo = %q", got)
		}
		c.Close()
	}
	if n := g.Connections.Load(); n != 1 {
		t.Errorf("%d SSH connections for three forwarded ones", n)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	_, err := p.DialGuest(ctx, instance, closed)
	var refused *ssh.OpenChannelError
	if !errors.As(err, &refused) || g.Connections.Load() != 1 {
		t.Errorf("dial of a closed port: %v (%d connections)", err, g.Connections.Load())
	}
}

// echoServer answers every connection with what it sent, until its end.
func echoServer(t *testing.T) int { return testutil.ServeTCP(t, testutil.Echo).Port }

// A guest's unix socket is reached over the same kept-open connection (a
// streamlocal channel); a path where nothing listens is the guest's
// refusal, with no redial.
func TestDialGuestSocketUsesTheKeptConnection(t *testing.T) {
	p, g := guest(t, Fallbacks{})
	sock := filepath.Join(t.TempDir(), "echo.sock")
	testutil.ServeUnix(t, sock, testutil.Echo)
	ctx := context.Background()
	for range 2 {
		c, err := p.DialGuestSocket(ctx, instance, sock)
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte("ping"))
		buf := make([]byte, 4)
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
			t.Errorf("echo = %q, %v", buf, err)
		}
		c.Close()
	}
	_, err := p.DialGuestSocket(ctx, instance, sock+".none")
	var refused *ssh.OpenChannelError
	if !errors.As(err, &refused) || g.Connections.Load() != 1 {
		t.Errorf("dial of a missing socket: %v (%d connections)", err, g.Connections.Load())
	}
}
