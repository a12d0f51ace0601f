//go:build unix

package sshexec

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxforge/sbf/drivers"
)

// When the connection goes, the guest shell ends rather than loop.
func TestTheGuestShellEndsWithItsClient(t *testing.T) {
	p, _ := guest(t, Fallbacks{})
	res, err := p.Exec(context.Background(), instance, drivers.ExecRequest{Command: "echo $$"})
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(res.Stdout))
	if err != nil {
		t.Fatalf("the shell's pid: %q", res.Stdout)
	}
	p.Close()
	for start := time.Now(); syscall.Kill(pid, 0) == nil; time.Sleep(20 * time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("the guest shell %d still runs 10 s after its client closed", pid)
		}
	}
}
