package cli

import (
	"context"
	"os/exec"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// BenchmarkMCPStdioProcess measures tool round trips to a real `sbf mcp`
// process over stdio, then the server's resident memory after 1,000 calls.
func BenchmarkMCPStdioProcess(b *testing.B) {
	w := newSimWorkspace(b, "[vm]\ndriver = \"sim\"\n")
	var server *exec.Cmd
	c, err := client.NewStdioMCPClientWithOptions(sbfBinary, w.env, []string{"-C", w.root, "mcp"},
		transport.WithCommandFunc(func(ctx context.Context, command string, env, args []string) (*exec.Cmd, error) {
			server = exec.CommandContext(ctx, command, args...)
			server.Env = env
			return server, nil
		}))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		b.Fatal(err)
	}
	call := func(name string, args map[string]any) {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = name, args
		if res, err := c.CallTool(ctx, req); err != nil || res.IsError {
			b.Fatalf("%s: %v %v", name, err, res)
		}
	}
	call("create_instance", map[string]any{"workspace_root": w.root})
	calls := 0
	for _, tool := range []string{"list_instances", "get_desired_state"} {
		b.Run(tool, func(b *testing.B) {
			for b.Loop() {
				call(tool, nil)
				calls++
			}
		})
	}
	b.Run("idle-rss-after-1000-calls", func(b *testing.B) {
		for ; calls < 1000; calls++ {
			call("get_desired_state", nil)
		}
		for b.Loop() {
		}
		if kib, ok := procStatus(server.Process.Pid, "VmRSS:"); ok {
			b.ReportMetric(kib, "rss-KiB")
		}
	})
}
