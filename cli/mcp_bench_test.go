package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandboxforge/sbf/internal/testutil"
)

// BenchmarkMCPStdioProcess measures tool round trips to a real `sbf mcp`
// process over stdio, then the resident memory of `sbf mcp` after 1,000
// calls and after 1,000 run_command calls, counted across every process
// it runs as (issue 42.5: the server and any process it started).
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
			defer reportServerCPU(b, server.Process.Pid)()
			for b.Loop() {
				call(tool, nil)
				calls++
			}
		})
	}
	// What an agent waits for beyond the command (the sim's exec is a shell
	// on this host): compare mcpserver's in-process BenchmarkRunCommand.
	b.Run("run_command", func(b *testing.B) {
		id := firstInstance(b, c)
		defer reportServerCPU(b, server.Process.Pid)()
		for b.Loop() {
			call("run_command", map[string]any{"instance_id": id, "command": "true"})
			calls++
		}
	})
	b.Run("idle-rss-after-1000-calls", func(b *testing.B) {
		for ; calls < 1000; calls++ {
			call("get_desired_state", nil)
		}
		for b.Loop() {
		}
		kib, procs := treeRSS(server.Process.Pid)
		b.ReportMetric(kib, "rss-KiB")
		b.ReportMetric(float64(procs), "processes")
	})
	id := ""
	b.Run("rss-after-1000-run_command", func(b *testing.B) {
		if id == "" {
			id = firstInstance(b, c)
			for range 1000 {
				call("run_command", map[string]any{"instance_id": id, "command": "true"})
			}
		}
		for b.Loop() {
		}
		kib, procs := treeRSS(server.Process.Pid)
		b.ReportMetric(kib/1024, "rss-MiB")
		b.ReportMetric(float64(procs), "processes")
		// The server's own: its heap and stacks, and the pages of its binary.
		for _, part := range []string{"RssAnon", "RssFile"} {
			if v, ok := procStatus(server.Process.Pid, part+":"); ok {
				b.ReportMetric(v/1024, part+"-MiB")
			}
		}
	})
}

// reportServerCPU reports, when the function it returns is called, the CPU
// the server process spent per op since (its own threads, not its children:
// the sim's shells are the command's cost, not the door's).
func reportServerCPU(b *testing.B, pid int) func() {
	before := testutil.ProcessCPU(pid)
	return func() {
		b.ReportMetric(float64((testutil.ProcessCPU(pid)-before).Microseconds())/float64(b.N), "server-cpu-µs/op")
	}
}

// firstInstance is the instance id list_instances names first.
func firstInstance(b *testing.B, c *client.Client) string {
	req := mcp.CallToolRequest{}
	req.Params.Name = "list_instances"
	res, err := c.CallTool(context.Background(), req)
	if err != nil || res.IsError {
		b.Fatalf("list_instances: %v %v", err, res)
	}
	rows, _ := res.StructuredContent.(map[string]any)["instances"].([]any)
	if len(rows) == 0 {
		b.Fatal("no instance")
	}
	id, _ := rows[0].(map[string]any)["instance_id"].(string)
	return id
}

// treeRSS is the resident memory of a process and of every process below
// it (Linux: /proc's children lists, of every thread), and how many they
// are.
func treeRSS(pid int) (kib float64, procs int) {
	if rss, ok := procStatus(pid, "VmRSS:"); ok {
		kib, procs = rss, 1
	}
	lists, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, l := range lists {
		kids, _ := os.ReadFile(l)
		for _, f := range strings.Fields(string(kids)) {
			if child, err := strconv.Atoi(f); err == nil {
				k, n := treeRSS(child)
				kib, procs = kib+k, procs+n
			}
		}
	}
	return kib, procs
}
