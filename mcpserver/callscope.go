package mcpserver

import (
	"context"
	"sync"

	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// A tool call resolves each workspace it uses once (workspace, recorded),
// each instance it names once (instance) and loads each spec once, and
// keeps them here, so the steps after its handler (the history line) use
// what the call resolved and checked instead of resolving it again.
type callScopeKey struct{}

type callScope struct {
	mu         sync.Mutex
	workspaces map[string]spec.Options     // by resolved root
	instances  map[string]state.IndexEntry // by MCP instance id
	specs      map[string]*spec.Resolved   // by resolved root
}

// withCallScope gives a tool call its scope.
func withCallScope(ctx context.Context) context.Context {
	return context.WithValue(ctx, callScopeKey{}, &callScope{workspaces: map[string]spec.Options{},
		instances: map[string]state.IndexEntry{}, specs: map[string]*spec.Resolved{}})
}

// note keeps v under key in the call's scope, in the map pick chooses.
func note[V any](ctx context.Context, pick func(*callScope) map[string]V, key string, v V) {
	if sc, _ := ctx.Value(callScopeKey{}).(*callScope); sc != nil {
		sc.mu.Lock()
		defer sc.mu.Unlock()
		pick(sc)[key] = v
	}
}

// noted is what the call kept under key, if it kept anything.
func noted[V any](ctx context.Context, pick func(*callScope) map[string]V, key string) (V, bool) {
	sc, _ := ctx.Value(callScopeKey{}).(*callScope)
	if sc == nil {
		var none V
		return none, false
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	v, ok := pick(sc)[key]
	return v, ok
}

func workspacesOf(sc *callScope) map[string]spec.Options    { return sc.workspaces }
func instancesOf(sc *callScope) map[string]state.IndexEntry { return sc.instances }
func specsOf(sc *callScope) map[string]*spec.Resolved       { return sc.specs }

// usedWorkspace notes that the call used the workspace ws (resolved), which
// this server serves for its caller: an MCP task belongs to the workspaces
// its call used (calltasks.go), and the call's later steps reuse ws.
func usedWorkspace(ctx context.Context, ws spec.Options) {
	noteWorkspace(ctx, ws.Root)
	note(ctx, workspacesOf, ws.Root, ws)
}

// workspaceUsed is the workspace the call used at root (as resolved), if
// it used one.
func workspaceUsed(ctx context.Context, root string) (spec.Options, bool) {
	return noted(ctx, workspacesOf, root)
}
