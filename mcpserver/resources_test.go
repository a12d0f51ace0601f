package mcpserver

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandboxforge/sbf/internal/policy"
	"github.com/sandboxforge/sbf/spec"
)

func readResource(t *testing.T, c *client.Client, uri string) (map[string]any, error) {
	t.Helper()
	req := mcp.ReadResourceRequest{}
	req.Params.URI = uri
	res, err := c.ReadResource(context.Background(), req)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(res.Contents[0].(mcp.TextResourceContents).Text), &doc); err != nil {
		t.Fatalf("%s is not JSON: %v", uri, err)
	}
	return doc, nil
}

func resourceURIs(t *testing.T, c *client.Client) []string {
	t.Helper()
	res, err := c.ListResources(context.Background(), mcp.ListResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range res.Resources {
		uris = append(uris, r.URI)
	}
	return uris
}

// The schema, a workspace's sandboxes and its effective policy are
// resources; a workspace a tool reaches later joins the list, and the
// client is told.
func TestResources(t *testing.T) {
	f := newFixture(t, simSpec+"[sync]\nprotect = [\"secrets/**\"]\n")
	_, wsID, _ := spec.WorkspaceIdentity(f.root)
	var changed atomic.Int32
	f.c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationResourcesListChanged) {
			changed.Add(1)
		}
	})
	uris := strings.Join(resourceURIs(t, f.c), " ")
	for _, want := range []string{schemaURI, "sbf://workspaces/" + wsID + "/sandboxes",
		"sbf://workspaces/" + wsID + "/policy", "sbf://workspaces/" + wsID + "/snapshots"} {
		if !strings.Contains(uris, want) {
			t.Errorf("resources/list lacks %s: %s", want, uris)
		}
	}
	tmpl, err := f.c.ListResourceTemplates(context.Background(), mcp.ListResourceTemplatesRequest{})
	if err != nil || len(tmpl.ResourceTemplates) != 3 {
		t.Fatalf("templates: %v %v", tmpl, err)
	}
	schema, err := readResource(t, f.c, schemaURI)
	if err != nil || schema["properties"].(map[string]any)["vm"] == nil {
		t.Fatalf("schema: %v", err)
	}
	id := f.ok("create_instance", map[string]any{"workspace_root": f.root})["instance_id"].(string)
	inv, err := readResource(t, f.c, "sbf://workspaces/"+wsID+"/sandboxes")
	if err != nil {
		t.Fatal(err)
	}
	rows := inv["sandboxes"].([]any)
	if len(rows) != 1 || rows[0].(map[string]any)["instance_id"] != id ||
		rows[0].(map[string]any)["live_status"] != "running" {
		t.Errorf("inventory: %v", inv)
	}
	pol, err := readResource(t, f.c, "sbf://workspaces/"+wsID+"/policy")
	if err != nil {
		t.Fatal(err)
	}
	text := mustJSON(pol)
	if !strings.Contains(text, `"allowed_roots":["`+f.root+`"]`) || !strings.Contains(text, "secrets/**") ||
		!strings.Contains(text, `".git"`) || !strings.Contains(text, `"default":{"allow":[],"egress":"allow"}`) {
		t.Errorf("policy: %s", text)
	}
	f.ok("snapshot_instance", map[string]any{"instance_id": id, "name": "clean"})
	snaps, err := readResource(t, f.c, "sbf://workspaces/"+wsID+"/snapshots")
	if err != nil || snaps["count"] != float64(1) || !strings.Contains(mustJSON(snaps), `"name":"clean"`) {
		t.Errorf("snapshots: %v %v", snaps, err)
	}
	// Another workspace, reached by a tool, joins the list.
	other := filepath.Join(t.TempDir(), "other")
	os.MkdirAll(other, 0o755)
	os.WriteFile(filepath.Join(other, spec.FileName), []byte(simSpec), 0o644)
	f.ok("validate_workspace_config", map[string]any{"workspace_root": other})
	f.ok("create_instance", map[string]any{"workspace_root": other})
	_, otherID, _ := spec.WorkspaceIdentity(other)
	if uris := strings.Join(resourceURIs(t, f.c), " "); !strings.Contains(uris, otherID) {
		t.Errorf("the other workspace is not listed: %s", uris)
	}
	for deadline := time.Now().Add(5 * time.Second); changed.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no notifications/resources/list_changed")
		}
	}
	if _, err := readResource(t, f.c, "sbf://workspaces/ws_000000000000/sandboxes"); err == nil {
		t.Error("an unknown workspace's resource was read")
	}

	// A server that does not serve the other workspace will not read it.
	_, err = readResource(t, narrowClient(t, f), "sbf://workspaces/"+otherID+"/policy")
	if err == nil || !strings.Contains(err.Error(), "no workspace "+otherID+" is known") ||
		strings.Contains(err.Error(), other) {
		t.Errorf("reading a workspace the server does not serve: %v", err)
	}
}

// narrowClient is a client of a second server over f's host state that
// serves f's workspace only.
func narrowClient(t *testing.T, f *fixture) *client.Client {
	narrow := New(Config{Engine: f.srv.cfg.Engine, Settings: f.srv.cfg.Settings, Host: f.srv.cfg.Host,
		DefaultRoot: f.root, Policy: policy.Policy{WorkspaceRoots: []string{f.root}}})
	c, err := client.NewInProcessClient(narrow.MCP())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.Start(context.Background())
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	if _, err := c.Initialize(context.Background(), init); err != nil {
		t.Fatal(err)
	}
	return c
}
