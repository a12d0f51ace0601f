package mcpserver

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// leveledCaller is a registered session at a log level, whose client
// listed MCP roots (caller).
type leveledCaller struct {
	*caller
	level mcp.LoggingLevel
}

func (c *leveledCaller) SetLogLevel(l mcp.LoggingLevel) { c.level = l }
func (c *leveledCaller) GetLogLevel() mcp.LoggingLevel  { return c.level }

// heard is the log lines a session received so far, as "level:event".
func (c *leveledCaller) heard() (out []string) {
	for {
		select {
		case n := <-c.notes:
			if n.Method == "notifications/message" {
				data, _ := n.Params.AdditionalFields["data"].(map[string]any)
				out = append(out, fmt.Sprint(n.Params.AdditionalFields["level"])+":"+fmt.Sprint(data["event"]))
			}
		case <-time.After(50 * time.Millisecond):
			return out
		}
	}
}

// A tool call's engine steps are log lines (issue 42.4): at debug each
// step's start, at info its end and each lease the run records, and the
// loop's passes at debug; every line reaches only the sessions that may
// use its workspace, never a client whose roots leave it out.
func TestCallsLogTheirStepsToTheirWorkspacesClients(t *testing.T) {
	f := newFixture(t, simSpec)
	mine := &leveledCaller{caller: f.caller("mine", f.root), level: mcp.LoggingLevelDebug}
	other := &leveledCaller{caller: f.caller("other", t.TempDir()), level: mcp.LoggingLevelDebug}
	quiet := &leveledCaller{caller: f.caller("quiet", f.root), level: mcp.LoggingLevelInfo}
	for _, c := range []*leveledCaller{mine, other, quiet} {
		if err := f.srv.MCP().RegisterSession(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	out, isErr := f.toolAs(mine.caller, "create_instance", map[string]any{"workspace_root": f.root,
		"auto_bootstrap": false})
	if isErr {
		t.Fatalf("create_instance: %v", out)
	}
	id := out["instance_id"].(string)
	f.toolAs(mine.caller, "extend_instance_ttl", map[string]any{"instance_id": id, "ttl_minutes": 10})
	loopPass(t, f)
	got := mine.heard()
	for _, want := range []string{"info:lease_acquired", "debug:create_started", "info:create", "info:lease_renewed",
		"debug:loop_pass"} {
		if !slices.Contains(got, want) {
			t.Errorf("the client at debug did not hear %s: %v", want, got)
		}
	}
	if q := quiet.heard(); !slices.Contains(q, "info:create") || slices.ContainsFunc(q, func(e string) bool {
		return strings.HasPrefix(e, "debug:")
	}) {
		t.Errorf("a client at info heard %v", q)
	}
	if o := other.heard(); len(o) != 0 {
		t.Errorf("a client whose roots leave the workspace out heard %v", o)
	}
}
