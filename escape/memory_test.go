package escape

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandboxforge/sbf/internal/testutil"
)

// Issue 39, point 4: the output ceiling bounded the bytes kept, not the
// memory. A guest printing 8 MiB of control bytes per stream made
// sbf-server hold 433 MB for one run_command (JSON escaping into the text
// and the structured copy before the cut), and 10 such calls at once over
// HTTP reached 3.5 GB; nothing bounded calls in flight. Now an answer is
// sized by what it takes in its message (both copies, escaped), rendered
// once, and the server works on SBF_MAX_TOOL_CALLS calls at once, refusing
// past its queue with SERVER_BUSY. The peak figures are
// BenchmarkRunCommandPeakMemory's (docs/performance.md); the bounds below
// are twice them, so the test proves the attack fails, not a figure.
func TestAGuestsOutputCostsTheServerOnlyItsAnswer(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "[vm]\ndriver = \"sim\"\n")
	srv := w.startServer(t, "SBF_ENABLE_SIM=1")
	c := srv.client(t)
	id := okCall(t, c, "create_instance", map[string]any{"workspace_root": w.ws})["instance_id"]
	flood := "head -c 8388608 /dev/zero | tr '\\000' '\\001'; head -c 8388608 /dev/zero | tr '\\000' '\\033' >&2"
	args := map[string]any{"instance_id": id, "command": flood, "max_output_bytes": 8 << 20}
	res := call(t, c, "run_command", args)
	out := structured(t, res)
	text := res.Content[0].(mcp.TextContent).Text
	escaped, _ := json.Marshal(text)
	budget, _ := out["response_budget_bytes"].(float64)
	if res.IsError || out["stdout_bytes"] != float64(8<<20) || out["response_truncated"] != true ||
		budget == 0 || float64(len(text)+len(escaped)) > budget {
		t.Fatalf("the answer takes %d bytes of its message (budget %v): %.300s", len(text)+len(escaped), budget, text)
	}
	for _, stream := range []string{"stdout", "stderr"} {
		if kept, _ := out[stream].(string); len(kept) < 64<<10 || strings.Trim(kept, "\x01\x1b") != "" {
			t.Errorf("the answer keeps %d bytes of %s, want the head of it", len(kept), stream)
		}
	}
	if peak := srv.peakMiB(t); peak > 128 {
		t.Errorf("one call: sbf-server peaked at %d MiB", peak)
	}
	var wg sync.WaitGroup
	for range 10 {
		c := srv.client(t)
		wg.Go(func() {
			if res := call(t, c, "run_command", args); res.IsError {
				t.Errorf("a flood failed: %.300s", res.Content[0].(mcp.TextContent).Text)
			}
		})
	}
	wg.Wait()
	if peak := srv.peakMiB(t); peak > 512 {
		t.Errorf("10 calls at once: sbf-server peaked at %d MiB", peak)
	}
}

// Point 4's last words: nothing bounded calls in flight. With one call at
// work allowed (SBF_MAX_TOOL_CALLS=1), 8 more wait and the rest are
// refused at once with SERVER_BUSY, saying what to do; the waiting ones
// run once the first ends.
func TestCallsPastTheServersBoundAreRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "[vm]\ndriver = \"sim\"\n")
	srv := w.startServer(t, "SBF_ENABLE_SIM=1", "SBF_MAX_TOOL_CALLS=1")
	c := srv.client(t)
	id := okCall(t, c, "create_instance", map[string]any{"workspace_root": w.ws})["instance_id"]
	gate := filepath.Join(w.base, "gate")
	held := map[string]any{"instance_id": id, "command": "while [ ! -e " + gate + " ]; do sleep 0.05; done; echo done"}
	const calls, admitted = 12, 9
	answers := make(chan *mcp.CallToolResult, calls)
	for range calls {
		go func() { answers <- call(t, c, "run_command", held) }()
	}
	var busy, done int
	for deadline := time.After(60 * time.Second); busy+done < calls; {
		select {
		case res := <-answers:
			text := res.Content[0].(mcp.TextContent).Text
			switch {
			case res.IsError && strings.Contains(text, `"SERVER_BUSY"`) && strings.Contains(text, "SBF_MAX_TOOL_CALLS"):
				busy++
			case !res.IsError && strings.Contains(text, `"done\n"`):
				done++
			default:
				t.Fatalf("unexpected answer: %.300s", text)
			}
			if busy == calls-admitted {
				os.WriteFile(gate, nil, 0o644) // the refusals came while the others were held
			}
		case <-deadline:
			t.Fatalf("after 60 s: %d refused, %d done of %d calls (want %d refused)", busy, done, calls,
				calls-admitted)
		}
	}
	if busy != calls-admitted || done != admitted {
		t.Errorf("%d refused and %d done, want %d and %d", busy, done, calls-admitted, admitted)
	}
}

// Point 6: the compose loader child had no bound: a 100 MB compose.yaml
// took it 30 s and 395 MB at every plan and loop pass. Now a file past
// 4 MiB is refused before compose-go reads it, COMPOSE_LIMIT_EXCEEDED
// naming the bound (the child's CPU, memory and wall clock bounds are
// drivers/guest/composerun's tests).
func TestAComposeFileTooLargeIsNotLoaded(t *testing.T) {
	t.Parallel()
	w, _ := composeWorld(t)
	// 100 MiB of distinct labels, written a block of numbered copies of one line at a time (fmt,
	// a call a line, took 11 s under the race detector; the whole file in memory, 4 s of GC).
	w.write("ws/compose.yaml", "services:\n  web:\n    image: nginx\n    labels:\n")
	f, err := os.OpenFile(filepath.Join(w.ws, "compose.yaml"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	line := `      l0000000: "` + strings.Repeat("v", 80) + "\"\n"
	const perBlock = 8192
	block := bytes.Repeat([]byte(line), perBlock)
	for first := 0; first*len(line) < 100<<20; first += perBlock {
		for i := range perBlock {
			number := block[i*len(line)+len("      l"):][:7]
			for d, n := 6, first+i; d >= 0; d, n = d-1, n/10 {
				number[d] = byte('0' + n%10)
			}
		}
		if _, err := f.Write(block); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	r := w.sbf(nil, "-C", w.ws, "plan", "--json")
	if r.code == 0 || !contains(r.stdout+r.stderr, "COMPOSE_LIMIT_EXCEEDED") ||
		!contains(r.stdout+r.stderr, "file_bytes") {
		t.Errorf("sbf plan: exit %d, want COMPOSE_LIMIT_EXCEEDED naming file_bytes:\n%.2000s%.2000s", r.code,
			r.stdout, r.stderr)
	}
}

// Point 6: a 1 MB loose object in .git inflated to 1.15 GB in the git
// state read (docker_build, validate_image). Now the read stops at its
// bound and the answer says so (workspace_state.git_unread:
// GIT_LIMIT_EXCEEDED), the server holding none of it.
func TestAGitObjectBombIsNotInflated(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: the attack needs a repository")
	}
	w := newWorld(t, "[vm]\ndriver = \"sim\"\n")
	git(t, w.ws, "init", "-q")
	git(t, w.ws, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "one")
	head, err := exec.Command("git", "-C", w.ws, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	bomb := testutil.ZlibBomb("commit", 1150<<20, 1150<<20)
	obj := filepath.Join(w.ws, ".git", "objects", string(head[:2]), strings.TrimSpace(string(head[2:])))
	os.Chmod(obj, 0o644)
	if err := os.WriteFile(obj, bomb, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("planted a loose object of %d KiB inflating to 1150 MiB", len(bomb)>>10)
	srv := w.startServer(t, "SBF_ENABLE_SIM=1",
		"PATH="+fakeDocker(t, w)+string(os.PathListSeparator)+os.Getenv("PATH"))
	c := srv.client(t)
	id := okCall(t, c, "create_instance", map[string]any{"workspace_root": w.ws})["instance_id"]
	out := okCall(t, c, "validate_image", map[string]any{"instance_id": id, "image_name": "app:1"})
	state, _ := out["workspace_state"].(map[string]any)
	if unread, _ := state["git_unread"].(string); !strings.HasPrefix(unread, "GIT_LIMIT_EXCEEDED") {
		t.Errorf("workspace_state says nothing of the bomb: %v", state)
	}
	if peak := srv.peakMiB(t); peak > 256 {
		t.Errorf("sbf-server peaked at %d MiB", peak)
	}
}

// server is a running sbf-server (started directly, so its memory is its
// own) serving Streamable HTTP.
type server struct {
	served testutil.Served
	pid    int
}

func (w *world) startServer(t *testing.T, env ...string) *server {
	t.Helper()
	c := exec.Command(filepath.Join(filepath.Dir(sbfBinary), "sbf-server"), "-C", w.ws, "serve", "127.0.0.1:0")
	c.Env = append(append([]string{}, w.env...), env...)
	stderr, _ := c.StderrPipe()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Process.Signal(syscall.SIGTERM)
		c.Wait()
	})
	return &server{served: testutil.Serving(t, stderr, 30*time.Second), pid: c.Process.Pid}
}

func (s *server) client(t *testing.T) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(s.served.URL, transport.WithHTTPHeaders(s.served.Header(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "sbf-escape-memory", Version: "1"}
	if _, err := c.Initialize(context.Background(), init); err != nil {
		t.Fatal(err)
	}
	return c
}

// peakMiB is the server's peak resident memory so far (VmHWM).
func (s *server) peakMiB(t *testing.T) int {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.pid))
	if err != nil {
		t.Skip("no /proc here: the peak is measured on Linux")
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return kib >> 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

func call(t *testing.T, c *client.Client, name string, args map[string]any) *mcp.CallToolResult {
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{mcp.TextContent{Text: err.Error()}}}
	}
	return res
}

func structured(t *testing.T, res *mcp.CallToolResult) map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(res.Content[0].(mcp.TextContent).Text), &m); err != nil {
		t.Fatalf("the answer is no JSON object: %v", err)
	}
	return m
}

func okCall(t *testing.T, c *client.Client, name string, args map[string]any) map[string]any {
	t.Helper()
	res := call(t, c, name, args)
	if res.IsError {
		t.Fatalf("%s: %.500s", name, res.Content[0].(mcp.TextContent).Text)
	}
	return structured(t, res)
}

// The bomb above is what it says: its zlib stream inflates, checksum and
// all, to the bytes its header names.
func TestTheGitObjectBombInflatesToItsHeader(t *testing.T) {
	t.Parallel()
	const inflated = 3<<20 + 12345
	z, err := zlib.NewReader(bytes.NewReader(testutil.ZlibBomb("commit", inflated, inflated)))
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, z)
	if want := int64(inflated + len(fmt.Sprintf("commit %d\x00", inflated))); err != nil || n != want {
		t.Errorf("the bomb inflated to %d bytes (%v), want %d", n, err, want)
	}
}
