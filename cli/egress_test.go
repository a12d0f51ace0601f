package cli

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/egress"
	"github.com/sandboxforge/sbf/internal/testutil"
)

// The host side of a network policy, as the Lima driver's QEMU wrapper runs
// it, with the real sbf binary: egress-qemu starts the VM's proxy, rewrites
// QEMU's user network and execs "QEMU" (a script that records its argv);
// the guestfwd command it gives QEMU (egress-relay) reaches the proxy, which
// lets an allowed name through and refuses another; when QEMU exits, the
// proxy goes and takes its socket with it.
func TestEgressQEMURunsTheProxyForAsLongAsQEMU(t *testing.T) {
	testutil.CoverSources(t) // it runs sbf without a helper that does
	dir := t.TempDir()
	upstream := testutil.ServeTCP(t, func(c net.Conn) { io.WriteString(c, "hello from the allowed host\n") })
	port := strconv.Itoa(upstream.Port)
	launch := filepath.Join(dir, "launch.json")
	if err := egress.WriteLaunchConfig(launch, egress.LaunchConfig{Sandbox: "api", Egress: "allowlist",
		Allow: []string{"allowed.test:" + port, "127.0.0.1:" + port}, Dir: filepath.Join(dir, "egress"),
		Hosts:        map[string][]string{"allowed.test": {"127.0.0.1"}, "denied.test": {"127.0.0.1"}},
		ProxyCommand: []string{sbfBinary, "egress-proxy"}, RelayCommand: []string{sbfBinary, "egress-relay"}}); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "egress"), 0o700)
	qemu := filepath.Join(dir, "qemu")
	write(t, qemu, "#!/bin/sh\nprintf '%s\\n' \"$@\" > '"+dir+"/argv'\nexec sleep 30\n")
	os.Chmod(qemu, 0o755)
	vm := exec.Command(sbfBinary, "egress-qemu", launch, qemu, "-m", "512", "-netdev",
		"user,id=net0,net=192.168.5.0/24,hostfwd=tcp:127.0.0.1:40022-:22")
	if out, err := vm.StdoutPipe(); err == nil {
		go io.Copy(io.Discard, out)
	}
	if err := vm.Start(); err != nil {
		t.Fatal(err)
	}
	defer vm.Process.Kill()
	netdev := waitForLine(t, filepath.Join(dir, "argv"), "user,")
	m := regexp.MustCompile(`guestfwd=tcp:192\.168\.5\.4:3128-cmd:(.*)$`).FindStringSubmatch(netdev)
	if m == nil || !strings.Contains(netdev, "restrict=on") {
		t.Fatalf("QEMU's netdev = %q, want restrict=on and a guestfwd to the relay", netdev)
	}
	relay := strings.Fields(strings.ReplaceAll(m[1], ",,", ","))
	if got := throughRelay(t, relay, "allowed.test:"+port); !strings.Contains(got, "hello from the allowed host") {
		t.Errorf("allowed name through the relay: %q", got)
	}
	if got := throughRelay(t, relay, "denied.test:"+port); !strings.HasPrefix(got, "HTTP/1.1 403") {
		t.Errorf("denied name through the relay: %q, want 403", got)
	}
	vm.Process.Kill()
	vm.Wait()
	sock := strings.TrimPrefix(relay[len(relay)-1], "unix:")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(sock); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the egress proxy outlived its QEMU")
		}
	}
	if entries, err := egress.ReadLog(filepath.Join(dir, "egress", egress.LogName), 10); err != nil ||
		len(entries) != 2 || entries[0].Decision != "allowed" || entries[1].Decision != "denied" {
		t.Errorf("decision log = %+v, %v", entries, err)
	}
}

// throughRelay runs the relay command as QEMU would for one guest
// connection and sends a CONNECT to target, returning what came back.
func throughRelay(t *testing.T, relay []string, target string) string {
	t.Helper()
	cmd := exec.Command(relay[0], relay[1:]...)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	fmt.Fprintf(in, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(out)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		in.Close()
		return "no answer: " + err.Error()
	}
	head := fmt.Sprintf("HTTP/1.1 %d\n", resp.StatusCode)
	if resp.StatusCode != http.StatusOK {
		in.Close()
		return head
	}
	rest, _ := br.ReadString('\n')
	in.Close()
	return head + rest
}

func waitForLine(t *testing.T, path, prefix string) string {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		data, _ := os.ReadFile(path)
		for _, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(line, prefix) {
				return line
			}
		}
	}
	t.Fatalf("no line starting %q in %s", prefix, path)
	return ""
}

// The sim enforces no policy: its sandboxes have no egress log, and
// sbf says why rather than showing an empty one.
func TestEgressLogOfADriverWithoutPolicies(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, ".sandboxforge.toml"), "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n")
	if r := sbf(t, nil, "-C", dir, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply: %s%s", r.stdout, r.stderr)
	}
	r := sbf(t, nil, "-C", dir, "egress", "log", "api", "--json")
	if r.code != 1 || !strings.Contains(r.stdout, `"POLICY_UNSUPPORTED"`) ||
		!strings.Contains(r.stdout, "keeps no egress log") {
		t.Errorf("egress log on the sim: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// doctor says what apply would: a policy the driver cannot enforce.
func TestDoctorReportsAnUnenforceablePolicy(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, ".sandboxforge.toml"), "[vm]\ndriver = \"sim\"\n[network]\negress = \"deny\"\n"+
		"[sandboxes.api]\n")
	r := sbf(t, nil, "-C", dir, "doctor", "--json")
	if r.code == 0 || !strings.Contains(r.stdout, `"network policy"`) ||
		!strings.Contains(r.stdout, "sim driver cannot enforce a network policy") ||
		!strings.Contains(r.stdout, "cannot enforce a sandbox's network policy") {
		t.Errorf("doctor: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// Whatever the egress mode, QEMU (here a bash script standing in for it,
// as slirp would connect for the guest) reaches no service on this host
// but the ports the operator named: egress-qemu runs it under the host
// guard, and the refusal is logged.
func TestEgressQEMUKeepsEvenAnOpenGuestOffTheHost(t *testing.T) {
	testutil.CoverSources(t) // it runs sbf without a helper that does
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("the stand-in QEMU is a bash script")
	}
	dir := t.TempDir()
	mcp := testutil.ServeTCP(t, func(c net.Conn) { io.WriteString(c, "an MCP server on loopback\n") })
	allowed := testutil.ServeTCP(t, func(c net.Conn) { io.WriteString(c, "the operator's port\n") })
	launch := filepath.Join(dir, "launch.json")
	if err := egress.WriteLaunchConfig(launch, egress.LaunchConfig{Sandbox: "api", Egress: "allow",
		Dir: filepath.Join(dir, "egress"), GuestHostPorts: []int{allowed.Port}}); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "egress"), 0o700)
	qemu := filepath.Join(dir, "qemu")
	probe := func(port int) string {
		return fmt.Sprintf("if exec 3<>/dev/tcp/127.0.0.1/%d; then echo \"%d open: $(head -1 <&3)\"; "+
			"else echo '%d refused'; fi; exec 3<&-\n", port, port, port)
	}
	write(t, qemu, "#!/bin/bash\n{\n"+probe(mcp.Port)+probe(allowed.Port)+"} > '"+dir+"/result' 2>/dev/null\n"+
		"echo done >> '"+dir+"/result'\n")
	os.Chmod(qemu, 0o755)
	vm := exec.Command(sbfBinary, "egress-qemu", launch, qemu, "-m", "512", "-netdev",
		"user,id=net0,net=192.168.5.0/24,hostfwd=tcp:127.0.0.1:40022-:22")
	if out, err := vm.CombinedOutput(); err != nil {
		t.Fatalf("egress-qemu: %v\n%s", err, out)
	}
	result, _ := os.ReadFile(filepath.Join(dir, "result"))
	want := fmt.Sprintf("%d refused\n%d open: the operator's port\ndone\n", mcp.Port, allowed.Port)
	if string(result) != want {
		t.Errorf("the guarded QEMU saw:\n%s\nwant:\n%s", result, want)
	}
	entries, err := egress.ReadLog(filepath.Join(dir, "egress", "guard.log"), 0)
	if err != nil || len(entries) != 1 || entries[0].Port != mcp.Port || entries[0].Decision != "denied" {
		t.Errorf("guard.log = %+v, %v", entries, err)
	}
}
