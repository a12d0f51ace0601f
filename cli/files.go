package cli

import (
	"context"
	"fmt"
	"runtime"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/internal/termsafe"
	"github.com/sandboxforge/sbf/sandbox"
)

// guestPathArg splits [NAME:]PATH: the sandbox may be left out when the
// workspace declares one.
func (a *app) guestPathArg(arg string) (*sandbox.Target, string, error) {
	name, p := splitRemote(arg, a.declaredSandbox(), runtime.GOOS == "windows")
	if name != "" && p == "" {
		p = "." // NAME: is the guest's home, as for sbf cp
	}
	var names []string
	if name != "" {
		names = []string{name}
	}
	tgt, err := a.target(names)
	return tgt, p, err
}

func (a *app) catCommand() *cobra.Command {
	var offset int64
	var limit int64
	cmd := &cobra.Command{
		Use:   "cat [NAME:]PATH",
		Short: "Print a file of a sandbox (its bytes, unchanged)",
		Long: "cat prints a guest file to stdout as it is, binary included: sbf cat api:/etc/os-release.\n" +
			"--offset and --limit print a piece of it. A relative PATH is relative to the guest user's home.",
		Args: args(cobra.ExactArgs(1)),
		RunE: func(_ *cobra.Command, list []string) error {
			tgt, p, err := a.guestPathArg(list[0])
			if err != nil {
				return err
			}
			start := tgt.Clock.Now()
			n, err := a.catFile(a.context(), tgt, p, offset, limit)
			a.note(tgt, sandbox.Event{Tool: "cat", Path: p, Bytes: n}, start, err)
			return err
		},
	}
	cmd.Flags().Int64Var(&offset, "offset", 0, "byte to start at")
	cmd.Flags().Int64Var(&limit, "limit", 0, "bytes to print at most (0: to the end)")
	return cmd
}

// catFile prints a guest file piece by piece, each piece at most what one
// read may return, and says how many bytes it printed.
func (a *app) catFile(ctx context.Context, tgt *sandbox.Target, p string, offset, limit int64) (int64, error) {
	if limit < 0 {
		return 0, usageErrorf("--limit cannot be negative")
	}
	var printed int64
	for left := limit; limit == 0 || left > 0; {
		chunk := int64(sandbox.MaxReadLimit)
		if limit > 0 {
			chunk = min(chunk, left)
			left -= chunk
		}
		r, err := tgt.ReadFile(ctx, p, offset, int(chunk))
		if err != nil {
			return printed, err
		}
		n, err := a.stdout.Write(r.Data)
		printed += int64(n)
		if err != nil || !r.Truncated || len(r.Data) == 0 {
			return printed, err
		}
		offset = r.NextOffset
	}
	return printed, nil
}

type lsFlags struct {
	recursive, long, asJSON bool
	limit                   int
}

func (a *app) lsCommand() *cobra.Command {
	var f lsFlags
	cmd := &cobra.Command{
		Use:   "ls [NAME:]PATH",
		Short: "List a folder of a sandbox",
		Long: "ls lists a guest folder's entries (folders end in /): sbf ls api:/var/log. -R lists everything\n" +
			"below it, -l shows type, mode, size and time, --json gives the entries as data.",
		Args: lsArgs, // habits.go: without a path it is docker's ls of the sandboxes
		RunE: func(_ *cobra.Command, list []string) error {
			tgt, p, err := a.guestPathArg(list[0])
			if err != nil {
				return a.reportError(err, f.asJSON)
			}
			start := tgt.Clock.Now()
			l, err := tgt.ListFiles(a.context(), p, f.recursive, f.limit)
			a.note(tgt, sandbox.Event{Tool: "ls", Path: p, Detail: fmt.Sprintf("entries=%d", len(l.Entries))},
				start, err)
			if err != nil {
				return a.reportError(err, f.asJSON)
			}
			return a.printListing(l, f)
		},
	}
	cmd.Flags().BoolVarP(&f.recursive, "recursive", "R", false, "list everything below the folder")
	cmd.Flags().BoolVarP(&f.long, "long", "l", false, "show type, mode, size and modification time")
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print the listing as JSON")
	cmd.Flags().IntVar(&f.limit, "limit", sandbox.DefaultListLimit,
		"entries to show at most (up to "+strconv.Itoa(sandbox.MaxListLimit)+")")
	return cmd
}

func (a *app) printListing(l sandbox.Listing, f lsFlags) error {
	if f.asJSON {
		return writeJSON(a.stdout, map[string]any{"path": l.Path, "entries": nonNil(l.Entries),
			"truncated": l.Truncated})
	}
	var t *table
	if f.long {
		t = newTable(a.stdout, "TYPE", "MODE", "SIZE", "MODIFIED", "PATH")
	}
	for _, e := range l.Entries {
		name := termsafe.Line(e.Path) // one entry, one line, and a guest's name drives no terminal
		if e.Type == "directory" {
			name += "/"
		}
		if t == nil {
			fmt.Fprintln(a.stdout, name)
			continue
		}
		t.row(e.Type, e.Mode, strconv.FormatInt(e.Size, 10), e.Modified.Format("2006-01-02 15:04:05"), name)
	}
	if t != nil {
		t.flush()
	}
	if l.Truncated {
		fmt.Fprintf(a.stderr, "sbf: showing the first %d entries; --limit shows more\n", len(l.Entries))
	}
	return nil
}
