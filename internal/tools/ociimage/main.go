// Command ociimage writes the in-cluster controller's container image (deploy/kubevirt), for
// linux/amd64 and linux/arm64, as one OCI image layout archive, from the static binaries that
// GoReleaser built. scripts/release.sh runs it after GoReleaser:
//
//	go run ./internal/tools/ociimage -artifacts dist/artifacts.json -version v1.2.3 \
//	  -revision COMMIT -epoch SECONDS -o dist/sbf-kubevirt_1.2.3_oci.tar
//
// It exists because release builds have no Docker daemon and no registry to pull a base image
// from, and GoReleaser v2.15.1 cannot build an image without them: its dockers run docker
// buildx, and its kos take the base image from a daemon or a registry, publish to one of them
// (never a file), and build one Go program per image. The binaries are static, so the image
// needs no base: a layer with them, /etc/passwd and /etc/group is the whole file system.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"time"
)

func main() {
	var o options
	flag.StringVar(&o.artifacts, "artifacts", "dist/artifacts.json", "GoReleaser's list of what it built")
	flag.StringVar(&o.version, "version", "", "the image's version and tag, as the binaries print it (v1.2.3)")
	flag.StringVar(&o.revision, "revision", "", "the commit it is built from")
	flag.StringVar(&o.source, "source", "https://github.com/sandboxforge/sbf", "the repository's URL")
	flag.Int64Var(&o.epoch, "epoch", 0, "creation time, in seconds since 1970 (SOURCE_DATE_EPOCH or the commit's)")
	flag.StringVar(&o.out, "o", "", "the archive to write")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "ociimage:", err)
		os.Exit(1)
	}
}

type options struct {
	artifacts, version, revision, source, out string
	epoch                                     int64
}

func run(o options) error {
	if o.version == "" || o.revision == "" || o.out == "" || o.epoch <= 0 {
		return errors.New("-version, -revision, -epoch and -o are required")
	}
	bins, err := binaries(o.artifacts)
	if err != nil {
		return err
	}
	m := meta{version: o.version, revision: o.revision, source: o.source, created: time.Unix(o.epoch, 0).UTC()}
	files, err := build(m, bins)
	if err != nil {
		return err
	}
	// Written beside the archive and renamed, so a failed build leaves no archive to be checksummed.
	tmp := o.out + ".tmp"
	if err := writeArchive(tmp, files, m.created); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, o.out); err != nil {
		return fmt.Errorf("naming the archive %s: %w", o.out, err)
	}
	return nil
}
