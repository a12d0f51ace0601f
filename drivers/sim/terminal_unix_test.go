//go:build unix

package sim

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
)

func TestSimTerminalIsARealTerminal(t *testing.T) {
	d, name := runningSim(t)
	stdin, typed := io.Pipe()
	defer typed.Close()
	var out strings.Builder
	done := make(chan int, 1)
	go func() {
		code, err := d.Terminal(context.Background(), name, drivers.TerminalRequest{
			Command: `test -t 0 && echo "on a terminal, $TERM"; read x; echo "got $x"; exit 5`,
			Term:    "vt100", Size: drivers.WindowSize{Rows: 24, Cols: 80}, Stdin: stdin, Stdout: &out})
		if err != nil {
			t.Error(err)
		}
		done <- code
	}()
	io.WriteString(typed, "hello\n")
	select {
	case code := <-done:
		if code != 5 || !strings.Contains(out.String(), "on a terminal, vt100") ||
			!strings.Contains(out.String(), "got hello") {
			t.Errorf("exit %d, output %q", code, out.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the terminal command did not end")
	}
}
