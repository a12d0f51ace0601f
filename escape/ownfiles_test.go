package escape

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/clock"
)

// Issue 39, point 5: sbf opened its own files through links a committed
// repository or a writable mount put in .sandboxforge/: it appended its
// journal and history to their targets, truncated a lock's target to
// write its note there, made its state in the folder .sandboxforge led to,
// and read overrides and history from outside. Now each is refused with a
// coded error naming the link, and the canary outside stays as it was.
func TestOwnFilesThroughLinksAreRefused(t *testing.T) {
	t.Parallel()
	sim := []string{"SBF_ENABLE_SIM=1"}
	for _, tc := range []struct {
		name  string
		plant func(w *world) // the links
		check func(t *testing.T, w *world)
	}{
		{"folder", func(w *world) { w.link(w.canary+"/notes", "ws/.sandboxforge") }, upRefused},
		{"journal", func(w *world) {
			w.write("canary/journal", `{"journal":1,"lineage":"","serial":0}`+"\n") // continues no state.json
			w.link(w.canary+"/journal", "ws/.sandboxforge/state.journal")
		}, upRefused},
		{"state lock", func(w *world) { w.link(w.canary+"/secret", "ws/.sandboxforge/state.lock") }, upRefused},
		{"sandbox locks", func(w *world) {
			w.write("canary/notes/a.lock", "keep\n")
			w.link(w.canary+"/notes", "ws/.sandboxforge/locks")
		}, upRefused},
		{"history", func(w *world) {
			w.write("canary/history", `{"door":"cli","tool":"exec","sandbox":"a","command":"from outside"}`+"\n")
			w.link(w.canary+"/history", "ws/.sandboxforge/history.jsonl")
		}, func(t *testing.T, w *world) {
			if r := w.sbf(sim, "-C", w.ws, "up", "--new", "a", "--ttl", "10m", "--auto-approve"); r.code != 0 {
				t.Fatalf("up: %s", r.stderr)
			}
			w.sbf(sim, "-C", w.ws, "exec", "a", "--", "true")
			r := w.sbf(sim, "-C", w.ws, "history", "--json")
			if contains(r.stdout, "from outside") || errorCode(r.stdout) != "STATE_FILE_LINK" ||
				!contains(r.stdout, "history.jsonl is a link") {
				t.Errorf("history read through the link: %d\n%s%s", r.code, r.stdout, r.stderr)
			}
		}},
		{"overrides", func(w *world) {
			w.write("canary/overrides.toml", "[sandboxes.stolen]\n")
			w.link(w.canary+"/overrides.toml", "ws/.sandboxforge/overrides.toml")
		}, func(t *testing.T, w *world) {
			r := w.sbf(sim, "-C", w.ws, "plan", "--json")
			if contains(r.stdout, "stolen") || errorCode(r.stdout) != "WORKSPACE_CONFIG_INVALID" ||
				!contains(r.stdout, "overrides.toml: is a link") {
				t.Errorf("plan read the overrides through the link: %d\n%s%s", r.code, r.stdout, r.stderr)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, "[vm]\ndriver = \"sim\"\n")
			tc.plant(w)
			w.before = snapshot(t, w.canary) // the attack's files are the canary now
			tc.check(t, w)
			// the canary (newWorld's cleanup) is unchanged: nothing was written or made through a link
		})
	}
}

// upRefused: `sbf up` creates nothing and says why, naming the link.
func upRefused(t *testing.T, w *world) {
	r := w.sbf([]string{"SBF_ENABLE_SIM=1"}, "-C", w.ws, "up", "--new", "a", "--ttl", "10m", "--json", "--auto-approve")
	if r.code == 0 || errorCode(r.stdout) != "STATE_FILE_LINK" || !contains(r.stdout, " is a link") {
		t.Errorf("up through a link: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// Issue 39, point 5: state.journal -> /dev/zero made `sbf status` read
// until it ran out of memory, and a server whose loop watched that
// workspace died for every workspace. Now the read is refused at once, and
// the loop goes on with the others: the other workspace's lease, ended,
// is expired by the same process. (sbf runs under a 2 GiB address-space
// cap here, so the old behaviour fails the test instead of the machine.)
func TestAJournalOnDevZeroFailsOnlyItsWorkspace(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "[vm]\ndriver = \"sim\"\n")
	sim := []string{"SBF_ENABLE_SIM=1"}
	if r := w.sbf(sim, "-C", w.other, "up", "--new", "b", "--ttl", "10m", "--auto-approve"); r.code != 0 {
		t.Fatalf("up in the other workspace: %s", r.stderr)
	}
	w.link("/dev/zero", "ws/.sandboxforge/state.journal")
	r := w.capped(sim, "-C", w.ws, "status", "--json")
	if errorCode(r.stdout) != "STATE_FILE_LINK" || !contains(r.stdout, "state.journal is a link") {
		t.Errorf("status: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	later := append(sim, "SBF_NOW="+time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	c := exec.Command("sh", "-c", capScript, sbfBinary, "serve", "--loop-only", "--workspace", w.ws,
		"--workspace", w.other)
	c.Env = append(append([]string{}, w.env...), later...)
	stderr, _ := c.StderrPipe()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		c.Process.Signal(syscall.SIGTERM)
		c.Wait()
	}()
	refused, expired := false, false
	lines, deadline := linesOf(stderr), (clock.Real{}).After(90*time.Second)
	for !refused || !expired {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("the loop ended (refused %v, expired %v)", refused, expired)
			}
			refused = refused || contains(line, "reconcile "+w.ws+": ") && contains(line, "state.journal is a link")
			expired = expired || contains(line, "reconcile "+w.other+": expire b")
		case <-deadline:
			t.Fatalf("within 90 s: refused %v, expired %v", refused, expired)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if err := c.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the loop died after the pass: %v", err)
	}
}

// Issue 39, points 6 and 7: the token sbf generated was kept per address,
// so a token handed out for one server let its holder into any later
// server on that address, whatever workspaces it served. Now a generated
// token belongs to one server: its address and served roots.
func TestAGeneratedTokenBelongsToOneServer(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "[vm]\ndriver = \"sim\"\n")
	first := w.serve(nil)
	firstToken := w.token
	second := w.serve(nil, "--workspace-root", w.other)
	if w.token == firstToken {
		t.Fatal("a server of other workspaces on the same address got the first server's token")
	}
	if got := post(t, second, firstToken); got != http.StatusUnauthorized {
		t.Errorf("the first server's token at the second: %d", got)
	}
	if got := post(t, second, w.token); got == http.StatusUnauthorized {
		t.Errorf("the second server's own token: %d", got)
	}
	if got := post(t, first, firstToken); got == http.StatusUnauthorized {
		t.Errorf("the first server's own token: %d", got)
	}
}

// Issue 39, point 6: --token-file took a world-readable file and a 1-byte
// token. Now the server refuses to start on either, saying the rule.
func TestTokenFilesAreSecretAndLong(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "[vm]\ndriver = \"sim\"\n")
	strong := "0123456789abcdef0123456789abcdef"
	for name, tc := range map[string]struct {
		token string
		mode  os.FileMode
		want  string
	}{
		"world-readable": {strong, 0o644, "can be used by other users"},
		"group-readable": {strong, 0o640, "can be used by other users"},
		"one byte":       {"x", 0o600, "carries at most 6 bits; it must carry 128"},
		"31 hex digits":  {strong[:31], 0o600, "carries at most 124 bits; it must carry 128"},
	} {
		p := w.tokenFile(tc.token)
		if err := os.Chmod(p, tc.mode); err != nil {
			t.Fatal(err)
		}
		r := w.run(30*time.Second, sbfBinary, nil, "-C", w.ws, "serve", "127.0.0.1:0", "--token-file", p)
		if r.code == 0 || !contains(r.stderr, tc.want) || contains(r.stderr, "serving MCP") {
			t.Errorf("%s: %d %s", name, r.code, r.stderr)
		}
	}
	w.tokenFile(strong) // accepted: the owner's, 128 bits
	w.serve(nil, "--token-file", filepath.Join(w.base, "token"))
	if w.token != strong {
		t.Errorf("served with %q", w.token)
	}
}

// capScript runs "$0" "$@" under a 2 GiB address-space cap.
const capScript = `ulimit -v 2097152 && exec "$0" "$@"`

// capped is w.sbf under the cap.
func (w *world) capped(extra []string, args ...string) result {
	w.t.Helper()
	return w.run(2*time.Minute, "sh", extra, append([]string{"-c", capScript, sbfBinary}, args...)...)
}

func (w *world) link(target, rel string) {
	w.t.Helper()
	p := filepath.Join(w.base, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		w.t.Fatal(err)
	}
}

// errorCode is the code of the "error" of a --json document ("" when none).
func errorCode(out string) string {
	var doc struct {
		Error *struct {
			Code string `json:"error_code"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(out), &doc) != nil || doc.Error == nil {
		return ""
	}
	return doc.Error.Code
}

func linesOf(r io.Reader) <-chan string {
	out := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			out <- sc.Text()
		}
		close(out)
	}()
	return out
}

// post sends an MCP initialize with token and returns the status.
func post(t *testing.T, url, token string) int {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",` +
		`"capabilities":{},"clientInfo":{"name":"escape","version":"1"}}}`
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
