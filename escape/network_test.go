package escape

import (
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// Finding 3 of issue 29: a guest POSTed to the host's `sbf serve` (through
// QEMU's alias for the host's loopback, with Host: 127.0.0.1:PORT); sbf
// asked no token on loopback, so the guest drove it: created sandboxes,
// copied files, ran commands, with no agent involved. Here the guest is the
// sim's, whose commands run on this host (so it reaches the loopback as a
// Lima guest did through 192.168.5.2): its initialize is refused, and so is
// the tools/call it would have made, and no sandbox appears. /metrics
// answers neither a caller without the token nor a foreign Host (finding
// 11, DNS rebinding).
func TestGuestCannotDriveTheHostsMCPServer(t *testing.T) {
	// Not parallel: it picks a free port and releases it for sbf to listen on; the attacks that
	// run in parallel start after the others end.
	w := newWorld(t, "[vm]\ndriver = \"sim\"\n[sandboxes.api]\n")
	sim := []string{"SBF_ENABLE_SIM=1"}
	if r := w.sbf(sim, "-C", w.ws, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply: %s%s", r.stdout, r.stderr)
	}
	metrics := freePort(t)
	url := w.serve(sim, "--metrics", metrics)
	host := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp")
	// What the guest ran: an MCP session with the server, as any client
	// opens one, but without the token.
	post := func(session, body string) string {
		return fmt.Sprintf(`curl -s -o /dev/null -D hdr -w '%%{http_code} ' -H 'Host: %s' `+
			`-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' `+
			`-H "Mcp-Session-Id: %s" --data '%s' %s; `, host, session, body, url)
	}
	script := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",`+
		`"capabilities":{},"clientInfo":{"name":"guest","version":"1"}}}`) +
		`sid=$(sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: *//p' hdr | tr -d '\r'); ` +
		post("$sid", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"create_instance",`+
			`"arguments":{"workspace_root":"`+w.ws+`","auto_bootstrap":false}}}`)
	r := w.sbf(sim, "-C", w.ws, "exec", "api", "--", "sh", "-c", script)
	if got := strings.Fields(r.stdout); len(got) != 2 || got[0] != "401" || got[1] != "401" {
		t.Errorf("the guest's MCP calls were answered %q, want 401 twice (%s)", r.stdout, r.stderr)
	}
	if r := w.sbf(sim, "-C", w.ws, "status", "--json"); strings.Count(r.stdout, `"instance":`) != 1 {
		t.Errorf("the guest made a sandbox:\n%s", r.stdout)
	}
	for _, c := range []struct{ what, host, token string }{
		{"no token", metrics, ""},
		{"a wrong token", metrics, "guess"},
		{"a foreign Host (DNS rebinding)", "rebind.example", w.token},
	} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+metrics+"/metrics", nil)
		req.Host = c.host
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
			t.Errorf("/metrics with %s: %d", c.what, resp.StatusCode)
		}
	}
	if !w.exists(filepath.Join("state", "mcp")) {
		t.Error("the server's generated token is not in sbf's state folder")
	}
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
