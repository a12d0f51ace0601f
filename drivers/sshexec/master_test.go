//go:build unix

package sshexec

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sshexec/sshtest"
	"github.com/sandboxforge/sbf/internal/testutil"
)

// openSSHMaster starts a real OpenSSH client as a ControlMaster connected
// to the stand-in guest, as Lima keeps one per instance, and returns its
// control socket and process.
func openSSHMaster(t *testing.T, g *sshtest.Server) (string, *exec.Cmd) {
	ssh, err := exec.LookPath("ssh")
	if err != nil {
		t.Skip("no OpenSSH client here:", err)
	}
	sock := filepath.Join(t.TempDir(), "ssh.sock")
	cmd := exec.Command(ssh, "-F", "/dev/null", "-N", "-p", g.Port, "-i", g.KeyFile, "-o", "IdentitiesOnly=yes",
		"-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
		"-o", "ControlMaster=yes", "-o", "ControlPath="+sock, "-o", "ControlPersist=no", "tester@"+g.Host)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(20 * time.Second); !masterAlive(sock); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the OpenSSH master did not answer on %s: %s", sock, stderr.String())
		}
	}
	return sock, cmd
}

// A process without a connection of its own runs its commands on
// sessions of the master's connection: no handshake of its own, output,
// exit status and a deadline's kill as on its own connection; a master
// that goes away leaves it to connect itself.
func TestGuestShellsStartThroughAnOpenSSHMaster(t *testing.T) {
	g := sshtest.Start(t)
	sock, master := openSSHMaster(t, g)
	p := masterPool(t, g, sock)
	ctx := context.Background()
	for range 3 {
		res, err := p.Exec(ctx, instance, drivers.ExecRequest{Command: "echo out; echo err >&2; exit 7"})
		if err != nil || res.ExitCode != 7 || res.Stdout != "out\n" || res.Stderr != "err\n" || res.Via != "ssh-shell" {
			t.Fatalf("exec through the master = %+v, %v", res, err)
		}
	}
	if p.Dials() != 0 || g.Connections.Load() != 1 || g.Sessions.Load() != 1 {
		t.Errorf("%d dials, %d connections, %d sessions; want the master's connection and one shell on it",
			p.Dials(), g.Connections.Load(), g.Sessions.Load())
	}
	if !p.Alive(instance) {
		t.Error("Alive: the master answers, yet the instance reads as gone")
	}
	// A deadline kills the command through a session of the master too.
	res, err := p.Exec(ctx, instance, drivers.ExecRequest{Command: "sleep 31.25", Timeout: 300 * time.Millisecond})
	if err != nil || !res.TimedOut {
		t.Fatalf("a command past its deadline: %+v, %v", res, err)
	}
	for deadline := time.Now().Add(5 * time.Second); sleeping("31.25"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the command outlived its deadline: the kill did not reach it")
		}
	}
	if p.Dials() != 0 {
		t.Errorf("%d dials to deliver a kill; want none, the master's connection serves it", p.Dials())
	}
	// A master that goes away (or refuses a session: sshd allows ten per
	// connection) leaves the process to connect itself, once.
	master.Process.Kill()
	master.Wait()
	for range 3 {
		res, err = p.Exec(ctx, instance, drivers.ExecRequest{Command: "echo again"})
		if err != nil || res.Stdout != "again\n" || p.Dials() != 1 {
			t.Fatalf("after the master went: %+v, %v, %d dials; want the command on a connection of its own",
				res, err, p.Dials())
		}
	}
	if res.Via != "ssh-shell" {
		t.Errorf("after the master went, commands ran %q; want a guest shell on the process's own connection", res.Via)
	}
}

// masterPool is a pool whose one instance is g, with a master's control
// socket at controlPath.
func masterPool(t *testing.T, g *sshtest.Server, controlPath string) *Pool {
	p := New(Options{Target: func(context.Context, string) (Target, error) {
		return Target{Host: g.Host, Port: g.Port, User: "tester", IdentityFiles: []string{g.KeyFile},
			ControlPath: controlPath}, nil
	}})
	t.Cleanup(func() { p.Close() })
	return p
}

// sleeping reports whether a `sleep` with that argument still runs here.
func sleeping(arg string) bool {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		if b, err := os.ReadFile(f); err == nil && string(b) == "sleep\x00"+arg+"\x00" {
			return true
		}
	}
	return false
}

// Only a socket this user owns, not a link to one, is taken for a master.
func TestAMasterIsOnlyASocketOfThisUser(t *testing.T) {
	g := sshtest.Start(t)
	sock, _ := openSSHMaster(t, g)
	link := filepath.Join(t.TempDir(), "link.sock")
	if err := os.Symlink(sock, link); err != nil {
		t.Fatal(err)
	}
	if masterAlive(link) {
		t.Error("a link to a master's socket was asked")
	}
	p := masterPool(t, g, link)
	if res, err := p.Exec(context.Background(), instance, drivers.ExecRequest{Command: "echo own"}); err != nil ||
		res.Stdout != "own\n" || p.Dials() != 1 {
		t.Errorf("with a link for a master: %+v, %v, %d dials; want a connection of its own", res, err, p.Dials())
	}
	if os.Getuid() != 0 {
		return
	}
	if err := os.Lchown(sock, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if masterAlive(sock) {
		t.Error("another user's socket was asked")
	}
}

// A process takes at most two of the master's sessions (sshd allows ten
// per connection, and limactl and other processes share them): a third
// command at once runs on a connection of its own.
func TestAProcessTakesAtMostTwoOfTheMastersSessions(t *testing.T) {
	g := sshtest.Start(t)
	sock, _ := openSSHMaster(t, g)
	p := masterPool(t, g, sock)
	var wg sync.WaitGroup
	for i := range maxMasterShells + 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			want := fmt.Sprintf("n%d\n", i)
			res, err := p.Exec(context.Background(), instance, drivers.ExecRequest{Command: "sleep 0.5; echo n" +
				strconv.Itoa(i)})
			if err != nil || res.Stdout != want || res.Via != "ssh-shell" {
				t.Errorf("command %d: %+v, %v", i, res, err)
			}
		}()
	}
	wg.Wait()
	if p.Dials() != 1 || g.Connections.Load() != 2 || g.Sessions.Load() != maxMasterShells+1 {
		t.Errorf("%d dials, %d connections, %d sessions; want %d shells on the master's connection and one on "+
			"a connection of the process's own", p.Dials(), g.Connections.Load(), g.Sessions.Load(), maxMasterShells)
	}
}

// A guest's unix socket is reached through the master too (`ssh -W PATH`
// on its control socket): no connection of the process's own, the bytes
// both ways; a master that went leaves the process to connect itself.
func TestAGuestSocketThroughTheMaster(t *testing.T) {
	g := sshtest.Start(t)
	sock, master := openSSHMaster(t, g)
	p := masterPool(t, g, sock)
	guestSock := filepath.Join(t.TempDir(), "echo.sock")
	testutil.ServeUnix(t, guestSock, testutil.Echo)
	ctx := context.Background()
	echo := func(want string) {
		t.Helper()
		c, err := p.DialGuestSocket(ctx, instance, guestSock)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write([]byte(want))
		buf := make([]byte, len(want))
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != want {
			t.Fatalf("echo = %q, %v", buf, err)
		}
	}
	echo("through the master")
	echo("and again")
	if p.Dials() != 0 || g.Connections.Load() != 1 {
		t.Errorf("%d dials, %d connections; want the master's connection alone", p.Dials(), g.Connections.Load())
	}
	if c, err := p.DialGuestSocket(ctx, instance, guestSock+".none"); err == nil {
		if n, _ := c.Read(make([]byte, 1)); n != 0 {
			t.Error("a socket where nothing listens answered")
		}
		c.Close()
	}
	// The master keeps one forward per socket, cancelled when the pool closes.
	p.mu.Lock()
	local := p.conns[instance].forwards[guestSock].local
	p.mu.Unlock()
	master.Process.Kill()
	master.Wait()
	echo("on a connection of its own")
	if p.Dials() != 1 {
		t.Errorf("after the master went: %d dials; want one", p.Dials())
	}
	p.Close()
	if _, err := os.Stat(filepath.Dir(local)); !os.IsNotExist(err) {
		t.Errorf("the forward's folder is still there after the pool closed: %v", err)
	}
}

// The master takes the forward's close as OpenSSH's own client sends it:
// closed once, then unknown.
func TestAMasterForwardIsCancelled(t *testing.T) {
	g := sshtest.Start(t)
	sock, _ := openSSHMaster(t, g)
	ctx := context.Background()
	f, err := openMasterForward(ctx, sock, "/nonexistent/guest.sock")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.cancel(); err != nil {
		t.Fatalf("closing the forward: %v", err)
	}
	if err := f.cancel(); err == nil {
		t.Error("a forward closed twice: the master took the second close, so the first closed nothing")
	}
	if _, err := os.Stat(filepath.Dir(f.local)); !os.IsNotExist(err) {
		t.Errorf("the forward's folder is still there: %v", err)
	}
}
