package lima

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// sshConn is one open SSH client to a running instance, and the guest
// shell that runs commands without stdin on it.
type sshConn struct {
	client *ssh.Client
	shell  *shell
}

// sshTarget is what Lima's per-instance ssh.config says about reaching it.
type sshTarget struct {
	host, port, user string
	identities       []string
}

// parseSSHConfig reads the Host block Lima writes to the instance's
// ssh.config (Hostname, Port, User, IdentityFile; values may be quoted).
func parseSSHConfig(data string) (sshTarget, error) {
	var t sshTarget
	sc := bufio.NewScanner(strings.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		value = strings.Trim(strings.TrimSpace(value), `"`)
		switch strings.ToLower(key) {
		case "hostname":
			t.host = value
		case "port":
			t.port = value
		case "user":
			t.user = value
		case "identityfile":
			t.identities = append(t.identities, value)
		}
	}
	if t.host == "" || t.port == "" || t.user == "" || len(t.identities) == 0 {
		return t, fmt.Errorf("ssh.config lacks Hostname, Port, User or IdentityFile")
	}
	return t, nil
}

// conn returns the instance's open SSH client, dialling it on first use.
func (d *Driver) conn(ctx context.Context, instance string) (*ssh.Client, error) {
	d.mu.Lock()
	c, ok := d.conns[instance]
	d.mu.Unlock()
	if ok {
		return c.client, nil
	}
	client, err := d.dial(ctx, instance)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if existing, ok := d.conns[instance]; ok { // another goroutine won the race
		client.Close()
		return existing.client, nil
	}
	d.conns[instance] = &sshConn{client: client}
	return client, nil
}

func (d *Driver) dial(ctx context.Context, instance string) (*ssh.Client, error) {
	out, _, err := d.run(ctx, nil, "list", "--json", instance)
	if err != nil {
		return nil, err
	}
	listed, err := parseList(out)
	if err != nil || len(listed) != 1 || listed[0].SSHConfigFile == "" {
		return nil, fmt.Errorf("finding the ssh.config of %s: %v", instance, err)
	}
	if listed[0].Status != "Running" {
		return nil, fmt.Errorf("instance %s is %s, not running", instance, listed[0].Status)
	}
	data, err := os.ReadFile(listed[0].SSHConfigFile)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", listed[0].SSHConfigFile, err)
	}
	t, err := parseSSHConfig(string(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", listed[0].SSHConfigFile, err)
	}
	var signers []ssh.Signer
	for _, path := range t.identities {
		key, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		if s, err := ssh.ParsePrivateKey(key); err == nil {
			signers = append(signers, s)
		}
	}
	if len(signers) == 0 {
		return nil, fmt.Errorf("no usable private key among %v", t.identities)
	}
	cfg := &ssh.ClientConfig{
		User: t.user,
		Auth: []ssh.AuthMethod{ssh.PublicKeys(signers...)},
		// The guest listens on the host's loopback through Lima's port
		// forward and regenerates its host keys at every boot; Lima's own
		// ssh.config disables host key checking for the same reason.
		HostKeyCallback: ssh.InsecureIgnoreHostKey(),
		Timeout:         10 * time.Second,
	}
	addr := net.JoinHostPort(t.host, t.port)
	var dialer net.Dialer
	nc, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dialling %s: %w", addr, err)
	}
	conn, chans, reqs, err := ssh.NewClientConn(nc, addr, cfg)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("SSH handshake with %s: %w", addr, err)
	}
	client := ssh.NewClient(conn, chans, reqs)
	go keepAlive(client)
	return client, nil
}

// keepAlive pings the server so a dead connection is noticed (and closed)
// instead of hanging the next command.
func keepAlive(c *ssh.Client) {
	t := time.NewTicker(30 * time.Second)
	defer t.Stop()
	for range t.C {
		if _, _, err := c.SendRequest("keepalive@openssh.com", true, nil); err != nil {
			c.Close()
			return
		}
	}
}

// dropConn closes an instance's SSH client (it is stopping or going away).
func (d *Driver) dropConn(instance string) {
	d.mu.Lock()
	c, ok := d.conns[instance]
	delete(d.conns, instance)
	d.mu.Unlock()
	if ok {
		if c.shell != nil {
			c.shell.close()
		}
		c.client.Close()
	}
}

// Alive reports whether the instance's SSH connection is open and answers.
func (d *Driver) Alive(instance string) bool {
	d.mu.Lock()
	c, ok := d.conns[instance]
	d.mu.Unlock()
	if !ok {
		return false
	}
	_, _, err := c.client.SendRequest("keepalive@openssh.com", true, nil)
	return err == nil
}

// shellFor returns the instance's guest shell, starting it on first use.
func (d *Driver) shellFor(ctx context.Context, instance string) (*shell, error) {
	client, err := d.conn(ctx, instance)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	c, ok := d.conns[instance]
	if !ok || c.client != client {
		return nil, fmt.Errorf("connection to %s closed", instance)
	}
	if c.shell == nil {
		if c.shell, err = startShell(client); err != nil {
			return nil, err
		}
	}
	return c.shell, nil
}

// dropShell forgets a broken guest shell; the next command starts another.
func (d *Driver) dropShell(instance string, sh *shell) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if c, ok := d.conns[instance]; ok && c.shell == sh {
		c.shell = nil
	}
	sh.close()
}

// Close closes every SSH connection.
func (d *Driver) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for name, c := range d.conns {
		c.client.Close()
		delete(d.conns, name)
	}
	return nil
}

// session opens a session, redialling once if the cached connection died.
func (d *Driver) session(ctx context.Context, instance string) (*ssh.Session, error) {
	for attempt := 0; ; attempt++ {
		c, err := d.conn(ctx, instance)
		if err != nil {
			return nil, err
		}
		s, err := c.NewSession()
		if err == nil {
			return s, nil
		}
		d.dropConn(instance)
		if attempt > 0 {
			return nil, fmt.Errorf("opening an SSH session to %s: %w", instance, err)
		}
	}
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func exitCode(err error) (int, error) {
	var exit *ssh.ExitError
	var missing *ssh.ExitMissingError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exit):
		return exit.ExitStatus(), nil
	case errors.As(err, &missing):
		return -1, nil
	}
	return -1, err
}

func seconds(d time.Duration) string {
	return strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10)
}
