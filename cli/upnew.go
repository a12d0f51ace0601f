package cli

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sandboxforge/sbf/internal/coded"
	"github.com/sandboxforge/sbf/spec"
	"github.com/sandboxforge/sbf/state"
)

// confirmNewNames stands between a typo and a new VM: `sbf up dve` for
// `dev` would otherwise boot a 4 GiB sandbox nobody asked for. A name no
// file declares and the state file never recorded is made only when
// --new (or --auto-approve) says so, or a person at a terminal agrees to
// the plan that follows, which this note (naming the closest declared
// sandboxes) introduces: one question, the plan's.
func (a *app) confirmNewNames(names []string, allowed bool) error {
	if allowed || len(names) == 0 {
		return nil
	}
	r, err := a.loadSpec(nil)
	if err != nil {
		return nil // the converge that follows says what is wrong, in its own words
	}
	known := map[string]bool{}
	var declared []string
	for n := range r.Config.Sandboxes {
		known[n] = true
		declared = append(declared, n)
	}
	if f, err := state.Read(filepath.Join(r.Root, spec.Dir), r.Root, r.WorkspaceID); err == nil {
		for n := range f.Sandboxes {
			known[n] = true
		}
	}
	slices.Sort(declared)
	for _, n := range names {
		if known[n] {
			continue
		}
		hint := ""
		if near := closestNames(n, declared); len(near) > 0 {
			hint = " (did you mean " + strings.Join(near, " or ") + "?)"
		}
		if !isTerminal(a.stdin) {
			return coded.New(coded.InvalidArguments, map[string]any{"sandbox": n, "declared": declared},
				"no file declares a sandbox %q and none was made before%s: run 'sbf up %s --new --auto-approve' "+
					"to make it an ad-hoc sandbox with the [vm] defaults", n, hint, n)
		}
		fmt.Fprintf(a.stdout, "No file declares a sandbox %q%s: the plan below makes it a new ad-hoc sandbox "+
			"with the [vm] defaults.\n\n", n, hint)
	}
	return nil
}

// closestNames are the declared names spelled most like name: a typo is
// one or two edits away (dve, devv, api2 → api).
func closestNames(name string, declared []string) []string {
	best, bestDist := []string(nil), max(2, len(name)/3)+1
	for _, d := range declared {
		dist := editDistance(name, d)
		switch {
		case dist < bestDist:
			best, bestDist = []string{d}, dist
		case dist == bestDist:
			best = append(best, d)
		}
	}
	return best
}
