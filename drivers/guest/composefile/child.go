package composefile

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"

	"github.com/sandboxforge/sbf/drivers/guest"
	"github.com/sandboxforge/sbf/drivers/guest/composerun"
	"github.com/sandboxforge/sbf/internal/confine"
)

// Child is `sbf-server compose-load`, which sbf and sbf-server run for
// every compose load (drivers/guest/composerun): it reads the request on
// in, confines this process to reading the workspace (no other file, no
// write, exec, network or signal out) and bounds its CPU time and memory
// (composerun.ChildLimits) before it reads anything there, loads, and
// prints the answer on out. It returns the exit code.
func Child(ctx context.Context, in io.Reader, out, stderr io.Writer) int {
	var req composerun.Request
	if err := json.NewDecoder(io.LimitReader(in, 16<<20)).Decode(&req); err != nil {
		fmt.Fprintf(stderr, "%s: reading the request: %v\n", composerun.Command, err)
		return 2
	}
	if err := json.NewEncoder(out).Encode(serve(ctx, req.Options)); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", composerun.Command, err)
		return 1
	}
	return 0
}

func serve(ctx context.Context, o guest.LoadOptions) composerun.Answer {
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return composerun.AnswerFor(nil, err)
	}
	o.Root = root // before the working folder changes
	// Its CPU time and address space first (measured from /proc, which
	// the confinement closes), the collector working before the address
	// space runs out rather than after; then the files.
	limits, err := confine.Bound(composerun.ChildLimits)
	if err != nil {
		return composerun.AnswerFor(nil, fmt.Errorf("the compose loader read nothing: %w", err))
	}
	debug.SetMemoryLimit(composerun.ChildLimits.AddressSpace / 2)
	rep, err := confine.Self(confine.Policy{Read: []string{root}})
	if err != nil {
		return composerun.AnswerFor(nil, fmt.Errorf("the compose loader read nothing: %w", err))
	}
	// compose-go resolves a nested include's env files against its working
	// folder, and the check (check.go) expects the project directory there.
	dir := root
	if o.Compose.ProjectDirectory != "" {
		dir = join(root, o.Compose.ProjectDirectory)
	}
	_ = os.Chdir(dir) // a folder that is not there is LoadProject's to report
	ans := composerun.AnswerFor(LoadProject(ctx, o))
	ans.Confinement = rep.String() + "; " + limits.String()
	return ans
}
