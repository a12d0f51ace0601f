package mcpserver

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandboxforge/sbf/mcpserver/streamhttp"
	"github.com/sandboxforge/sbf/spec"
)

// The two ways a client of 2026-07-28 reaches sbf: in process (one
// registered session serves all its requests, as on stdio) and over
// Streamable HTTP (each request is served by a session of its own, which
// mcp-go never registers).
var modernTransports = []string{"in-process", "http"}

// modernClient connects a client of 2026-07-28 over a transport, handing
// it every notification.
func modernClient(t *testing.T, f *fixture, over string, note func(mcp.JSONRPCNotification)) *client.Client {
	t.Helper()
	var c *client.Client
	var err error
	switch over {
	case "http":
		h := streamhttp.New(f.srv.MCP(), streamhttp.Options{Token: testToken})
		srv := httptest.NewServer(h)
		t.Cleanup(func() { srv.Close(); h.Close() })
		c, err = client.NewStreamableHttpClient(srv.URL+"/mcp",
			transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + testToken}))
	default:
		c, err = client.NewInProcessClient(f.srv.MCP())
	}
	if err != nil {
		t.Fatal(err)
	}
	return connect(t, c, mcp.LATEST_PROTOCOL_VERSION, note)
}

// noteSink keeps every notification a client hears.
type noteSink struct {
	mu    sync.Mutex
	notes []mcp.JSONRPCNotification
}

func (s *noteSink) note(n mcp.JSONRPCNotification) {
	s.mu.Lock()
	s.notes = append(s.notes, n)
	s.mu.Unlock()
}

// of is what was heard of a method (all when method is "").
func (s *noteSink) of(method string) []mcp.JSONRPCNotification {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []mcp.JSONRPCNotification
	for _, n := range s.notes {
		if method == "" || n.Method == method {
			out = append(out, n)
		}
	}
	return out
}

// wait waits (delivery is asynchronous) until n of a method were heard.
func (s *noteSink) wait(method string, n int) []mcp.JSONRPCNotification {
	for range 1000 {
		if got := s.of(method); len(got) >= n {
			return got
		}
		time.Sleep(5 * time.Millisecond)
	}
	return s.of(method)
}

// settle gives a notification that should not come the time to come.
func settle() { time.Sleep(100 * time.Millisecond) }

const (
	acked   = string(mcp.MethodNotificationSubscriptionsAcknowledged)
	updated = string(mcp.MethodNotificationResourceUpdated)
	logLine = "notifications/message"
)

// A 2026-07-28 client subscribes by opening a subscriptions/listen stream
// that names the resource: it hears each phase or lease change on that
// stream, tagged with the stream's id, and nothing once it closed it,
// while a legacy subscriber hears the same changes. Log lines never ride
// the stream, though the listen request carried a level.
func TestModernClientHearsResourceUpdatesOnItsListenStream(t *testing.T) {
	for _, over := range modernTransports {
		t.Run(over, func(t *testing.T) {
			f := newFixture(t, simSpec)
			_, wsID, _ := spec.WorkspaceIdentity(f.root)
			uri := workspacePrefix + wsID + "/sandboxes"
			var heard, legacy noteSink
			c := modernClient(t, f, over, heard.note)
			setLevel(t, c, mcp.LoggingLevelDebug)
			lc := legacyClient(t, f, legacy.note)
			sub := mcp.SubscribeRequest{}
			sub.Params.URI = uri
			//lint:ignore SA1019 the server must keep serving the protocols that have it
			if err := lc.Subscribe(context.Background(), sub); err != nil {
				t.Fatal(err)
			}
			stop, err := c.ListenAsync(context.Background(),
				mcp.SubscriptionFilter{ResourceSubscriptions: []string{uri}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			ack := heard.wait(acked, 1)
			if len(ack) != 1 || heard.of("")[0].Method != acked {
				t.Fatalf("the stream did not open with its acknowledgement: %v", heard.of(""))
			}
			stream := fmt.Sprint(ack[0].Params.Meta[mcp.MetaKeySubscriptionID])
			expect := func(modern, old int) {
				t.Helper()
				heard.wait(updated, modern)
				legacy.wait(updated, old)
				settle()
				got, was := heard.of(updated), legacy.of(updated)
				if len(got) != modern || len(was) != old {
					t.Fatalf("%d updates on the stream (want %d), %d to the legacy subscriber (want %d)",
						len(got), modern, len(was), old)
				}
				for _, n := range got {
					if n.Params.AdditionalFields["uri"] != uri || stream == "<nil>" ||
						fmt.Sprint(n.Params.Meta[mcp.MetaKeySubscriptionID]) != stream {
						t.Fatalf("an update not of %s on stream %s: %+v", uri, stream, n.Params)
					}
				}
			}
			f.ok("create_instance", map[string]any{"workspace_root": f.root, "ttl_minutes": 8,
				"auto_bootstrap": false}) // by another client
			expect(1, 1)
			f.clock.Advance(4 * time.Minute)
			loopPass(t, f) // the lease warning: no change of phase, and no request of this client asked
			expect(1, 1)
			f.clock.Advance(5 * time.Minute)
			loopPass(t, f) // the loop expires it
			expect(2, 2)
			if lines := heard.of(logLine); len(lines) != 0 {
				t.Errorf("log lines reached the client outside its requests: %v", lines)
			}
			stop()
			f.ok("create_instance", map[string]any{"workspace_root": f.root, "auto_bootstrap": false})
			expect(2, 3)
		})
	}
}

// A 2026-07-28 client has no session level: each of its requests asks for
// log lines in its _meta. The loop's lines reach it on its requests in
// flight (a read_session waiting for output) at each request's level and
// not below it, and none between its requests.
func TestModernClientHearsTheLoopOnItsRequestsAtTheirLevel(t *testing.T) {
	for _, over := range modernTransports {
		t.Run(over, func(t *testing.T) {
			f := newFixture(t, simSpec)
			id := f.ok("create_instance", map[string]any{"workspace_root": f.root, "ttl_minutes": 8,
				"auto_bootstrap": false})["instance_id"]
			f.clock.Advance(4 * time.Minute) // 4 minutes left: inside the warning
			var warned, failures logSink
			cw, ce := modernClient(t, f, over, warned.note), modernClient(t, f, over, failures.note)
			setLevel(t, cw, mcp.LoggingLevelWarning)
			setLevel(t, ce, mcp.LoggingLevelError)
			reads := make(chan error, 2)
			var sessions []string
			for _, c := range []*client.Client{cw, ce} {
				sid := f.ok("start_session", map[string]any{"instance_id": id, "command": "cat"})["session_id"]
				sessions = append(sessions, sid.(string))
				go func() { reads <- callTool(c, "read_session", map[string]any{"session_id": sid, "wait_ms": 30000}) }()
			}
			waitInFlight(t, f, 2)
			loopPass(t, f)
			if got := waitEvents(t, &warned, 1); strings.Join(got, " ") != "warning:lease_expiring" {
				t.Errorf("a request at warning heard %v", got)
			}
			settle()
			if got := failures.events(); len(got) != 0 {
				t.Errorf("a request at error heard %v", got)
			}
			for _, sid := range sessions {
				f.ok("write_session", map[string]any{"session_id": sid, "data": "out\n"})
			}
			for range sessions {
				if err := <-reads; err != nil {
					t.Fatal(err)
				}
			}
			f.clock.Advance(5 * time.Minute)
			loopPass(t, f) // the expiry, a warning, while no request is in flight
			settle()
			if got := warned.events(); len(got) != 1 {
				t.Errorf("between requests the client heard %v", got)
			}
		})
	}
}

// callTool calls a tool and says whether it failed.
func callTool(c *client.Client, name string, args map[string]any) error {
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	res, err := c.CallTool(context.Background(), req)
	if err == nil && res.IsError {
		err = fmt.Errorf("%s: %v", name, res.Content)
	}
	return err
}

// waitInFlight waits until n requests that asked for log lines are in
// flight.
func waitInFlight(t *testing.T, f *fixture, n int) {
	t.Helper()
	for range 1000 {
		if len(f.srv.requestsInFlight("")) >= n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%d requests in flight, want %d", len(f.srv.requestsInFlight("")), n)
}

// Listen streams open and close while tools and the loop change what they
// watch: nothing races, every closed stream is forgotten, and a stream
// opened last hears the next change once.
func TestListenStreamsComeAndGoWhileTheLoopRuns(t *testing.T) {
	f := newFixture(t, simSpec)
	_, wsID, _ := spec.WorkspaceIdentity(f.root)
	filter := mcp.SubscriptionFilter{ResourceSubscriptions: []string{workspacePrefix + wsID + "/sandboxes"}}
	var wg sync.WaitGroup
	for range 4 {
		var sink noteSink
		c := modernClient(t, f, "in-process", sink.note)
		wg.Go(func() {
			for i := range 10 {
				stop, err := c.ListenAsync(context.Background(), filter, nil)
				if err != nil {
					t.Error(err)
					return
				}
				sink.wait(acked, i+1)
				stop()
			}
		})
	}
	for range 2 { // at most 3 instances a workspace
		f.ok("create_instance", map[string]any{"workspace_root": f.root, "ttl_minutes": 5, "auto_bootstrap": false})
		for range 3 { // the third pass expires it
			f.clock.Advance(2 * time.Minute)
			loopPass(t, f)
		}
	}
	wg.Wait()
	for i := 0; f.srv.openStreams() > 0; i++ {
		if i == 1000 {
			t.Fatalf("%d streams still open after their clients closed them", f.srv.openStreams())
		}
		time.Sleep(5 * time.Millisecond)
	}
	var last noteSink
	stop, err := modernClient(t, f, "in-process", last.note).ListenAsync(context.Background(), filter, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	last.wait(acked, 1)
	f.ok("create_instance", map[string]any{"workspace_root": f.root, "auto_bootstrap": false})
	last.wait(updated, 1)
	settle()
	if got := last.of(updated); len(got) != 1 {
		t.Errorf("the last stream heard %d updates of one change", len(got))
	}
}

// openStreams counts the listen streams the server keeps.
func (s *Server) openStreams() int {
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	return len(s.subs.streams)
}
