package lima

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/sshexec/sshtest"
)

// liveFixture is an instance as Lima leaves a running one: its ssh.config
// in its folder, its VM's pid file naming a live process (this test's),
// and a host agent answering on ha.sock with the SSH port it forwards.
// limactl, asked, would list it Running too.
func liveFixture(t *testing.T, agentPort string) (*fake, *Driver, string) {
	f := newFake(t)
	g := sshtest.Start(t)
	dir := f.instanceDir()
	os.WriteFile(filepath.Join(dir, "ssh.config"), []byte(fmt.Sprintf("Host lima-%s\n  IdentityFile \"%s\"\n"+
		"  User tester\n  Hostname %s\n  Port %s\n", instance, g.KeyFile, g.Host, g.Port)), 0o644)
	os.WriteFile(filepath.Join(dir, "qemu.pid"), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
	if agentPort == "" {
		agentPort = g.Port
	}
	serveHostAgent(t, filepath.Join(dir, "ha.sock"), agentPort)
	f.reply("list", fmt.Sprintf(`{"name":%q,"status":"Running","sshConfigFile":%q,"sshLocalPort":%s}`+"\n",
		instance, filepath.Join(dir, "ssh.config"), g.Port), "", 0)
	d := f.driver()
	t.Cleanup(func() { d.Close() })
	return f, d, dir
}

// serveHostAgent answers GET /v1/info on sock as Lima's host agent does.
func serveHostAgent(t *testing.T, sock, port string) {
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/info" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, `{"sshLocalPort":%s}`, port)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
}

func limactlListed(f *fake) bool {
	return slices.ContainsFunc(f.argv(), func(a string) bool { return strings.Contains(a, "list") })
}

// A running instance whose host agent vouches for its ssh.config is
// dialled without starting limactl: a warm create's first command waited
// ~140 ms for `limactl list` on an emulating host.
func TestARunningInstanceIsReachedWithoutLimactl(t *testing.T) {
	f, d, _ := liveFixture(t, "")
	res, err := d.Exec(t.Context(), instance, drivers.ExecRequest{Command: "echo hi"})
	if err != nil || res.Stdout != "hi\n" || res.Via != "ssh-shell" {
		t.Fatalf("exec = %+v, %v", res, err)
	}
	if limactlListed(f) {
		t.Errorf("limactl was asked for the instance's ssh.config: %q", f.argv())
	}
}

// Whatever leaves a doubt (a stale ssh.config, a VM process gone, no host
// agent, a boot not over) is left to limactl, whose answer stands.
func TestAnInstanceInDoubtIsLeftToLimactl(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		agentPort string
		edit      func(dir string)
		reason    string
	}{
		"another port": {agentPort: "1", reason: "its host agent 1"},
		"VM gone": {edit: func(dir string) {
			os.WriteFile(filepath.Join(dir, "qemu.pid"), []byte(strconv.Itoa(dead.Process.Pid)), 0o644)
		}, reason: "no VM process"},
		"no host agent": {edit: func(dir string) { os.Remove(filepath.Join(dir, "ha.sock")) },
			reason: "asking its host agent"},
		"booting": {edit: func(dir string) {
			os.WriteFile(filepath.Join(dir, eventsFile), []byte(`{"status":{"running":false}}`+"\n"), 0o644)
		}, reason: "boot is not over"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			f, d, dir := liveFixture(t, c.agentPort)
			if c.edit != nil {
				c.edit(dir)
			}
			if _, err := d.liveTarget(t.Context(), instance); err == nil || !strings.Contains(err.Error(), c.reason) {
				t.Errorf("liveTarget: %v, want a refusal saying %q", err, c.reason)
			}
			_, err := d.sshTarget(t.Context(), instance)
			if !limactlListed(f) {
				t.Errorf("limactl was not asked (sshTarget: %v)", err)
			}
		})
	}
}
