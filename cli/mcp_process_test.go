package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/sandboxforge/sbf/internal/testutil"
)

const tsClientDir = "../mcpserver/testdata/tsclient"

// ensureTSClient installs the official MCP TypeScript SDK (pinned by the
// committed package-lock.json) and returns the folder its clients run in.
func ensureTSClient(t *testing.T) string {
	t.Helper()
	testutil.CoverSources(t) // the servers its clients talk to are built from them
	return testutil.NPMCI(t, tsClientDir, filepath.Join("node_modules", "@modelcontextprotocol", "sdk", "package.json"))
}

func runTSClient(t *testing.T, w *simWorkspace, env []string, args ...string) {
	t.Helper()
	c := exec.Command("node", append([]string{"client.mjs"}, args...)...)
	c.Dir = ensureTSClient(t)
	c.Env = append(slices.Clone(w.env), env...)
	out, err := c.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"ok":true`) {
		t.Fatalf("TypeScript SDK client (%s): %v\n%s", args[0], err, out)
	}
}

// startServe runs `sbf serve` and returns its MCP endpoint once it listens.
func startServe(t *testing.T, w *simWorkspace, args ...string) testutil.Served {
	t.Helper()
	c := w.cmd(nil, append([]string{"serve"}, args...)...)
	stderr, _ := c.StderrPipe()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Process.Signal(syscall.SIGTERM)
		c.Wait()
	})
	return testutil.Serving(t, stderr, 20*time.Second)
}

func TestTypeScriptSDKOverStdio(t *testing.T) {
	ensureTSClient(t)
	w := newSimWorkspace(t, "[vm]\ndriver = \"sim\"\n")
	runTSClient(t, w, nil, "stdio", sbfBinary, w.root)
}

func TestTypeScriptSDKOverHTTP(t *testing.T) {
	t.Parallel() // subprocesses and waits: it overlaps with the others
	ensureTSClient(t)
	w := newSimWorkspace(t, "[vm]\ndriver = \"sim\"\n")
	served := startServe(t, w, "127.0.0.1:0")
	runTSClient(t, w, []string{"SBF_TOKEN_FILE=" + served.TokenFile}, "http", served.URL, w.root)
}

func initialize(t *testing.T, c *client.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: "sbf-test", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatal(err)
	}
}

func callTool(t *testing.T, c *client.Client, name string, args map[string]any) map[string]any {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var out map[string]any
	json.Unmarshal([]byte(res.Content[0].(mcp.TextContent).Text), &out)
	if res.IsError {
		t.Fatalf("%s failed: %v", name, out)
	}
	return out
}

// A server killed with SIGKILL and started again still knows its
// instances: ids resolve to their workspace through the host index.
func TestMCPServerRestart(t *testing.T) {
	w := newSimWorkspace(t, "[vm]\ndriver = \"sim\"\n")
	first := w.cmd(nil, "mcp")
	stdin, _ := first.StdinPipe()
	stdout, _ := first.StdoutPipe()
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(transport.NewIO(stdout, stdin, io.NopCloser(strings.NewReader(""))))
	initialize(t, c)
	id := callTool(t, c, "create_instance", map[string]any{"workspace_root": w.root})["instance_id"].(string)
	first.Process.Signal(syscall.SIGKILL)
	first.Wait()

	second, err := client.NewStdioMCPClient(sbfBinary, w.env, "-C", w.root, "mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	initialize(t, second)
	rows := callTool(t, second, "list_instances", nil)["instances"].([]any)
	if len(rows) != 1 || rows[0].(map[string]any)["instance_id"] != id {
		t.Fatalf("after restart: %v", rows)
	}
	callTool(t, second, "destroy_instance", map[string]any{"instance_id": id})
	if got := w.world(); len(got) != 0 {
		t.Errorf("world after destroy = %v", got)
	}
}

// TestReadmeClientSnippets starts sbf exactly as each client snippet in
// docs/mcp.md (linked from the README) says and checks an MCP client can
// list its tools.
func TestReadmeClientSnippets(t *testing.T) {
	readme, err := os.ReadFile("../docs/mcp.md")
	if err != nil {
		t.Fatal(err)
	}
	stdio, urls := readmeSnippets(t, string(readme))
	if len(stdio) != 4 || len(urls) != 4 {
		t.Fatalf("found %d stdio and %d HTTP snippets, want 4 of each (Claude Code, Claude Desktop, Cursor, VS "+
			"Code)", len(stdio), len(urls))
	}
	w := newSimWorkspace(t, "[vm]\ndriver = \"sim\"\n")
	for _, argv := range stdio {
		if argv[0] != "sbf" {
			t.Fatalf("stdio snippet does not start sbf: %v", argv)
		}
		for i := range argv {
			argv[i] = strings.ReplaceAll(argv[i], "/path/to/workspace", w.root)
		}
		c, err := client.NewStdioMCPClient(sbfBinary, w.env, argv[1:]...)
		if err != nil {
			t.Fatal(err)
		}
		initialize(t, c)
		listsTools(t, c, strings.Join(argv, " "))
		c.Close()
	}
	// docs/mcp.md says: run `sbf serve -C /path/to/workspace` first, and
	// where its bearer token goes.
	served := startServe(t, w, "-C", w.root)
	for _, u := range urls {
		c, err := client.NewStreamableHttpClient(u, transport.WithHTTPHeaders(served.Header(t)))
		if err != nil {
			t.Fatal(err)
		}
		initialize(t, c)
		listsTools(t, c, u)
		c.Close()
		unauthorized(t, u)
	}
}

// unauthorized checks that a client without the bearer token is refused.
func unauthorized(t *testing.T, u string) {
	t.Helper()
	c, err := client.NewStreamableHttpClient(u)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	if _, err := c.Initialize(ctx, req); err == nil {
		t.Errorf("%s: a client without the bearer token was served", u)
	}
}

func listsTools(t *testing.T, c *client.Client, what string) {
	t.Helper()
	res, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil || len(res.Tools) < 9 {
		t.Errorf("%s: tools/list: %v (%d tools)", what, err, len(res.Tools))
	}
}

// readmeSnippets extracts the commands (stdio) and URLs (HTTP) of the
// client snippets between the mcp-snippets markers of docs/mcp.md.
func readmeSnippets(t *testing.T, readme string) (stdio [][]string, urls []string) {
	_, rest, _ := strings.Cut(readme, "<!-- mcp-snippets:start -->")
	section, _, _ := strings.Cut(rest, "<!-- mcp-snippets:end -->")
	blocks := regexp.MustCompile("(?s)```(sh|json)\n(.*?)```").FindAllStringSubmatch(section, -1)
	for _, b := range blocks {
		if b[1] == "sh" {
			for _, line := range strings.Split(strings.TrimSpace(b[2]), "\n") {
				if _, cmd, ok := strings.Cut(line, " -- "); ok {
					stdio = append(stdio, strings.Fields(cmd))
				} else if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[len(f)-1], "http") {
					urls = append(urls, f[len(f)-1])
				}
			}
			continue
		}
		var doc map[string]any
		if err := json.Unmarshal([]byte(b[2]), &doc); err != nil {
			t.Fatalf("docs/mcp.md snippet is not JSON: %v\n%s", err, b[2])
		}
		for key, servers := range doc {
			if key != "mcpServers" && key != "servers" {
				continue // VS Code's "inputs" (where a client asks for the bearer token), and the like
			}
			entry := servers.(map[string]any)["sbf"].(map[string]any)
			if u, ok := entry["url"].(string); ok {
				urls = append(urls, u)
				continue
			}
			argv := []string{entry["command"].(string)}
			for _, a := range entry["args"].([]any) {
				argv = append(argv, a.(string))
			}
			if argv[0] == "npx" { // the mcp-remote bridge: what sbf must answer is its URL
				if i := slices.IndexFunc(argv, func(a string) bool { return strings.HasPrefix(a, "http") }); i > 0 {
					urls = append(urls, argv[i])
				}
				continue
			}
			stdio = append(stdio, argv)
		}
	}
	return stdio, urls
}

// `sbf mcp --http ADDR` works as two words, the way the help writes it.
func TestMCPHTTPAddressAsTwoWords(t *testing.T) {
	w := newSimWorkspace(t, "[vm]\ndriver = \"sim\"\n")
	c := w.cmd(nil, "mcp", "--http", "127.0.0.1:0")
	stdin, _ := c.StdinPipe() // stdio stays open while HTTP serves
	defer stdin.Close()
	stderr, _ := c.StderrPipe()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { c.Process.Signal(syscall.SIGTERM); c.Wait() }()
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		var all strings.Builder
		for sc.Scan() {
			all.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "serving MCP on http://127.0.0.1:") {
				found <- sc.Text()
				return
			}
		}
		found <- "exited:\n" + all.String()
	}()
	select {
	case line := <-found:
		if strings.HasPrefix(line, "exited") {
			t.Fatalf("sbf mcp --http 127.0.0.1:0 did not serve HTTP: %s", line)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("sbf mcp --http ADDR did not start")
	}
}
