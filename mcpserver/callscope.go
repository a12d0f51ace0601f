package mcpserver

import (
	"context"
	"sync"

	"github.com/sandboxforge/sbf/spec"
)

// A tool call resolves each workspace it uses once (workspace, recorded)
// and keeps it here, so the steps after its handler (the history line)
// use what the call resolved and checked instead of resolving it again.
type callScopeKey struct{}

type callScope struct {
	mu         sync.Mutex
	workspaces map[string]spec.Options // by resolved root
}

// withCallScope gives a tool call its scope.
func withCallScope(ctx context.Context) context.Context {
	return context.WithValue(ctx, callScopeKey{}, &callScope{workspaces: map[string]spec.Options{}})
}

// usedWorkspace notes that the call used the workspace ws (resolved), which
// this server serves for its caller: an MCP task belongs to the workspaces
// its call used (calltasks.go), and the call's later steps reuse ws.
func usedWorkspace(ctx context.Context, ws spec.Options) {
	noteWorkspace(ctx, ws.Root)
	if sc, _ := ctx.Value(callScopeKey{}).(*callScope); sc != nil {
		sc.mu.Lock()
		defer sc.mu.Unlock()
		sc.workspaces[ws.Root] = ws
	}
}

// workspaceUsed is the workspace the call used at root (as resolved), if
// it used one.
func workspaceUsed(ctx context.Context, root string) (spec.Options, bool) {
	sc, _ := ctx.Value(callScopeKey{}).(*callScope)
	if sc == nil {
		return spec.Options{}, false
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	ws, ok := sc.workspaces[root]
	return ws, ok
}
