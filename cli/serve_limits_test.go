package cli

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/internal/testutil"
)

// serveProcess runs `sbf serve` on a free port and returns it with its
// MCP endpoint.
func serveProcess(t *testing.T, w *simWorkspace, env ...string) (*exec.Cmd, endpoint) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("reads resident memory from /proc")
	}
	c := w.cmd(env, "serve", "127.0.0.1:0")
	stderr, _ := c.StderrPipe()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Process.Signal(syscall.SIGTERM)
		c.Wait()
	})
	served := testutil.Serving(t, stderr, 30*time.Second)
	return c, endpoint{url: served.URL, token: served.Token(t)}
}

// endpoint is where a test posts MCP requests, and the token they carry.
type endpoint struct{ url, token string }

// rssMiB is a process's resident memory.
func rssMiB(t *testing.T, pid int) float64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindSubmatch(data)
	if m == nil {
		t.Fatalf("no VmRSS in /proc/%d/status", pid)
	}
	kb, _ := strconv.Atoi(string(m[1]))
	return float64(kb) / 1024
}

const initRequest = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",` +
	`"capabilities":{},"clientInfo":{"name":"rss","version":"1"}}}`

func mcpPost(c *http.Client, at endpoint, body io.Reader, length int64, session string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, at.url, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+at.token)
	req.ContentLength = length
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	return c.Do(req)
}

// settle reads the resident memory once the process stops shrinking.
func settle(t *testing.T, pid int) float64 {
	last := rssMiB(t, pid)
	for range 10 {
		time.Sleep(300 * time.Millisecond)
		now := rssMiB(t, pid)
		if now >= last-0.5 {
			return now
		}
		last = now
	}
	return last
}

// A 100 MB tools/call body, declared or streamed, is refused with 413
// without the server reading it: resident memory stays near idle (the
// adversarial pass saw 18 MB → 2.9 GB).
func TestServeMemoryAfter100MBBody(t *testing.T) {
	t.Parallel() // subprocesses and waits: it overlaps with the others
	w := newSimWorkspace(t, "[vm]\ndriver = \"sim\"\n")
	proc, url := serveProcess(t, w)
	client := &http.Client{Timeout: 2 * time.Minute}
	resp, err := mcpPost(client, url, strings.NewReader(initRequest), int64(len(initRequest)), "")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	session := resp.Header.Get("Mcp-Session-Id")
	idle := settle(t, proc.Process.Pid)
	head := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"validate_workspace_config",` +
		`"arguments":{"workspace_root":"`
	tail := `"}}}`
	for _, declared := range []bool{true, false} {
		body := io.MultiReader(strings.NewReader(head), io.LimitReader(testutil.Endless('A'), 100<<20),
			strings.NewReader(tail))
		length := int64(-1)
		if declared {
			length = int64(len(head)+len(tail)) + 100<<20
		}
		resp, err := mcpPost(client, url, body, length, session)
		if err != nil {
			// The server may close the connection before the client has
			// sent the whole body; the status then never arrives.
			t.Logf("declared %v: %v", declared, err)
			continue
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge ||
			!bytes.Contains(out, []byte("REQUEST_TOO_LARGE")) || len(out) > 4096 {
			t.Errorf("declared %v: %d, %d bytes: %.300s", declared, resp.StatusCode, len(out), out)
		}
	}
	after := settle(t, proc.Process.Pid)
	t.Logf("sbf serve resident memory: idle %.1f MiB, after two 100 MB bodies %.1f MiB", idle, after)
	if after > idle+64 {
		t.Errorf("resident memory grew from %.1f MiB to %.1f MiB", idle, after)
	}
}

// 20,000 initialize calls leave at most the session cap behind, and idle
// sessions are reclaimed (the adversarial pass saw 22,000 → 330 MB, kept).
func TestServeMemoryAfter20000Sessions(t *testing.T) {
	t.Parallel() // subprocesses and waits: it overlaps with the others
	w := newSimWorkspace(t, "[vm]\ndriver = \"sim\"\n")
	proc, url := serveProcess(t, w, "MCP_HTTP_SESSION_IDLE_SECONDS=4")
	pid := proc.Process.Pid
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	open := func(n int) (first string) {
		var wg sync.WaitGroup
		var once sync.Once
		errs := make(chan error, 4)
		for worker := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := worker; i < n; i += 4 {
					resp, err := mcpPost(client, url, strings.NewReader(initRequest), int64(len(initRequest)), "")
					if err != nil {
						errs <- err
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					once.Do(func() { first = resp.Header.Get("Mcp-Session-Id") })
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		return first
	}
	open(200) // warm: the first calls build caches that stay
	idle := settle(t, pid)
	first := open(20_000)
	peak := rssMiB(t, pid)
	time.Sleep(6 * time.Second) // past the idle time and a sweep
	resp, err := mcpPost(client, url, strings.NewReader(`{"jsonrpc":"2.0","id":3,"method":"ping"}`), -1, first)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	later := settle(t, pid)
	t.Logf("sbf serve resident memory: idle %.1f MiB, after 20,000 sessions %.1f MiB, %s idle later %.1f MiB",
		idle, peak, "6 s", later)
	if peak > idle+80 {
		t.Errorf("20,000 sessions took resident memory from %.1f MiB to %.1f MiB", idle, peak)
	}
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("an idle session still answers (%d)", resp.StatusCode)
	}
	if later > idle+16 {
		t.Errorf("resident memory did not come back near idle: %.1f MiB (idle %.1f MiB)", later, idle)
	}
}

// While `sbf serve` converges, the lock note names `sbf serve` (it said
// "sbf mcp"), and a concurrent apply says who it waits for.
func TestServeNamesItselfInTheLockNote(t *testing.T) {
	t.Parallel() // subprocesses and waits: it overlaps with the others
	w := newSimWorkspace(t, "[vm]\ndriver = \"sim\"\n")
	_, url := serveProcess(t, w, "SBF_SIM_LATENCY=create=8s")
	client := &http.Client{Timeout: time.Minute}
	resp, err := mcpPost(client, url, strings.NewReader(initRequest), int64(len(initRequest)), "")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	session := resp.Header.Get("Mcp-Session-Id")
	call := fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"create_instance",`+
		`"arguments":{"workspace_root":%q,"auto_bootstrap":false}}}`, w.root)
	done := make(chan error, 1)
	go func() {
		resp, err := mcpPost(client, url, strings.NewReader(call), int64(len(call)), session)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		done <- err
	}()
	// The sandbox's own lock is held while its VM is made.
	var note []byte
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && len(note) == 0; {
		locks, _ := filepath.Glob(w.root + "/.sandboxforge/locks/*.lock")
		for _, l := range locks { // the holder's note is in its lock file while it holds it
			if data, _ := os.ReadFile(l); len(data) > 0 {
				note = data
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !bytes.Contains(note, []byte(`"command":"sbf serve"`)) {
		t.Errorf("lock note while serve converges = %s", note)
	}
	if r := w.run(nil, "apply", "--auto-approve"); r.code == 0 || !strings.Contains(r.stderr, `"sbf serve"`) {
		t.Errorf("apply during serve's create: exit %d, %s", r.code, r.stderr)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
