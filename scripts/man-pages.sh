#!/usr/bin/env bash
# Writes sbf's man pages (sbf docs man), gzipped as Debian and Fedora
# install them, into DIR; GoReleaser runs it before packaging.
set -euo pipefail
dir=${1:?usage: man-pages.sh DIR}
rm -rf "$dir"
go run ./cmd/sbf docs man "$dir"
gzip -9n "$dir"/*.1
