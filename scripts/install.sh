#!/bin/sh
# Installs sbf from a release archive after checking it against the
# release's SHA256SUMS, and SHA256SUMS itself against SBF_SUMS_SHA256 when
# set (a pin in your own files: the release's files could be replaced, the
# pin cannot). Linux and macOS, amd64 and arm64; on Windows use the zip
# and Get-FileHash.
#
#   sh install.sh                    # the latest release, into /usr/local/bin or ~/.local/bin
#   SBF_VERSION=v1.2.3 SBF_INSTALL_DIR=~/bin sh install.sh
#
# SBF_DOWNLOAD_URL names the folder holding the release's files (default:
# the GitHub release of SBF_VERSION); a file:// URL installs from a local
# `make release` (dist/).
set -eu

repo=https://github.com/sandboxforge/sbf/releases
version=${SBF_VERSION:-latest}
# Release tags carry a v (v1.2.3); the archives' names do not (sbf_1.2.3_...):
# take either spelling.
case $version in
  latest | v*) ;;
  *) version=v$version ;;
esac
if [ -n "${SBF_DOWNLOAD_URL:-}" ]; then
  url=$SBF_DOWNLOAD_URL
elif [ "$version" = latest ]; then
  url=$repo/latest/download
else
  url=$repo/download/$version
fi

die() { echo "install.sh: $*" >&2; exit 1; }

case $(uname -s) in
  Linux) os=linux ;;
  Darwin) os=darwin ;;
  *) die "no release archive for $(uname -s): build from source (go install) or use the Windows zip" ;;
esac
case $(uname -m) in
  x86_64 | amd64) arch=amd64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) die "no release archive for $(uname -m)" ;;
esac

fetch() { # URL FILE
  if command -v curl >/dev/null 2>&1; then
    curl -fsSL -o "$2" "$1"
  elif command -v wget >/dev/null 2>&1; then
    wget -q -O "$2" "$1"
  else
    die "needs curl or wget"
  fi
}

sha256() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -d' ' -f1
  else
    shasum -a 256 "$1" | cut -d' ' -f1
  fi
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fetch "$url/SHA256SUMS" "$tmp/SHA256SUMS" || die "cannot download $url/SHA256SUMS"
if [ -n "${SBF_SUMS_SHA256:-}" ] && [ "$(sha256 "$tmp/SHA256SUMS")" != "$SBF_SUMS_SHA256" ]; then
  die "SHA256SUMS of $url does not match SBF_SUMS_SHA256: not installing"
fi

# The checksum file lists every archive, so it also names this one: no
# release API needed to learn what "latest" is.
line=$(grep -E "  sbf_[^ ]*_${os}_${arch}\.tar\.gz\$" "$tmp/SHA256SUMS" | head -n 1)
[ -n "$line" ] || die "SHA256SUMS lists no archive for ${os}/${arch}"
want=${line%% *}
archive=${line##* }
fetch "$url/$archive" "$tmp/$archive" || die "cannot download $url/$archive"
[ "$(sha256 "$tmp/$archive")" = "$want" ] || die "$archive does not match its SHA256SUMS line: not installing"

tar -xzf "$tmp/$archive" -C "$tmp" sbf sbf-server
# sbf-kubevirt, the kubevirt backend's program (older releases' archives have none).
tar -xzf "$tmp/$archive" -C "$tmp" sbf-kubevirt 2>/dev/null || true
dir=${SBF_INSTALL_DIR:-}
if [ -z "$dir" ]; then
  if [ -w /usr/local/bin ]; then dir=/usr/local/bin; else dir=$HOME/.local/bin; fi
fi
mkdir -p "$dir"
# Copy then rename, so a running sbf is never overwritten in place; sbf
# runs sbf-server, beside it, for sbf mcp, sbf serve and compose files, and
# sbf-kubevirt for the kubevirt backend.
for b in sbf-server sbf-kubevirt sbf; do
  [ -f "$tmp/$b" ] || continue
  cp "$tmp/$b" "$dir/.$b.new"
  chmod 0755 "$dir/.$b.new"
  mv -f "$dir/.$b.new" "$dir/$b"
done
echo "installed $("$dir/sbf" version) into $dir"
case ":$PATH:" in *":$dir:"*) ;; *) echo "add $dir to PATH to run it as sbf" ;; esac
