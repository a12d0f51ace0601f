package sshexec

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/sandboxforge/sbf/internal/testutil"
)

func TestCopyRoundTrip(t *testing.T) {
	p, g := guest(t, Fallbacks{})
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "sub", "deep"), 0o755)
	os.WriteFile(filepath.Join(src, "a.txt"), []byte("alpha"), 0o644)
	os.WriteFile(filepath.Join(src, "sub", "deep", "b.bin"), bytes.Repeat([]byte{0, 1, 2}, 100000), 0o600)
	os.WriteFile(filepath.Join(src, "run.sh"), []byte("#!/bin/sh\n"), 0o755)
	os.Symlink("a.txt", filepath.Join(src, "link"))
	// The test guest is this host, so "remote" paths are local ones.
	remote := filepath.Join(t.TempDir(), "in", "guest", "tree")
	sessions := g.Sessions.Load()
	ctx := context.Background()
	if err := p.CopyIn(ctx, instance, src, remote); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := p.GetArchive(ctx, instance, remote, &out); err != nil {
		t.Fatal(err)
	}
	if n := g.Sessions.Load() - sessions; n != 2 {
		t.Errorf("%d sessions for a copy in and an archive out of 5 entries; want one each", n)
	}
	back := testutil.ReadTar(t, out.Bytes())
	for _, rel := range []string{"a.txt", "sub/deep/b.bin", "run.sh"} {
		want, _ := os.ReadFile(filepath.Join(src, rel))
		if got := back["tree/"+rel].Body; got != string(want) {
			t.Errorf("%s did not survive the round trip: %d bytes, want %d", rel, len(got), len(want))
		}
	}
	if m := back["tree/run.sh"].Mode; m != 0o755 {
		t.Errorf("run.sh mode = %o", m)
	}
	if target := back["tree/link"].Link; target != "a.txt" {
		t.Errorf("symlink = %q", target)
	}
	out.Reset()
	if err := p.GetArchive(ctx, instance, filepath.Join(remote, "a.txt"), &out); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ReadTar(t, out.Bytes()); len(got) != 1 || got["a.txt"].Body != "alpha" {
		t.Errorf("single file = %+v", got)
	}
}
