package testutil

import (
	"bytes"
	"io"
	"net"
	"sync"
	"testing"
)

// ServeTCP runs handle on every connection of a new loopback listener
// (closing each connection after it) until the test ends, and returns the
// listener's address.
func ServeTCP(t testing.TB, handle func(net.Conn)) *net.TCPAddr {
	return serve(t, "tcp", "127.0.0.1:0", handle).(*net.TCPAddr)
}

// ServeUnix is ServeTCP on a unix socket at path.
func ServeUnix(t testing.TB, path string, handle func(net.Conn)) {
	serve(t, "unix", path, handle)
}

func serve(t testing.TB, network, addr string, handle func(net.Conn)) net.Addr {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return ln.Addr()
}

// Echo is a ServeTCP handler that sends back what it reads.
func Echo(c net.Conn) { io.Copy(c, c) }

// SyncBuffer is a bytes.Buffer goroutines may write to while a test reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
