//go:build unix

package docker

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/sandboxforge/sbf/sandbox/sandboxtest"
	"github.com/sandboxforge/sbf/spec"
)

// A FIFO named like a dependency file is skipped, not waited on.
func TestWorkspaceStateSkipsAFIFO(t *testing.T) {
	root := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(root, "Dockerfile"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := spec.Defaults(spec.Host{OS: "linux"}).Build
	if st := ReadWorkspaceState(context.Background(), root, b, sandboxtest.T0); st.DockerfileHash != nil {
		t.Errorf("a FIFO was hashed: %+v", st)
	}
}
