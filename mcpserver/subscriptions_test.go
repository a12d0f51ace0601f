package mcpserver

import (
	"context"
	"fmt"
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
	// Any other URI is acknowledged, as the protocol asks (the conformance
	// suite subscribes to test://watched-resource), the same for each, and
	// nothing watches it: no oracle, no watcher.
	junk := []string{workspacePrefix + "0000000000000000/sandboxes", foreign, workspacePrefix + theirs + "/policy",
		"file:///etc/passwd", "x"}
	for _, uri := range junk {
		if got := subscribe(other, uri); got != "" {
			t.Errorf("subscribing to %s: %q; want it acknowledged", uri, got)
		}
	}
	f.srv.subs.mu.Lock()
	watched := f.srv.watchedLocked()
	f.srv.subs.mu.Unlock()
	for _, uri := range junk {
		if slices.Contains(watched, uri) {
			t.Errorf("%s is watched for a caller that may not use it", uri)
		}
	}
	// They take places among the session's subscriptions all the same.
	for i := len(junk); i < maxSubscriptionsPerSession; i++ {
		subscribe(other, fmt.Sprintf("test://junk/%d", i))
	}
	if got := subscribe(other, "test://one-too-many"); !strings.HasPrefix(got, codeSubscriptionLimit) {
		t.Errorf("a subscription past the session's bound: %q", got)
	}
	if got := subscribe(other, "x"); got != "" { // again: it takes no new place
		t.Errorf("subscribing again to x at the bound: %q", got)
	}
	for _, uri := range junk {
		f.as(other, "resources/unsubscribe", map[string]any{"uri": uri})
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
