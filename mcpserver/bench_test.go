package mcpserver

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
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

// run_command's cost as the workspace grows: the door and the engine must
// add the same whether the workspace holds 1 sandbox or 1,000. The sim's
// own exec (a shell on this host) is measured beside it: what is left is
// sbf's.
func BenchmarkRunCommandAsTheWorkspaceGrows(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("sandboxes=%d", n), func(b *testing.B) {
			var text strings.Builder
			fmt.Fprintf(&text, "%s[lease]\nmax_instances = %d\n", simSpec, n+10)
			for i := range n {
				fmt.Fprintf(&text, "[sandboxes.sb%04d]\n", i)
			}
			f := newFixture(b, text.String())
			ws := spec.Options{Root: f.root, Host: spec.Host{OS: "linux", Arch: "amd64"}}
			if _, err := f.srv.cfg.Engine.Apply(context.Background(), ws,
				reconcile.Options{Intent: reconcile.Renew{All: true}}); err != nil {
				b.Fatal(err)
			}
			args := map[string]any{"instance_id": "sb0000", "command": "true"}
			if res, isErr := f.call("run_command", args); isErr {
				b.Fatalf("run_command: %v", res)
			}
			b.ResetTimer()
			for b.Loop() {
				if res, isErr := f.call("run_command", args); isErr {
					b.Fatalf("run_command: %v", res)
				}
			}
		})
	}
	b.Run("the sim's exec alone", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("sh", "-c", "true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
