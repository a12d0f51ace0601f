package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
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

// Floods print the default output ceiling, 8 MiB, on each stream: control
// bytes, which JSON escapes six-fold (and the text copy of a result seven-
// fold), and letters, the most raw bytes a result can carry.
var floods = []struct{ name, command string }{
	{"controls", "head -c 8388608 /dev/zero | tr '\\000' '\\001'; head -c 8388608 /dev/zero | tr '\\000' '\\033' >&2"},
	{"letters", "head -c 8388608 /dev/zero | tr '\\000' o; head -c 8388608 /dev/zero | tr '\\000' e >&2"},
}

// BenchmarkRunCommandPeakMemory measures the peak resident memory (VmHWM)
// of a real sbf-server while 1 or 10 calls at once each run a flood and
// ask to keep the ceiling: over Streamable HTTP (one client per call),
// over HTTP with a progress token (the answer goes as a server-sent
// event), and over stdio (one client). Each measurement starts a new
// server: the peak is its whole life, idle included (reported alone as
// calls=0).
func BenchmarkRunCommandPeakMemory(b *testing.B) {
	for _, door := range []string{"http", "http-sse", "stdio"} {
		for _, flood := range floods {
			for _, calls := range []int{0, 1, 10} {
				if calls == 0 && (flood.name != "letters" || door == "http-sse") {
					continue
				}
				b.Run(fmt.Sprintf("%s/%s/calls=%d", door, flood.name, calls), func(b *testing.B) {
					var peak float64
					for b.Loop() {
						peak = max(peak, floodPeak(b, door, flood.command, calls))
					}
					b.ReportMetric(peak/1024, "peak-RSS-MiB")
				})
			}
		}
	}
}

// floodPeak starts sbf-server, makes calls floods at once and returns the
// server's VmHWM in KiB.
func floodPeak(b *testing.B, door, command string, calls int) float64 {
	w := newSimWorkspace(b, "[vm]\ndriver = \"sim\"\n")
	var stops []func()
	defer func() {
		for _, stop := range slices.Backward(stops) {
			stop()
		}
	}()
	connect, pid := startDoor(b, w, door, func(stop func()) { stops = append(stops, stop) })
	first := connect()
	id := floodCall(b, first, "create_instance", map[string]any{"workspace_root": w.root}, false)["instance_id"]
	var wg sync.WaitGroup
	for range calls {
		cl := first
		if door != "stdio" {
			cl = connect()
		}
		wg.Go(func() {
			res := floodCall(b, cl, "run_command", map[string]any{"instance_id": id, "command": command,
				"max_output_bytes": 8 << 20}, door == "http-sse")
			if res["stdout_bytes"] != float64(8<<20) || res["response_truncated"] != true {
				b.Errorf("run_command: %.300v", res)
			}
		})
	}
	wg.Wait()
	kib, ok := procStatus(pid, "VmHWM:")
	if !ok {
		b.Skip("no /proc/PID/status VmHWM on this system")
	}
	return kib
}

// startDoor starts sbf-server serving door and returns how to connect a
// client and the server's pid; what ends the clients and the server goes
// to cleanup.
func startDoor(b *testing.B, w *simWorkspace, door string, cleanup func(func())) (
	connect func() *client.Client, pid int,
) {
	ctx := context.Background()
	initialize := func(cl *client.Client) *client.Client {
		cleanup(func() { cl.Close() })
		init := mcp.InitializeRequest{}
		init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
		init.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "1"}
		if _, err := cl.Initialize(ctx, init); err != nil {
			b.Fatal(err)
		}
		return cl
	}
	if door == "stdio" {
		var server *exec.Cmd
		cl, err := client.NewStdioMCPClientWithOptions(serverBinary, w.env, []string{"-C", w.root, "mcp"},
			transport.WithCommandFunc(func(ctx context.Context, command string, env, args []string) (*exec.Cmd, error) {
				server = exec.CommandContext(ctx, command, args...)
				server.Env = env
				return server, nil
			}))
		if err != nil {
			b.Fatal(err)
		}
		initialize(cl)
		return func() *client.Client { return cl }, server.Process.Pid
	}
	c := exec.Command(serverBinary, "-C", w.root, "serve", "127.0.0.1:0")
	c.Env = w.env
	stderr, _ := c.StderrPipe()
	if err := c.Start(); err != nil {
		b.Fatal(err)
	}
	cleanup(func() {
		c.Process.Signal(syscall.SIGTERM)
		c.Wait()
	})
	served := testutil.Serving(b, stderr, 20*time.Second)
	return func() *client.Client {
		cl, err := client.NewStreamableHttpClient(served.URL, transport.WithHTTPHeaders(served.Header(b)))
		if err != nil {
			b.Fatal(err)
		}
		return initialize(cl)
	}, c.Process.Pid
}

// floodCall calls a tool, with a progress token when progress is set (the
// server then answers as a server-sent event after its first
// notification), and returns its structured result.
func floodCall(b *testing.B, c *client.Client, name string, args map[string]any, progress bool) map[string]any {
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	if progress {
		req.Params.Meta = &mcp.Meta{ProgressToken: "bench"}
	}
	res, err := c.CallTool(context.Background(), req)
	if err != nil || res.IsError {
		b.Errorf("%s: %v %.300v", name, err, res)
		return nil
	}
	m, _ := res.StructuredContent.(map[string]any)
	return m
}

// procStatus reads a field in KiB of a process's /proc status (Linux).
func procStatus(pid int, field string) (float64, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kib, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kib, err == nil
		}
	}
	return 0, false
}
