package cli

import (
	"cmp"
	"fmt"
	"path"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sandboxforge/sbf/internal/hostpath"
	"github.com/sandboxforge/sbf/internal/termsafe"
	"github.com/sandboxforge/sbf/sandbox"
)

func (a *app) cpCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cp SRC DST",
		Short: "Copy files or folders between the host and a sandbox (NAME:PATH names the sandbox side)",
		Long: "cp copies a file or a folder in one stream, by docker cp's rules: a folder copied to a folder that\n" +
			"exists lands inside it under its own name (SRC/. copies its contents instead); to a path that does not\n" +
			"exist, it is made with the folder's contents; a destination ending in / must be an existing folder;\n" +
			"the folder holding a new path must exist. Exactly one side names a sandbox; NAME: alone is the guest's\n" +
			"home folder. - as DST writes a tar archive of SRC to stdout, - as SRC unpacks one from stdin into\n" +
			"an existing guest folder (docker cp's -); neither to or from a terminal.",
		Example: "  sbf cp ./src api:/work          # makes /work/src when /work exists\n" +
			"  sbf cp ./src/. api:/work/src    # the contents of ./src into /work/src\n" +
			"  sbf cp notes.txt api:           # into the guest's home folder\n" +
			"  sbf cp api:/work/out ./out      # a guest folder back to the host\n" +
			"  sbf cp api:/etc/hostname - | tar -xO   # a tar archive on stdout",
		Args:              args(cobra.ExactArgs(2)),
		ValidArgsFunction: a.completeCopyPath,
		RunE: func(_ *cobra.Command, list []string) error {
			if list[0] == stdio || list[1] == stdio {
				return a.cpStream(list[0], list[1]) // cpstream.go: a tar archive on stdin or stdout
			}
			declared := a.declaredSandbox()
			srcBox, src := splitRemote(list[0], declared, runtime.GOOS == "windows")
			dstBox, dst := splitRemote(list[1], declared, runtime.GOOS == "windows")
			if (srcBox == "") == (dstBox == "") {
				return usageErrorf("exactly one of SRC and DST must be NAME:PATH")
			}
			name := srcBox + dstBox
			tgt, policy, err := a.copyTarget(name)
			if err != nil {
				return err
			}
			cwd := a.hostBase()
			ctx := a.context()
			start := tgt.Clock.Now()
			if dstBox != "" {
				to, err := cpPlan(hostSide(cwd, src))(guestSide(ctx, tgt, dst))
				if err == nil {
					err = tgt.CopyIn(ctx, policy, cwd, filepath.Clean(src), path.Clean(to))
				}
				a.note(tgt, sandbox.Event{Tool: "cp", Path: dst, Detail: "from " + src}, start, err) // history.go
				if err != nil {
					return err
				}
				fmt.Fprintf(a.stderr, "copied %s to %s:%s\n", src, name, to)
				return nil
			}
			to, err := cpPlan(guestSide(ctx, tgt, src))(hostSide(cwd, dst))
			var rep hostpath.Report
			if err == nil {
				rep, err = tgt.CopyOut(ctx, policy, cwd, path.Clean(cmp.Or(src, ".")), filepath.Clean(to))
			}
			a.note(tgt, sandbox.Event{Tool: "cp", Path: src, Detail: "to " + dst}, start, err)
			a.reportSkipped(rep)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "copied %s:%s to %s\n", name, src, to)
			return nil
		},
	}
	a.addAllowPath(cmd)
	return cmd
}

// cpPlan chains the two sides' descriptions into cpTarget, keeping the
// first error.
func cpPlan(src cpSide, err error) func(cpSide, error) (string, error) {
	return func(dst cpSide, err2 error) (string, error) {
		if err != nil {
			return "", err
		}
		if err2 != nil {
			return "", err2
		}
		return cpTarget(src, dst)
	}
}

// reportSkipped says what a copy from a sandbox left out, on stderr.
func (a *app) reportSkipped(rep hostpath.Report) {
	for _, l := range rep.SkippedLinks {
		fmt.Fprintf(a.stderr, "sbf: skipped the link %s -> %s: it leads outside the destination\n",
			termsafe.Line(l.Path), termsafe.Line(l.Target))
	}
	for _, p := range rep.SkippedPaths {
		why := "sbf protects it from what a sandbox writes (" + p.Rule + ")"
		if p.Rule == hostpath.UnnamableRule {
			why = p.Reason
		}
		fmt.Fprintf(a.stderr, "sbf: skipped %s: %s\n", termsafe.Line(p.Path), termsafe.Line(why))
	}
}

func (a *app) addAllowPath(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&a.policyFlags.allow, "allow-path", nil,
		"host `DIR` this command may read or write besides the workspace (repeatable; also SBF_ALLOWED_PATHS)")
}

// splitRemote splits NAME:PATH. A sandbox name wins over a drive letter
// (sandbox "a" in a:/x), unless the path is clearly a Windows one: X:\…
// always is, and on Windows so is X:… when no sandbox X is declared.
func splitRemote(s string, declared func(string) bool, windows bool) (sandbox, path string) {
	name, p, ok := strings.Cut(s, ":")
	if !ok || name == "" || strings.ContainsAny(name, `/\.`) {
		return "", s
	}
	if len(name) == 1 && (strings.HasPrefix(p, `\`) || windows && !declared(name)) {
		return "", s
	}
	return name, p
}

// declaredSandbox reports whether the workspace declares a sandbox; the
// spec is read at most once, and only for a one-letter name.
func (a *app) declaredSandbox() func(string) bool {
	var names map[string]bool
	return func(name string) bool {
		if names == nil {
			names = map[string]bool{}
			if r, err := a.loadSpec(nil); err == nil {
				for n := range r.Config.Sandboxes {
					names[n] = true
				}
			}
		}
		return names[name]
	}
}
