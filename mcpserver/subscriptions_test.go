package mcpserver

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxforge/sbf/spec"
)

// resources/subscribe takes only a resource of this server the caller
// may use; any other URI, and one of a workspace outside its roots, are
// refused in the same words; a listen stream is granted only such URIs.
// (Before: any URI was acknowledged and watched.)
func TestSubscriptionsOnlyToResourcesTheCallerMayUse(t *testing.T) {
	f := newFixture(t, simSpec)
	second := f.secondWorkspace()
	f.ok("create_instance", map[string]any{"workspace_root": second}) // the server knows it
	other, blind := f.caller("other", second), f.caller("blind")
	_, mine, _ := spec.WorkspaceIdentity(second)
	_, theirs, _ := spec.WorkspaceIdentity(f.root)
	own, foreign := workspacePrefix+mine+"/sandboxes", workspacePrefix+theirs+"/sandboxes"
	subscribe := func(c *caller, uri string) string {
		_, msg := f.as(c, "resources/subscribe", map[string]any{"uri": uri})
		return strings.ReplaceAll(msg, uri, "URI")
	}
	never := subscribe(other, workspacePrefix+"0000000000000000/sandboxes")
	if !strings.HasPrefix(never, codeResourceNotFound) {
		t.Fatalf("an unknown resource: %q", never)
	}
	for _, uri := range []string{foreign, workspacePrefix + theirs + "/policy", "file:///etc/passwd", "x"} {
		if got := subscribe(other, uri); got != never {
			t.Errorf("subscribing to %s: %q; want %q", uri, got, never)
		}
	}
	if got := subscribe(blind, own); got == "" {
		t.Error("a client whose roots/list failed subscribed")
	}
	if got := subscribe(other, own); got != "" {
		t.Errorf("subscribing to its own workspace's resource: %s", got)
	}
	ctx := f.srv.MCP().WithContext(context.Background(), other)
	granted := f.srv.grant(ctx, []string{foreign, own, "file:///etc/passwd", schemaURI, own})
	if !slices.Equal(granted, []string{schemaURI, own}) {
		t.Errorf("a listen stream was granted %v; want its own resource and the schema", granted)
	}
	ctx = f.srv.MCP().WithContext(context.Background(), blind)
	if granted := f.srv.grant(ctx, []string{own}); len(granted) != 0 {
		t.Errorf("a client whose roots/list failed was granted %v", granted)
	}
}
