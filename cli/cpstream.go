package cli

import (
	"cmp"
	"errors"
	"fmt"
	"path"
	"runtime"

	"github.com/sandboxforge/sbf/sandbox"
)

// stdio is "-" in cp's SRC or DST: docker cp's tar archive on stdin or
// stdout.
const stdio = "-"

// cpStream is `sbf cp NAME:PATH -` (a tar archive of PATH on stdout) and
// `sbf cp - NAME:DIR` (a tar archive on stdin unpacked into DIR), as
// docker cp has them. A terminal on that side is refused: an archive is
// no text to show, and none is typed.
func (a *app) cpStream(src, dst string) error {
	declared := a.declaredSandbox()
	windows := runtime.GOOS == "windows"
	srcBox, srcPath := splitRemote(src, declared, windows)
	dstBox, dstPath := splitRemote(dst, declared, windows)
	switch {
	case src == stdio && dst == stdio, src == stdio && dstBox == "", dst == stdio && srcBox == "":
		return usageErrorf("- (a tar archive on stdin or stdout) goes with a sandbox's side: " +
			"sbf cp NAME:PATH - | tar -x, or tar -c . | sbf cp - NAME:DIR")
	case dst == stdio && isTerminal(a.stdout):
		return &exitError{code: 1, err: errors.New("not writing a tar archive to a terminal: pipe it " +
			"(sbf cp " + src + " - | tar -x) or send it to a file (> out.tar)")}
	case src == stdio && isTerminal(a.stdin):
		return &exitError{code: 1, err: errors.New("sbf cp - NAME:DIR reads a tar archive on stdin, and stdin " +
			"is a terminal: pipe one in (tar -c . | sbf cp - " + dst + ")")}
	}
	name := srcBox + dstBox
	tgt, policy, err := a.copyTarget(name)
	if err != nil {
		return err
	}
	ctx, start := a.context(), tgt.Clock.Now()
	if dst == stdio {
		from, err := guestSide(ctx, tgt, srcPath)
		if err == nil && !from.exists {
			err = cpError(from.typed, "%s: no such file or folder", from.typed)
		}
		var n int64
		if err == nil {
			n, err = tgt.ArchiveOut(ctx, path.Clean(cmp.Or(srcPath, ".")), a.stdout, policy.MaxCopyBytes)
		}
		a.note(tgt, sandbox.Event{Tool: "cp", Path: srcPath, Detail: "to stdout (tar)", Bytes: n}, start, err)
		return err
	}
	into, err := guestSide(ctx, tgt, dstPath)
	if err == nil && !into.dir {
		// docker cp's rule: the archive's entries land in a folder that is there.
		err = cpError(into.typed, "the folder %s does not exist (an archive on stdin is unpacked into an existing "+
			"folder: make it first)", into.typed)
	}
	if err == nil {
		err = tgt.ArchiveIn(ctx, a.stdin, path.Clean(into.typed))
	}
	a.note(tgt, sandbox.Event{Tool: "cp", Path: dstPath, Detail: "from stdin (tar)"}, start, err)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "unpacked the archive from stdin into %s:%s\n", name, into.typed)
	return nil
}
