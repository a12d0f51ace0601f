package cli

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
)

// Without a terminal, apply and destroy refuse to change anything and
// exit 1, saying what to add; nothing is created.
func TestApplyWithoutATerminalRefuses(t *testing.T) {
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	closedR, closedW, _ := os.Pipe()
	closedW.Close()
	defer closedR.Close()
	stdins := map[string]func() io.Reader{
		"/dev/null": func() io.Reader { return devNull },
		"a pipe":    func() io.Reader { return strings.NewReader("yes\n") },
		"closed":    func() io.Reader { return closedR },
	}
	for name, stdin := range stdins {
		for _, command := range []string{"apply", "destroy"} {
			t.Run(name+"/"+command, func(t *testing.T) {
				w := newSimWorkspace(t, simSpec)
				if command == "destroy" {
					w.run(nil, "apply", "--auto-approve")
				}
				c := w.cmd(nil, command)
				var out, errb bytes.Buffer
				c.Stdin, c.Stdout, c.Stderr = stdin(), &out, &errb
				err := c.Run()
				ee, _ := err.(*exec.ExitError)
				if ee == nil || ee.ExitCode() != 1 || !strings.Contains(errb.String(), "--auto-approve") {
					t.Fatalf("exit %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
				}
				want := 0
				if command == "destroy" {
					want = 2 // the applied sandboxes stay
				}
				if got := len(w.world()); got != want {
					t.Errorf("%d instances after a refused %s, want %d", got, command, want)
				}
			})
		}
	}
}

// On a terminal, apply asks; anything but "yes" declines with exit 1.
func TestApplyOnATerminalAsks(t *testing.T) {
	for answer, wantCode := range map[string]int{"no": 1, "yes": 0} {
		t.Run(answer, func(t *testing.T) {
			w := newSimWorkspace(t, simSpec)
			code, out := onTerminal(t, w.cmd(nil, "apply"), "Only 'yes' is accepted: ", answer)
			if code != wantCode || !strings.Contains(out, "Do you want to perform these actions?") {
				t.Errorf("answer %q: exit %d, want %d\n%s", answer, code, wantCode, out)
			}
			if created := len(w.world()) > 0; created != (answer == "yes") {
				t.Errorf("answer %q: instances %v", answer, w.world())
			}
		})
	}
}

// onTerminal runs c on a pseudo-terminal, answers the first prompt that
// ends the output so far, and returns the exit code and all the output.
func onTerminal(t *testing.T, c *exec.Cmd, prompt, answer string) (int, string) {
	t.Helper()
	tty, err := pty.Start(c)
	if err != nil {
		t.Skipf("no pty here: %v", err)
	}
	defer tty.Close()
	seen := make(chan string, 1)
	go func() {
		r := bufio.NewReader(tty)
		var buf strings.Builder
		answered := false
		for {
			b, err := r.ReadByte()
			if err != nil {
				seen <- buf.String()
				return
			}
			buf.WriteByte(b)
			if !answered && strings.HasSuffix(buf.String(), prompt) {
				answered = true
				tty.Write([]byte(answer + "\n"))
			}
		}
	}()
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		c.Process.Kill()
		t.Fatalf("%v on a terminal never finished", c.Args)
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	return code, drained(tty, seen)
}

// drained is all a terminal's reader saw once the process on it ended. What
// the process wrote last may still be in the terminal: the reader ends once
// it has read it all (the terminal then reports its end). A loaded machine
// lost a status table, and a trap's last line, to a close made at once.
func drained(tty *os.File, seen <-chan string) string {
	select {
	case out := <-seen:
		return out
	case <-time.After(5 * time.Second): // a process it left holds the terminal open
	}
	tty.Close()
	return <-seen
}
