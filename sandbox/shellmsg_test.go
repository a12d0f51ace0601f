package sandbox

import (
	"strings"
	"testing"
)

// The wrapper's lines are rewritten however the stream is cut, and every
// other byte passes unchanged, at once: only the start of a line that may
// be the wrapper's is held back.
func TestWrapperLinesAreRewrittenHoweverTheStreamIsCut(t *testing.T) {
	in := "progress 10%\rprogress 50%\r\nsh: 1: eval: nosuchcmd: not found\nsh: 12: eval: Syntax error: " +
		"Unterminated quoted string\nsh: a note of the command's own\nsh: 1: eval: \x1b[31m: not found\nshe: 1\n" +
		"sh: 3: eval: last: not found"
	want := "progress 10%\rprogress 50%\r\nsbf: nosuchcmd: command not found in the guest\nsh: 12: Syntax error: " +
		"Unterminated quoted string\nsh: a note of the command's own\nsbf: \\x1b[31m: command not found in the " +
		"guest\nshe: 1\nsbf: last: command not found in the guest"
	for size := 1; size <= len(in); size++ {
		var out strings.Builder
		w := &wrapperLines{w: &out}
		for rest := in; rest != ""; {
			n := min(size, len(rest))
			if k, err := w.Write([]byte(rest[:n])); k != n || err != nil {
				t.Fatalf("write: %d %v", k, err)
			}
			rest = rest[n:]
		}
		w.Flush()
		if out.String() != want {
			t.Fatalf("in writes of %d bytes:\n%q\nwant\n%q", size, out.String(), want)
		}
	}
	var out strings.Builder
	w := &wrapperLines{w: &out}
	w.Write([]byte("prompt> "))
	w.Write([]byte("sh: 1")) // the same line: it passes
	if out.String() != "prompt> sh: 1" {
		t.Errorf("held back what cannot be the wrapper's: %q", out.String())
	}
	w.Write([]byte("\nsh: 2"))
	if out.String() != "prompt> sh: 1\n" {
		t.Errorf("a line that may be the wrapper's: %q", out.String())
	}
	if got := rewriteWrapperLines("a\nsh: 1: eval: x: not found\n"); got != "a\nsbf: x: command not found in the guest\n" {
		t.Errorf("kept stderr: %q", got)
	}
}
