//go:build unix

package gitstate

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
)

// A FIFO where a .gitignore belongs would hold a reader that opens it
// until someone writes: the read must go on without it.
func TestAFIFOInTheWorkspaceDoesNotHoldTheRead(t *testing.T) {
	ws, _ := committed(t)
	rm(t, ws, ".gitignore")
	rm(t, ws, ".git/info/exclude")
	for _, name := range []string{".gitignore", "dir/fifo", ".git/info/exclude"} {
		mkdir(t, ws, filepath.Dir(name))
		if err := syscall.Mkfifo(filepath.Join(ws, filepath.FromSlash(name)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st, err := Read(context.Background(), ws)
	if err != nil || !st.Dirty {
		t.Errorf("Read = %+v, %v; want dirty (.gitignore is gone)", st, err)
	}
}
