package main

import (
	"archive/tar"
	"bufio"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// writeArchive writes the layout as a tar (what `skopeo copy oci-archive:` and `docker load`
// read): its own files, then the blobs by digest, all owned by root and stamped mtime, so the
// same layout always gives the same bytes.
func writeArchive(path string, l layout, mtime time.Time) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("creating the image archive: %w", err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	tw := tar.NewWriter(w)
	var blobs []string
	for name := range l {
		if strings.HasPrefix(name, "blobs/") {
			blobs = append(blobs, name)
		}
	}
	slices.Sort(blobs)
	names := append([]string{"oci-layout", "index.json", "manifest.json", "blobs/", "blobs/sha256/"}, blobs...)
	for _, name := range names {
		h := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(l[name])), ModTime: mtime,
			Typeflag: tar.TypeReg, Format: tar.FormatUSTAR}
		if strings.HasSuffix(name, "/") {
			h.Mode, h.Typeflag = 0o755, tar.TypeDir
		}
		if err := tw.WriteHeader(h); err != nil {
			return fmt.Errorf("writing %s into the image archive: %w", name, err)
		}
		if _, err := tw.Write(l[name]); err != nil {
			return fmt.Errorf("writing %s into the image archive: %w", name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("ending the image archive: %w", err)
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("writing the image archive: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing the image archive: %w", err)
	}
	return nil
}
