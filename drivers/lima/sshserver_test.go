package lima

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
	"syscall"
	"testing"

	"golang.org/x/crypto/ssh"
)

// guestServer is a stand-in guest for exec and copy tests: a real SSH
// server (x/crypto/ssh) that runs each exec request with the host's sh.
type guestServer struct {
	addr        string
	keyFile     string
	connections atomic.Int32 // TCP connections accepted
	sessions    atomic.Int32
}

func startGuest(t *testing.T) *guestServer {
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
	g := &guestServer{addr: ln.Addr().String(), keyFile: keyFile}
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			g.connections.Add(1)
			go g.serve(nc, cfg)
		}
	}()
	return g
}

func (g *guestServer) serve(nc net.Conn, cfg *ssh.ServerConfig) {
	_, chans, reqs, err := ssh.NewServerConn(nc, cfg)
	if err != nil {
		return
	}
	go ssh.DiscardRequests(reqs)
	for nch := range chans {
		ch, requests, err := nch.Accept()
		if err != nil {
			continue
		}
		g.sessions.Add(1)
		go session(ch, requests)
	}
}

func session(ch ssh.Channel, requests <-chan *ssh.Request) {
	defer ch.Close()
	var cmd *exec.Cmd
	var mu sync.Mutex
	done := make(chan struct{})
	for req := range requests {
		switch req.Type {
		case "exec":
			var payload struct{ Command string }
			ssh.Unmarshal(req.Payload, &payload)
			req.Reply(true, nil)
			mu.Lock()
			cmd = exec.Command("sh", "-c", payload.Command)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.Stdin, cmd.Stdout, cmd.Stderr = ch, ch, ch.Stderr()
			err := cmd.Start()
			mu.Unlock()
			go func() {
				status := 127
				if err == nil {
					err = cmd.Wait()
					status = cmd.ProcessState.ExitCode()
				}
				b := make([]byte, 4)
				binary.BigEndian.PutUint32(b, uint32(max(status, 0)))
				ch.SendRequest("exit-status", false, b)
				close(done)
				ch.Close()
			}()
		case "signal":
			mu.Lock()
			if cmd != nil && cmd.Process != nil {
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
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
