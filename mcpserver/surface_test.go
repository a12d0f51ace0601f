package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandboxforge/sbf/drivers/sim"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
)

// logSink gathers the log notifications a client receives.
type logSink struct {
	mu   sync.Mutex
	msgs []map[string]any
}

// legacyClient connects a client of the last protocol with
// logging/setLevel and resources/subscribe (2025-11-25: 2026-07-28 replaced
// both), handing it every notification.
func legacyClient(t *testing.T, f *fixture, note func(mcp.JSONRPCNotification)) *client.Client {
	t.Helper()
	c, err := client.NewInProcessClient(f.srv.MCP())
	if err != nil {
		t.Fatal(err)
	}
	return connect(t, c, mcp.LATEST_LEGACY_PROTOCOL_VERSION, note)
}

// connect starts a client at a protocol version (2026-07-28 makes it
// discover the server instead of initializing) and hands it every
// notification.
func connect(t *testing.T, c *client.Client, version string, note func(mcp.JSONRPCNotification)) *client.Client {
	t.Helper()
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = version
	init.Params.ClientInfo = mcp.Implementation{Name: "client-" + version, Version: "1"}
	if res, err := c.Initialize(ctx, init); err != nil || res.ProtocolVersion != version {
		t.Fatalf("connecting at %s: %v %v", version, res, err)
	}
	c.OnNotification(note)
	return c
}

// listen connects a client that keeps the log notifications it hears.
func (l *logSink) listen(t *testing.T, f *fixture) *client.Client {
	return legacyClient(t, f, l.note)
}

// note keeps a notification if it is a log line.
func (l *logSink) note(n mcp.JSONRPCNotification) {
	if n.Method != "notifications/message" {
		return
	}
	data, _ := n.Params.AdditionalFields["data"].(map[string]any)
	level := fmt.Sprint(n.Params.AdditionalFields["level"])
	l.mu.Lock()
	l.msgs = append(l.msgs, map[string]any{"level": level, "event": data["event"], "data": data})
	l.mu.Unlock()
}

func (l *logSink) events() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, m := range l.msgs {
		out = append(out, m["level"].(string)+":"+m["event"].(string))
	}
	return out
}

// loopPass runs one reconcile pass as the loop does and reports it to the
// clients the way RunLoop does.
func loopPass(t *testing.T, f *fixture) {
	t.Helper()
	ws, err := f.srv.options(f.root, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.srv.cfg.Engine.Apply(context.Background(), ws, reconcile.Options{Intent: reconcile.Reconcile{}})
	f.srv.logged(nil)(ws, res, err)
}

func setLevel(t *testing.T, c *client.Client, level mcp.LoggingLevel) {
	t.Helper()
	req := mcp.SetLevelRequest{}
	req.Params.Level = level
	// Clients of 2025-11-25 and before (the conformance suite's among them)
	// still set a level this way; 2026-07-28 deprecates it.
	//lint:ignore SA1019 the server must keep serving the protocols that have it
	if err := c.SetLevel(context.Background(), req); err != nil {
		t.Fatalf("logging/setLevel: %v", err)
	}
}

// waitEvents waits (briefly: delivery is asynchronous in process) until
// the client has heard n notifications.
func waitEvents(t *testing.T, l *logSink, n int) []string {
	t.Helper()
	for range 200 {
		if got := l.events(); len(got) >= n {
			return got
		}
		time.Sleep(5 * time.Millisecond)
	}
	return l.events()
}

// A lease about to end is warned about once, before it ends; its expiry
// is a warning too; a client at "error" hears neither.
func TestLoopLogsReachClientsAtTheirLevel(t *testing.T) {
	f := newFixture(t, simSpec)
	var heard logSink
	c := heard.listen(t, f)
	f.ok("create_instance", map[string]any{"workspace_root": f.root, "ttl_minutes": 8, "auto_bootstrap": false})

	f.clock.Advance(4 * time.Minute) // 4 minutes left: inside the warning, but the client asked for errors only
	loopPass(t, f)
	if got := waitEvents(t, &heard, 1); len(got) != 0 {
		t.Fatalf("a client at the default level (error) heard %v", got)
	}

	setLevel(t, c, mcp.LoggingLevelWarning)
	f.srv.logs.mu.Lock()
	clear(f.srv.logs.warned) // the pass above warned no one this client heard
	f.srv.logs.mu.Unlock()
	loopPass(t, f)
	loopPass(t, f) // one warning per lease end, however many passes
	got := waitEvents(t, &heard, 1)
	if strings.Join(got, " ") != "warning:lease_expiring" {
		t.Fatalf("before the lease ends: %v", got)
	}
	d := heard.msgs[0]["data"].(map[string]any)
	if !strings.HasPrefix(d["instance_id"].(string), "inst_") || fmt.Sprint(d["seconds_left"]) != "240" {
		t.Errorf("the warning: %v", d)
	}

	f.clock.Advance(5 * time.Minute)
	loopPass(t, f)
	got = waitEvents(t, &heard, 2)
	if strings.Join(got, " ") != "warning:lease_expiring warning:expired" {
		t.Fatalf("after the lease ended: %v", got)
	}
}

// A VM stopped behind sbf's back is started again by the loop: a
// repair, told at notice.
func TestLoopLogsARepair(t *testing.T) {
	f := newFixture(t, simSpec)
	var heard logSink
	setLevel(t, heard.listen(t, f), mcp.LoggingLevelNotice)
	created := f.ok("create_instance", map[string]any{"workspace_root": f.root, "auto_bootstrap": false})
	d, err := sim.New(sim.Options{Dir: f.simDir})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Stop(context.Background(), created["backend_instance_name"].(string)); err != nil {
		t.Fatal(err)
	}
	loopPass(t, f)
	got := waitEvents(t, &heard, 1)
	if len(got) == 0 || got[0] != "notice:repaired" {
		t.Fatalf("after the VM vanished: %v", got)
	}
}

// A subscriber to a workspace's sandboxes hears of each change of phase
// or lease, made by a tool or by the loop, and nothing after it
// unsubscribed.
func TestResourceSubscriptions(t *testing.T) {
	f := newFixture(t, simSpec)
	_, wsID, _ := spec.WorkspaceIdentity(f.root)
	uri := workspacePrefix + wsID + "/sandboxes"
	var mu sync.Mutex
	updates := 0
	c := legacyClient(t, f, func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationResourceUpdated) && n.Params.AdditionalFields["uri"] == uri {
			mu.Lock()
			updates++
			mu.Unlock()
		}
	})
	heard := func(want int) {
		t.Helper()
		for range 200 {
			mu.Lock()
			got := updates
			mu.Unlock()
			if got >= want {
				if got > want {
					t.Fatalf("%d updates, want %d", got, want)
				}
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatalf("%d updates, want %d", updates, want)
	}
	ctx := context.Background()
	sub := mcp.SubscribeRequest{}
	sub.Params.URI = uri
	//lint:ignore SA1019 the server must keep serving the protocols that have it
	if err := c.Subscribe(ctx, sub); err != nil {
		t.Fatal(err)
	}
	id := f.ok("create_instance", map[string]any{"workspace_root": f.root, "ttl_minutes": 10,
		"auto_bootstrap": false})["instance_id"]
	heard(1)
	f.ok("list_instances", nil) // reads: no news
	f.ok("extend_instance_ttl", map[string]any{"instance_id": id, "ttl_minutes": 5})
	heard(2)
	f.clock.Advance(20 * time.Minute)
	loopPass(t, f) // the loop expires it
	heard(3)
	unsub := mcp.UnsubscribeRequest{}
	unsub.Params.URI = uri
	//lint:ignore SA1019 the server must keep serving the protocols that have it
	if err := c.Unsubscribe(ctx, unsub); err != nil {
		t.Fatal(err)
	}
	f.ok("create_instance", map[string]any{"workspace_root": f.root, "auto_bootstrap": false})
	time.Sleep(50 * time.Millisecond)
	heard(3)
}

func TestPrompts(t *testing.T) {
	f := newFixture(t, simSpec)
	ctx := context.Background()
	list, err := f.c.ListPrompts(ctx, mcp.ListPromptsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range list.Prompts {
		names = append(names, p.Name)
		if p.Description == "" || p.Title == "" {
			t.Errorf("prompt %s lacks a description or title", p.Name)
		}
	}
	if strings.Join(names, " ") != "bring_results_back retry_from_snapshot run_tests start_sandbox" {
		t.Errorf("prompts: %v", names)
	}
	get := func(name string, args map[string]string) (string, error) {
		req := mcp.GetPromptRequest{}
		req.Params.Name, req.Params.Arguments = name, args
		res, err := f.c.GetPrompt(ctx, req)
		if err != nil {
			return "", err
		}
		return res.Messages[0].Content.(mcp.TextContent).Text, nil
	}
	text, err := get("start_sandbox", map[string]string{"workspace_root": f.root})
	if err != nil || !strings.Contains(text, `create_instance {workspace_root: "`+f.root+`"}`) {
		t.Errorf("start_sandbox: %q %v", text, err)
	}
	text, err = get("run_tests", map[string]string{"instance_id": "inst_1", "command": "go test ./..."})
	if err != nil || !strings.Contains(text, `run_command {instance_id: "inst_1", command: "go test ./..."`) {
		t.Errorf("run_tests: %q %v", text, err)
	}
	if _, err := get("run_tests", nil); err == nil {
		t.Error("run_tests without its required instance_id")
	}
	if text, err = get("bring_results_back", map[string]string{"instance_id": "inst_1"}); err != nil ||
		!strings.Contains(text, "collect_artifacts") {
		t.Errorf("bring_results_back: %q %v", text, err)
	}
}

func complete(t *testing.T, f *fixture, ref any, arg, value string, ctxArgs map[string]string) []string {
	t.Helper()
	req := mcp.CompleteRequest{}
	req.Params.Ref = ref
	req.Params.Argument = mcp.CompleteArgument{Name: arg, Value: value}
	req.Params.Context = mcp.CompleteContext{Arguments: ctxArgs}
	res, err := f.c.Complete(context.Background(), req)
	if err != nil {
		t.Fatalf("complete %s: %v", arg, err)
	}
	return res.Completion.Values
}

// Instance ids, snapshot names and the resource templates' workspace ids
// complete; an unknown prompt or argument completes to nothing.
func TestCompletions(t *testing.T) {
	f := newFixture(t, simSpec)
	created := f.ok("create_instance", map[string]any{"workspace_root": f.root, "auto_bootstrap": false})
	id := created["instance_id"].(string)
	f.ok("snapshot_instance", map[string]any{"instance_id": id, "name": "clean"})
	f.ok("snapshot_instance", map[string]any{"instance_id": id, "name": "built"})
	prompt := mcp.PromptReference{Type: "ref/prompt", Name: "run_tests"}
	if got := complete(t, f, prompt, "instance_id", "inst_", nil); len(got) != 1 || got[0] != id {
		t.Errorf("instance ids: %v", got)
	}
	if got := complete(t, f, prompt, "instance_id", "zzz", nil); len(got) != 0 {
		t.Errorf("instance ids starting zzz: %v", got)
	}
	snap := mcp.PromptReference{Type: "ref/prompt", Name: "retry_from_snapshot"}
	got := complete(t, f, snap, "snapshot", "", map[string]string{"instance_id": id})
	if strings.Join(got, " ") != "built clean" {
		t.Errorf("snapshots: %v", got)
	}
	if got := complete(t, f, snap, "snapshot", "c", map[string]string{"instance_id": id}); len(got) != 1 {
		t.Errorf("snapshots starting c: %v", got)
	}
	_, wsID, _ := spec.WorkspaceIdentity(f.root)
	tmpl := mcp.ResourceReference{Type: "ref/resource", URI: workspacePrefix + "{id}/sandboxes"}
	if got := complete(t, f, tmpl, "id", "", nil); len(got) != 1 || got[0] != wsID {
		t.Errorf("workspace ids: %v", got)
	}
	unknown := mcp.PromptReference{Type: "ref/prompt", Name: "test_prompt_with_arguments"}
	if got := complete(t, f, unknown, "arg1", "test", nil); got == nil || len(got) != 0 {
		t.Errorf("an unknown prompt: %v", got)
	}
}

// A clone made without ttl_minutes gets its source's lease length, not
// the workspace's default (issue 31: a 30-minute instance's clone got 2h).
func TestCloneLeaseIsTheSourcesLength(t *testing.T) {
	f := newFixture(t, simSpec)
	src := f.ok("create_instance", map[string]any{"workspace_root": f.root, "ttl_minutes": 30,
		"auto_bootstrap": false})
	f.clock.Advance(10 * time.Minute)
	clone := f.ok("clone_instance", map[string]any{"instance_id": src["instance_id"]})
	want := iso(f.clock.Now().Add(30 * time.Minute))
	if clone["expires_at"] != want {
		t.Errorf("clone expires_at = %v, want %s (30 minutes from now)", clone["expires_at"], want)
	}
	rows := f.ok("list_instances", nil)["instances"].([]any)
	for _, r := range rows {
		if row := r.(map[string]any); row["instance_id"] == clone["instance_id"] && row["expires_at"] != want {
			t.Errorf("list_instances: %v", row)
		}
	}
}

// A clone named without the inst_ prefix answers with the id the other
// tools take (its backend name, as documented), never a dead end.
func TestANamedCloneAnswersAnIDTheToolsTake(t *testing.T) {
	f := newFixture(t, simSpec)
	src := f.ok("create_instance", map[string]any{"workspace_root": f.root, "auto_bootstrap": false})
	clone := f.ok("clone_instance", map[string]any{"instance_id": src["instance_id"], "name": "c2"})
	id, _ := clone["instance_id"].(string)
	if id == "" || id != clone["backend_instance_name"] {
		t.Fatalf("clone_instance {name: c2}: %v", clone)
	}
	f.ok("run_command", map[string]any{"instance_id": id, "command": "true"})
	named := f.ok("clone_instance", map[string]any{"instance_id": src["instance_id"], "name": "inst_c3"})
	if named["instance_id"] != "inst_c3" {
		t.Errorf("clone_instance {name: inst_c3}: %v", named)
	}
}

// The initialize result names the served workspace and the first call.
func TestInstructionsNameTheWorkspace(t *testing.T) {
	got := instructions(Config{DefaultRoot: "/srv/app"})
	if !strings.Contains(got, "/srv/app") || !strings.Contains(got, `create_instance {workspace_root: "/srv/app"}`) ||
		!strings.Contains(got, "enable_toolset") {
		t.Errorf("instructions: %s", got)
	}
}

// rootedSession is a session whose client declared MCP roots.
type rootedSession struct{ id string }

func (r rootedSession) Initialize()                                         {}
func (r rootedSession) Initialized() bool                                   { return true }
func (r rootedSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return nil }
func (r rootedSession) SessionID() string                                   { return r.id }
func (r rootedSession) GetClientInfo() mcp.Implementation                   { return mcp.Implementation{} }
func (r rootedSession) SetClientInfo(mcp.Implementation)                    {}
func (r rootedSession) SetClientCapabilities(mcp.ClientCapabilities)        {}
func (r rootedSession) GetClientCapabilities() mcp.ClientCapabilities {
	return mcp.ClientCapabilities{Roots: &struct {
		ListChanged bool `json:"listChanged,omitempty"`
	}{}}
}

// The loop's notifications name workspaces: a client that declared MCP
// roots hears only of those inside them, and of none before it listed
// them; one that declared none hears of every workspace the server serves.
func TestLoopLogsGoOnlyWhereTheClientMayLook(t *testing.T) {
	f := newFixture(t, simSpec)
	rooted := rootedSession{id: "rooted"}
	if f.srv.mayHear(rooted, f.root) {
		t.Error("a client whose roots are not yet listed hears of a workspace")
	}
	f.srv.roots.mu.Lock()
	f.srv.roots.seen["rooted"] = []string{"/elsewhere"}
	f.srv.roots.mu.Unlock()
	if f.srv.mayHear(rooted, f.root) {
		t.Error("a client hears of a workspace outside its roots")
	}
	f.srv.roots.mu.Lock()
	f.srv.roots.seen["rooted"] = []string{f.root}
	f.srv.roots.mu.Unlock()
	if !f.srv.mayHear(rooted, f.root) {
		t.Error("a client does not hear of a workspace inside its roots")
	}
}
