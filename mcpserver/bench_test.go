package mcpserver

import (
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
