package mcpserver

import (
	"os"
	"path/filepath"
	"testing"
)

// In-process round trips through mcp-go's client and server: the cost of
// the tool itself plus JSON-RPC framing, without a process boundary.
func BenchmarkToolRoundTrip(b *testing.B) {
	f := newFixture(b, simSpec)
	f.ok("create_instance", map[string]any{"workspace_root": f.root})
	for _, tool := range []string{"list_instances", "get_desired_state"} {
		b.Run(tool, func(b *testing.B) {
			for b.Loop() {
				if _, isErr := f.call(tool, nil); isErr {
					b.Fatal(tool + " failed")
				}
			}
		})
	}
}

// run_command's own cost beyond the command, on a workspace with a
// compose stack (whose files every resolve reads): what an agent pays per
// call besides the guest.
func BenchmarkRunCommand(b *testing.B) {
	f := newFixture(b, simSpec+"\n[sandboxes.web]\ncompose = true\n")
	os.WriteFile(filepath.Join(f.root, "compose.yaml"),
		[]byte("services:\n  web:\n    image: busybox\n    command: [\"sleep\", \"1\"]\n"), 0o644)
	id := f.ok("create_instance", map[string]any{"workspace_root": f.root})["instance_id"]
	for b.Loop() {
		if res, isErr := f.call("run_command", map[string]any{"instance_id": id, "command": "true"}); isErr {
			b.Fatalf("run_command: %v", res)
		}
	}
}
