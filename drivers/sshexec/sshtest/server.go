// Package sshtest is an in-process SSH server standing in for a guest in
// exec and copy tests: x/crypto/ssh on the loopback, running each exec
// request with this host's sh, so a test's "remote" paths are local ones.
package sshtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/crypto/ssh"
)

// Server is a running stand-in guest. It accepts only the key in KeyFile,
// and counts what clients open so tests can prove connections are reused.
type Server struct {
	Host, Port  string
	KeyFile     string       // the client's private key, unencrypted
	Connections atomic.Int32 // TCP connections accepted
	Sessions    atomic.Int32
	// ResetFirst connections are reset before the SSH banner, as a guest
	// whose sshd is restarting (behind QEMU's port forward) does.
	ResetFirst atomic.Int32
}

// Start serves until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	_, hostPriv, _ := ed25519.GenerateKey(rand.Reader)
	hostSigner, _ := ssh.NewSignerFromKey(hostPriv)
	clientPub, clientPriv, _ := ed25519.GenerateKey(rand.Reader)
	clientSSHPub, _ := ssh.NewPublicKey(clientPub)
	block, err := ssh.MarshalPrivateKey(clientPriv, "")
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "user")
	os.WriteFile(keyFile, pem.EncodeToMemory(block), 0o600)

	cfg := &ssh.ServerConfig{PublicKeyCallback: func(_ ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
		if string(k.Marshal()) == string(clientSSHPub.Marshal()) {
			return nil, nil
		}
		return nil, fmt.Errorf("unknown key")
	}}
	cfg.AddHostKey(hostSigner)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	g := &Server{Host: host, Port: port, KeyFile: keyFile}
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			g.Connections.Add(1)
			if g.ResetFirst.Add(-1) >= 0 {
				nc.(*net.TCPConn).SetLinger(0) // close with a reset
				nc.Close()
				continue
			}
			go g.serve(nc, cfg)
		}
	}()
	return g
}

func (g *Server) serve(nc net.Conn, cfg *ssh.ServerConfig) {
	_, chans, reqs, err := ssh.NewServerConn(nc, cfg)
	if err != nil {
		return
	}
	go ssh.DiscardRequests(reqs)
	for nch := range chans {
		switch nch.ChannelType() {
		case "direct-tcpip":
			go directTCPIP(nch)
			continue
		case "direct-streamlocal@openssh.com":
			go directStreamLocal(nch)
			continue
		}
		ch, requests, err := nch.Accept()
		if err != nil {
			continue
		}
		g.Sessions.Add(1)
		go session(ch, requests)
	}
}

func session(ch ssh.Channel, requests <-chan *ssh.Request) {
	defer ch.Close()
	var cmd *exec.Cmd
	var term *terminal // set by a pty-req
	var mu sync.Mutex
	done := make(chan struct{})
	for req := range requests {
		switch req.Type {
		case "pty-req":
			term = parsePtyReq(req.Payload)
			req.Reply(term != nil, nil)
		case "window-change":
			if term != nil {
				term.resize(req.Payload)
			}
		case "exec", "shell":
			var payload struct{ Command string }
			ssh.Unmarshal(req.Payload, &payload)
			if req.Type == "shell" {
				payload.Command = "exec sh"
			}
			req.Reply(true, nil)
			mu.Lock()
			cmd = exec.Command("sh", "-c", payload.Command)
			ownGroup(cmd)
			err := start(cmd, ch, term)
			mu.Unlock()
			go func() {
				status := 127
				if err == nil {
					cmd.Wait()
					status = cmd.ProcessState.ExitCode()
					term.drain()
				}
				reportExit(ch, cmd.ProcessState, status)
				close(done)
				ch.Close()
			}()
		case "signal":
			mu.Lock()
			if cmd != nil && cmd.Process != nil {
				killGroup(cmd)
			}
			mu.Unlock()
		default:
			if req.WantReply {
				req.Reply(false, nil)
			}
		}
	}
	select {
	case <-done:
	default:
	}
	io.Copy(io.Discard, ch)
}

// start runs the command on the channel's streams, or on a terminal when
// the client asked for one. As with sshd, the command's end does not wait
// for its stdin's.
func start(cmd *exec.Cmd, ch ssh.Channel, term *terminal) error {
	if term != nil {
		return term.start(cmd, ch)
	}
	cmd.Stdout, cmd.Stderr = ch, ch.Stderr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	go func() { io.Copy(stdin, ch); stdin.Close() }()
	return cmd.Start()
}

// reportExit tells the client how the command ended as sshd does: an
// exit-signal for a command a signal ended, else an exit-status.
func reportExit(ch ssh.Channel, ps *os.ProcessState, status int) {
	if name := signalName(ps); name != "" {
		ch.SendRequest("exit-signal", false, ssh.Marshal(struct {
			Signal     string
			CoreDumped bool
			Error      string
			Lang       string
		}{Signal: name}))
		return
	}
	b := make([]byte, 4)
	binary.BigEndian.PutUint32(b, uint32(max(status, 0)))
	ch.SendRequest("exit-status", false, b)
}
