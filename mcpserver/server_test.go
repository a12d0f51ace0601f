package mcpserver

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandboxforge/sbf/drivers"
	"github.com/sandboxforge/sbf/drivers/guest/composefile"
	"github.com/sandboxforge/sbf/drivers/sim"
	"github.com/sandboxforge/sbf/internal/clock"
	"github.com/sandboxforge/sbf/internal/flock"
	"github.com/sandboxforge/sbf/internal/hostcap"
	"github.com/sandboxforge/sbf/internal/policy"
	"github.com/sandboxforge/sbf/reconcile"
	"github.com/sandboxforge/sbf/spec"
)

var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

type fixture struct {
	t       testing.TB
	root    string
	hostDir string
	simDir  string
	clock   *clock.Fake
	srv     *Server
	c       *client.Client
	probe   hostcap.Capacity
	policy  policy.Policy // the operator's, for the next start
	// wrap, when set, is the backend the next start builds around the sim
	// (one that adds a capability the sim lacks).
	wrap func(*sim.Driver) reconcile.Driver
}

func plenty() hostcap.Capacity {
	mem, disk := 64.0, 500.0
	return hostcap.Capacity{CPUs: 16, MemoryAvailableGiB: &mem, DiskFreeGiB: &disk}
}

func newFixture(t testing.TB, specText string) *fixture {
	t.Helper()
	base := t.TempDir()
	f := &fixture{t: t, root: filepath.Join(base, "ws"), hostDir: filepath.Join(base, "host"),
		simDir: filepath.Join(base, "world"), clock: clock.NewFake(t0), probe: plenty()}
	os.MkdirAll(f.root, 0o755)
	os.WriteFile(filepath.Join(f.root, spec.FileName), []byte(specText), 0o644)
	f.start(Settings{SweepInterval: time.Minute, Session: "local"})
	return f
}

// start builds a server over the same host state, as a restarted process
// would see it.
func (f *fixture) start(settings Settings) {
	if settings.Toolsets == nil { // every tool listed, so tests that walk the list see them all
		settings.Toolsets = []string{ToolsetsAll}
	}
	eng := &reconcile.Engine{
		Clock: f.clock, HostDir: f.hostDir, Parallelism: 4, LockTimeout: time.Minute, Policy: f.policy,
		Who:   flock.Holder{Command: "mcp test", PID: os.Getpid()},
		Probe: func(string) hostcap.Capacity { return f.probe },
		Env:   reconcile.LayerEnv{Compose: composefile.LoadProject},
		Drivers: func(name string, _ *spec.Resolved) (reconcile.Driver, error) {
			if name != sim.Name {
				return nil, &drivers.UnavailableError{Driver: name, Reason: "limactl not found in PATH",
					ProbableCause: "backend_binary_missing", NextSteps: []string{"install Lima"}}
			}
			d, err := sim.New(sim.Options{Dir: f.simDir, Clock: f.clock})
			if err != nil || f.wrap == nil {
				return d, err
			}
			return f.wrap(d), nil
		},
	}
	f.srv = New(Config{Engine: eng, Settings: settings, Host: spec.Host{OS: "linux", Arch: "amd64"},
		DefaultRoot: f.root, Version: "test", Policy: f.policy})
	c, err := client.NewInProcessClient(f.srv.MCP())
	if err != nil {
		f.t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		f.t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { c.Close() })
	f.c = c
}

// call invokes a tool and decodes its structured result; isError tells
// whether it failed.
func (f *fixture) call(name string, args map[string]any) (out map[string]any, isError bool) {
	f.t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	res, err := f.c.CallTool(context.Background(), req)
	if err != nil {
		f.t.Fatalf("%s: %v", name, err)
	}
	text := res.Content[0].(mcp.TextContent).Text
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		if res.IsError {
			return map[string]any{"message": text}, true
		}
		f.t.Fatalf("%s: result is not JSON: %s", name, text)
	}
	f.checkOutput(name, res) // toolschema_test.go: every result matches its tool's output schema
	return out, res.IsError
}

func (f *fixture) ok(name string, args map[string]any) map[string]any {
	f.t.Helper()
	out, isErr := f.call(name, args)
	if isErr {
		f.t.Fatalf("%s failed: %v", name, out)
	}
	return out
}

func (f *fixture) fails(name string, args map[string]any, code string) map[string]any {
	f.t.Helper()
	out, isErr := f.call(name, args)
	if !isErr || out["error_code"] != code {
		f.t.Fatalf("%s: got %v, want error %s", name, out, code)
	}
	if _, ok := out["details"].(map[string]any); !ok || out["message"] == "" {
		f.t.Fatalf("%s: error envelope lacks message or details: %v", name, out)
	}
	return out
}

func (f *fixture) world() map[string]bool {
	d, _ := sim.New(sim.Options{Dir: f.simDir})
	list, _ := d.List(context.Background())
	out := map[string]bool{}
	for _, i := range list {
		out[i.Name] = true
	}
	return out
}

func keys(m map[string]any) string { return strings.Join(slices.Sorted(maps.Keys(m)), ",") }

func hasKeys(t *testing.T, what string, m map[string]any, want ...string) {
	t.Helper()
	for _, k := range want {
		if _, ok := m[k]; !ok {
			t.Errorf("%s lacks v1 field %q (has %s)", what, k, keys(m))
		}
	}
}

const simSpec = "[vm]\ndriver = \"sim\"\n"
