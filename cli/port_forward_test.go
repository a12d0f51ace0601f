//go:build unix

package cli

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"
)

func TestParsePortPair(t *testing.T) {
	for in, want := range map[string]portPair{"8080": {8080, 8080}, "9000:80": {9000, 80}, ":80": {0, 80},
		"0:80": {0, 80}} {
		if got, err := parsePortPair(in); err != nil || got != want {
			t.Errorf("%q = %v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "x", "80:", "0", "70000", "1:2:3", "-1:80", "a:80"} {
		if _, err := parsePortPair(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// sbf port-forward carries connections to a sandbox's port until Ctrl-C,
// and ends on its own when the sandbox does.
func TestPortForwardUntilInterruptedOrDestroyed(t *testing.T) {
	w := applied(t)
	// The sim's guest shares this host's network: its port is a loopback
	// port here.
	guest := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		io.WriteString(rw, "from the guest")
	}))
	defer guest.Close()
	port := strconv.Itoa(guest.Listener.Addr().(*net.TCPAddr).Port)

	c, addr := startPortForward(t, w, "api", ":"+port)
	if body := fetch(t, "http://"+addr); body != "from the guest" {
		t.Errorf("GET through sbf port-forward = %q", body)
	}
	c.Process.Signal(syscall.SIGINT)
	if err := c.Wait(); err != nil {
		t.Errorf("after Ctrl-C: %v", err)
	}

	c, addr = startPortForward(t, w, "api", ":"+port)
	w.must("destroy", "api", "--auto-approve")
	if conn, err := net.Dial("tcp", addr); err == nil {
		io.ReadAll(conn) // the forward closes it: the sandbox is gone
		conn.Close()
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		if code := c.ProcessState.ExitCode(); code != 1 {
			t.Errorf("after destroy: exit %d (%v)", code, err)
		}
	case <-time.After(20 * time.Second):
		c.Process.Kill()
		t.Fatal("sbf port-forward still runs after its sandbox was destroyed")
	}
}

// startPortForward runs sbf port-forward and waits for the address it
// prints.
func startPortForward(t *testing.T, w *simWorkspace, args ...string) (*exec.Cmd, string) {
	t.Helper()
	c := w.cmd(nil, append([]string{"port-forward"}, args...)...)
	stdout, _ := c.StdoutPipe()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill() })
	addrs := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := regexp.MustCompile(`^Forwarding from (127\.0\.0\.1:\d+) -> \d+$`).FindStringSubmatch(
				sc.Text()); m != nil {
				addrs <- m[1]
			}
		}
		close(addrs)
	}()
	select {
	case addr, ok := <-addrs:
		if !ok {
			t.Fatal("sbf port-forward ended before forwarding")
		}
		return c, addr
	case <-time.After(20 * time.Second):
		t.Fatal("sbf port-forward printed no address")
	}
	return nil, ""
}

func fetch(t *testing.T, url string) string {
	t.Helper()
	res, err := (&http.Client{Timeout: 10 * time.Second}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}
