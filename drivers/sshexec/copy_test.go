package sshexec

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
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
	back := filepath.Join(t.TempDir(), "back")
	if err := p.CopyOut(ctx, instance, remote, back); err != nil {
		t.Fatal(err)
	}
	if n := g.Sessions.Load() - sessions; n != 2 {
		t.Errorf("%d sessions for two copies of 5 entries; want one each", n)
	}
	for _, rel := range []string{"a.txt", "sub/deep/b.bin", "run.sh"} {
		want, _ := os.ReadFile(filepath.Join(src, rel))
		got, err := os.ReadFile(filepath.Join(back, rel))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s did not survive the round trip: %v", rel, err)
		}
	}
	if info, _ := os.Stat(filepath.Join(back, "run.sh")); info.Mode().Perm() != 0o755 {
		t.Errorf("run.sh mode = %v", info.Mode())
	}
	if target, _ := os.Readlink(filepath.Join(back, "link")); target != "a.txt" {
		t.Errorf("symlink = %q", target)
	}
	file := filepath.Join(t.TempDir(), "one.txt")
	if err := p.CopyOut(ctx, instance, filepath.Join(remote, "a.txt"), file); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(file); string(got) != "alpha" {
		t.Errorf("single file = %q", got)
	}
}

func TestCopyOutRefusesEntriesOutsideTheTarget(t *testing.T) {
	for _, name := range []string{"../escape", "tree/../../escape", "other/file", "/etc/passwd"} {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
		tw.Write([]byte("x"))
		tw.Close()
		if err := ReadTar(&buf, "tree", t.TempDir()); err == nil {
			t.Errorf("entry %q was extracted", name)
		}
	}
}
