package mcpserver

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

// guestHTTP stands for a web server in a sim guest: the sim's guest
// shares this host's network, so its port is a loopback port here.
func guestHTTP(t *testing.T, body string) int {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().(*net.TCPAddr).Port
}

func get(url string) (string, error) {
	c := http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	res, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return string(b), err
}

// An agent exposes a guest web server on a loopback port of this host
// and fetches it; the forward ends with unexpose_port, or with the
// sandbox.
func TestExposePort(t *testing.T) {
	f := newFixture(t, simSpec)
	id := f.ok("create_instance", map[string]any{"workspace_root": f.root})["instance_id"].(string)
	port := guestHTTP(t, "hello from the guest")
	e := f.ok("expose_port", map[string]any{"instance_id": id, "port": port})
	hostPort := int(e["host_port"].(float64))
	if e["host"] != "127.0.0.1" || hostPort == 0 || hostPort == port ||
		e["url"] != "http://127.0.0.1:"+strconv.Itoa(hostPort) {
		t.Fatalf("expose_port: %v", e)
	}
	if body, err := get(e["url"].(string)); err != nil || body != "hello from the guest" {
		t.Fatalf("GET through the forward: %q %v", body, err)
	}
	if again := f.ok("expose_port", map[string]any{"instance_id": id, "port": port}); again["host_port"] !=
		e["host_port"] {
		t.Errorf("exposing again moved the port: %v", again)
	}
	l := f.ok("list_exposed_ports", map[string]any{})
	if l["count"].(float64) != 1 || l["ports"].([]any)[0].(map[string]any)["connections"].(float64) != 1 {
		t.Errorf("list_exposed_ports: %v", l)
	}
	f.ok("unexpose_port", map[string]any{"instance_id": id, "port": port})
	if _, err := get(e["url"].(string)); err == nil {
		t.Error("the host port still answers after unexpose_port")
	}
	f.fails("unexpose_port", map[string]any{"instance_id": id, "port": port}, CodePortNotExposed)
	f.fails("expose_port", map[string]any{"instance_id": id, "port": 0}, "INVALID_ARGUMENTS")
	f.fails("expose_port", map[string]any{"instance_id": id, "port": port, "host_port": 70000}, "INVALID_ARGUMENTS")
	f.fails("expose_port", map[string]any{"instance_id": id, "port": port, "host_port": port}, "INVALID_ARGUMENTS")

	// A forward ends with its sandbox: no new connection, then its port
	// closes at the next sweep.
	e = f.ok("expose_port", map[string]any{"instance_id": id, "port": port, "host_port": freePort(t)})
	f.ok("destroy_instance", map[string]any{"instance_id": id})
	if body, err := get(e["url"].(string)); err == nil {
		t.Errorf("a destroyed sandbox's port answered %q", body)
	}
	f.clock.Advance(portSweepInterval)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if l := f.ok("list_exposed_ports", map[string]any{}); l["count"].(float64) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the destroyed sandbox's forward is still listed")
		}
	}
	f.fails("expose_port", map[string]any{"instance_id": id, "port": port}, "INSTANCE_TERMINAL")
}

// Close ends every forward the server opened.
func TestServerCloseEndsForwards(t *testing.T) {
	f := newFixture(t, simSpec)
	id := f.ok("create_instance", map[string]any{"workspace_root": f.root})["instance_id"].(string)
	e := f.ok("expose_port", map[string]any{"instance_id": id, "port": guestHTTP(t, "x")})
	f.srv.Close()
	if _, err := get(e["url"].(string)); err == nil {
		t.Error("a forward outlived its server")
	}
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
