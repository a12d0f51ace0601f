//go:build unix

package sshexec

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
)

func TestTerminalRunsOnAPseudoTerminalThatFollowsTheWindow(t *testing.T) {
	p, _ := guest(t, Fallbacks{})
	stdin, typed := io.Pipe()
	defer typed.Close()
	out := newWatchedBuffer()
	resize := make(chan drivers.WindowSize, 1)
	done := make(chan int, 1)
	go func() {
		code, err := p.Terminal(context.Background(), instance, drivers.TerminalRequest{
			Command: `tty; echo "term=$TERM"; while read x; do [ "$x" = q ] && exit 3; stty size; done`,
			Term:    "vt100", Size: drivers.WindowSize{Rows: 24, Cols: 80}, Resize: resize,
			Stdin: stdin, Stdout: out})
		if err != nil {
			t.Error(err)
		}
		done <- code
	}()
	out.waitFor(t, "term=vt100")
	if !strings.Contains(out.String(), "/dev/pts/") {
		t.Errorf("not on a terminal: %q", out.String())
	}
	io.WriteString(typed, "\n")
	out.waitFor(t, "24 80")
	resize <- drivers.WindowSize{Rows: 30, Cols: 100}
	// The new size and the next line travel apart; ask until it shows.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(),
		"30 100"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the window change never reached the terminal: %q", out.String())
		}
		io.WriteString(typed, "\n")
	}
	io.WriteString(typed, "q\n")
	select {
	case code := <-done:
		if code != 3 {
			t.Errorf("exit code %d, want 3", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the terminal command did not end")
	}
}
