package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"time"
)

// uid is the image's user and group, 65532 as in distroless images; the Deployments in
// deploy/kubevirt run as it.
const uid = 65532

// The user has an entry because programs that look up their user (os/user, ssh) read /etc/passwd,
// which a scratch image lacks. Its home is made here for a plain `docker run`; the Deployments
// mount a writable one, since their root file system is read-only.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\nsbf:x:65532:65532:sbf:/home/sbf:/sbin/nologin\n"
	group  = "root:x:0:\nsbf:x:65532:\n"
)

// An entry is one file or folder of the layer: its contents are body, or the file at path.
type entry struct {
	name string // relative, as in image layers; a folder's ends in /
	mode int64
	uid  int // and gid
	body string
	path string
}

// rootfs is the image's whole file system, folders before what they hold, in name order so the
// layer's bytes depend on nothing but its contents. There is no CA bundle: the only TLS peer is
// the kube API, which client-go trusts through the service account's ca.crt, and a bundle copied
// from the build machine would tie the digest to that machine and go stale in the image (for
// other peers, mount one and point SSL_CERT_FILE at it).
func rootfs(bins map[string]string) []entry {
	entries := []entry{
		{name: "etc/", mode: 0o755},
		{name: "etc/group", mode: 0o644, body: group},
		{name: "etc/passwd", mode: 0o644, body: passwd},
		{name: "home/", mode: 0o755},
		{name: "home/sbf/", mode: 0o700, uid: uid},
		{name: "tmp/", mode: 0o1777},
		{name: "usr/", mode: 0o755},
		{name: "usr/local/", mode: 0o755},
		{name: "usr/local/bin/", mode: 0o755},
	}
	// Owned by root, so the process cannot replace its own programs.
	for _, p := range programs {
		entries = append(entries, entry{name: "usr/local/bin/" + p, mode: 0o755, path: bins[p]})
	}
	return entries
}

// layer returns the entries as a gzip-compressed tar and the uncompressed tar's digest (the
// config's diff_id). Every time stamp is mtime, and gzip's header carries no name or time.
func layer(entries []entry, mtime time.Time) (gz []byte, diffID string, err error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	diff := sha256.New()
	tw := tar.NewWriter(io.MultiWriter(zw, diff))
	for _, e := range entries {
		if err := writeEntry(tw, e, mtime); err != nil {
			return nil, "", fmt.Errorf("adding %s to the layer: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, "", fmt.Errorf("ending the layer's tar: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, "", fmt.Errorf("compressing the layer: %w", err)
	}
	return buf.Bytes(), fmt.Sprintf("sha256:%x", diff.Sum(nil)), nil
}

func writeEntry(tw *tar.Writer, e entry, mtime time.Time) error {
	h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.uid, ModTime: mtime, Format: tar.FormatUSTAR}
	if e.name[len(e.name)-1] == '/' {
		h.Typeflag = tar.TypeDir
		return tw.WriteHeader(h)
	}
	h.Typeflag = tar.TypeReg
	if e.path == "" {
		h.Size = int64(len(e.body))
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err := io.WriteString(tw, e.body)
		return err
	}
	f, err := os.Open(e.path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", e.path)
	}
	h.Size = st.Size()
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}
