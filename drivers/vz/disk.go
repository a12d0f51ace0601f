package vz

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// cloneOrCopy makes dst a copy of src: a clonefile on APFS (instant, and
// no space used until the guest writes), else a sparse-aware copy.
func cloneOrCopy(src, dst string) error {
	if err := clone(src, dst); err == nil {
		return nil
	}
	return copySparse(src, dst)
}

// copySparse copies src to dst, seeking over runs of zeros so a mostly
// empty raw disk stays mostly unallocated.
func copySparse(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("opening %s: %w", src, err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("creating %s: %w", dst, err)
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	buf := make([]byte, mib)
	zero := make([]byte, mib)
	var size int64
	for {
		n, rerr := io.ReadFull(in, buf)
		if n > 0 {
			if bytes.Equal(buf[:n], zero[:n]) {
				_, err = out.Seek(int64(n), io.SeekCurrent)
			} else {
				_, err = out.Write(buf[:n])
			}
			if err != nil {
				return fmt.Errorf("copying %s: %w", src, err)
			}
			size += int64(n)
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return fmt.Errorf("reading %s: %w", src, rerr)
		}
	}
	return out.Truncate(size) // a trailing hole has no bytes written
}

// grow makes the disk size bytes long; it never shrinks one. The guest's
// cloud-init grows the root filesystem to fit at boot.
func grow(path string, size int64) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if size < info.Size() {
		return fmt.Errorf("the disk is %.1f GiB, more than the %.1f GiB asked: raise disk_gib",
			float64(info.Size())/gib, float64(size)/gib)
	}
	if size == info.Size() {
		return nil
	}
	if err := os.Truncate(path, size); err != nil {
		return fmt.Errorf("resizing the disk to %d bytes: %w", size, err)
	}
	return nil
}

// diskBytes is disk_gib in bytes, rounded to whole MiB.
func diskBytes(giB float64) int64 { return int64(roundMiB(giB)) }

// copyKernel copies the kernel, decompressing a gzip'd one for aarch64:
// Virtualization.framework boots only an uncompressed arm64 Image, and
// distributions ship it as vmlinuz.gz.
func copyKernel(src, dst, arch string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("reading the kernel: %w", err)
	}
	if arch == "aarch64" && len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return fmt.Errorf("decompressing the kernel %s: %w", src, err)
		}
		if b, err = io.ReadAll(zr); err != nil {
			return fmt.Errorf("decompressing the kernel %s: %w", src, err)
		}
	}
	return os.WriteFile(dst, b, 0o600)
}

// checkDigest verifies a disk against [vm.image] digest (sha256:HEX).
func checkDigest(path, digest string) error {
	if digest == "" {
		return nil
	}
	want, ok := strings.CutPrefix(digest, "sha256:")
	if !ok {
		return errors.New("only sha256: digests are supported")
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("hashing %s: %w", path, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != strings.ToLower(want) {
		return fmt.Errorf("%s has digest sha256:%s, not %s", path, got, digest)
	}
	return nil
}
