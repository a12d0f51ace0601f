package reconcile

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/sandbox"
	"github.com/sandboxforge/sbf/spec"
)

// Audit names who asked for a run, so the engine records it in the
// workspace's history where the action happens: every lifecycle step
// (up, apply, destroy, extend, prepare, a refused create included) is in
// the history whichever door asked.
type Audit struct {
	Door string // cli or mcp
	Tool string // the sbf command or MCP tool
}

// audit appends one history line per sandbox the run was about: what the
// plan did to it, or the error that stopped it, when the run began and how
// long it took.
func (e *Engine) audit(ctx context.Context, ws spec.Options, opts Options, res *Result, err error,
	start time.Time) {
	if opts.Audit == nil {
		return
	}
	root, redact := ws.Root, sandbox.Redactor(nil, nil)
	if res != nil && res.Resolved != nil {
		root, redact = res.Resolved.Root, sandbox.Redactor(res.Resolved, e.Env.getenv)
	} else if abs, _, werr := ws.Identity(); werr == nil {
		root = abs // refused before anything was resolved (a lease too long): recorded all the same
	}
	var asked []string
	if opts.Intent != nil {
		asked = opts.Intent.named()
	}
	names := slices.Clone(asked)
	if len(names) == 0 {
		names = slices.Clone(opts.Targets)
	}
	done := map[string][]string{}
	if res != nil && res.Plan != nil {
		for _, a := range res.Plan.Actions {
			if a.Sandbox == "" {
				continue
			}
			done[a.Sandbox] = append(done[a.Sandbox], string(a.Kind))
			if len(asked) == 0 && len(opts.Targets) == 0 && !slices.Contains(names, a.Sandbox) {
				names = append(names, a.Sandbox)
			}
		}
	}
	sort.Strings(names)
	history := sandbox.WorkspaceHistory(root)
	took := e.Clock.Now().Sub(start).Milliseconds()
	for _, name := range names {
		ev := sandbox.Event{Time: start.UTC(), Door: opts.Audit.Door, Tool: opts.Audit.Tool, Sandbox: name,
			InstanceID: name, Detail: strings.Join(done[name], ", "), DurationMS: took}
		if ferr := failureOf(err, name); ferr != nil {
			c := coded.Of(ferr, coded.Unknown)
			ev.ErrorCode, ev.Error = c.Code, c.Message
		}
		_ = history.Append(ctx, ev, redact) // the history must not fail the run it records
	}
}

// failureOf is the part of a run's error about one sandbox (errors name
// their sandbox), or the whole error when none names it.
func failureOf(err error, sandbox string) error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var mine []error
		for _, e := range j.Unwrap() {
			if strings.Contains(e.Error(), "sandbox "+sandbox+":") {
				mine = append(mine, e)
			}
		}
		if len(mine) > 0 {
			return errors.Join(mine...)
		}
	}
	return err
}
