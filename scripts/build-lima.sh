#!/usr/bin/env bash
# build-lima.sh PREFIX — build and install Lima v1.2.1 (limactl + native guest agent +
# templates) from the Go module proxy into PREFIX.
#
# Why: no prebuilt Lima can be downloaded here, and v1.2.1 is the only version the Go
# module proxy serves. `go install …@v1.2.1` fails (it asks for the version list), so we
# `go mod download` the exact version, build from a writable copy of the module source,
# and lay the result out the way limactl expects:
#   PREFIX/bin/limactl
#   PREFIX/share/lima/lima-guestagent.Linux-<uname -m>
#   PREFIX/share/lima/templates/...            (templates are files, not embedded)
# Module zips drop symbolic links, so the template links of Lima's source tree
# (_images/ubuntu-lts.yaml -> ubuntu-24.04.yaml, ...) are restored from
# scripts/lima-template-links.txt, and the install is checked by resolving
# template://docker and template://default with the built limactl.
# Idempotent: does nothing if PREFIX/bin/limactl already reports version 1.2.1
# and its templates resolve.
set -euo pipefail

LIMA_VERSION=1.2.1
PREFIX=${1:?usage: build-lima.sh PREFIX}
mkdir -p "$PREFIX"
PREFIX=$(cd "$PREFIX" && pwd)

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LINKS=$HERE/lima-template-links.txt
# shellcheck source=heartbeat.sh
source "$HERE/heartbeat.sh" # the download and the builds are silent for minutes
t0=$(date +%s)
log() { echo "build-lima: [$(( $(date +%s) - t0 ))s] $*" >&2; }

# restore_links TEMPLATES_DIR: recreate the links the module zip dropped.
restore_links() {
  local link target
  while read -r link target; do
    [[ -z "$link" || "$link" == \#* ]] && continue
    ln -sfn "$target" "$1/$link"
  done <"$LINKS"
}

# templates_resolve: the built limactl embeds the default templates' whole
# base chain and finds images in it (what sbf's template:docker needs).
# limactl refuses root, so root runs it as nobody.
templates_resolve() {
  local t home rc=0
  home=$(mktemp -d)
  chmod 0777 "$home"
  for t in docker default; do
    # Into a file, not `| grep -q`: limactl would die of SIGPIPE after the match (pipefail).
    if ! unprivileged env -i HOME="$home" PATH=/usr/bin:/bin "$PREFIX/bin/limactl" --tty=false \
           template copy --embed-all "template://$t" - >"$home/out" 2>"$home/err" ||
       ! grep -q 'location: .*cloudimg' "$home/out"; then
      log "template://$t does not resolve to images: $(head -c 300 "$home/err")"
      rc=1
    fi
  done
  rm -rf "$home"
  return $rc
}
unprivileged() {
  if [[ $(id -u) -eq 0 ]]; then
    setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"
  else
    "$@"
  fi
}

if [[ -x "$PREFIX/bin/limactl" ]] &&
   "$PREFIX/bin/limactl" --version 2>/dev/null | grep -qx "limactl version $LIMA_VERSION" &&
   compgen -G "$PREFIX/share/lima/lima-guestagent.Linux-*" >/dev/null &&
   [[ -d "$PREFIX/share/lima/templates" ]]; then
  restore_links "$PREFIX/share/lima/templates"
  if templates_resolve; then
    log "limactl $LIMA_VERSION already installed in $PREFIX; nothing to do"
    exit 0
  fi
fi

command -v go >/dev/null || export PATH=/usr/local/go/bin:$PATH
command -v go >/dev/null || { echo "build-lima: go not found" >&2; exit 1; }

case "$(uname -m)" in
  x86_64)  ga_arch=x86_64;  goarch=amd64 ;;
  aarch64|arm64) ga_arch=aarch64; goarch=arm64 ;;
  *) echo "build-lima: unsupported host arch $(uname -m)" >&2; exit 1 ;;
esac

work=$(mktemp -d "${TMPDIR:-/tmp}/sbf-lima-build.XXXXXX")
trap 'rm -rf "$work"' EXIT

log "downloading github.com/lima-vm/lima@v$LIMA_VERSION"
# Run outside any module so the project's go.mod is neither read nor changed.
with_heartbeat "build-lima: downloading" bash -c 'cd "$1" && GOFLAGS=-mod=mod go mod download -json "$2" >"$1/mod.json"' \
  _ "$work" "github.com/lima-vm/lima@v$LIMA_VERSION"
moddir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' "$work/mod.json")
[[ -d "$moddir" ]] || { echo "build-lima: module download failed" >&2; exit 1; }

log "copying module source to $work/src"
cp -r "$moddir" "$work/src"
chmod -R u+w "$work/src"

cd "$work/src"
log "building limactl"
with_heartbeat "build-lima: building limactl" go build -buildvcs=false -trimpath \
  -ldflags "-s -w -X github.com/lima-vm/lima/pkg/version.Version=$LIMA_VERSION" \
  -o "$work/out/limactl" ./cmd/limactl
log "building lima-guestagent (linux/$goarch, static)"
CGO_ENABLED=0 GOOS=linux GOARCH=$goarch with_heartbeat "build-lima: building lima-guestagent" \
  go build -buildvcs=false -trimpath \
  -ldflags "-s -w -X github.com/lima-vm/lima/pkg/version.Version=$LIMA_VERSION" \
  -o "$work/out/lima-guestagent" ./cmd/lima-guestagent

log "installing into $PREFIX"
install -d -m 0755 "$PREFIX/bin" "$PREFIX/share/lima/templates"
install -m 0755 "$work/out/lima-guestagent" "$PREFIX/share/lima/lima-guestagent.Linux-$ga_arch"
cp -r "$work/src/templates/." "$PREFIX/share/lima/templates/"
restore_links "$PREFIX/share/lima/templates"
chmod -R a+rX "$PREFIX/share/lima"
# limactl last: its presence (with the right version) marks a complete install.
install -m 0755 "$work/out/limactl" "$PREFIX/bin/limactl.tmp"
mv -f "$PREFIX/bin/limactl.tmp" "$PREFIX/bin/limactl"

templates_resolve || { echo "build-lima: the installed templates do not resolve" >&2; exit 1; }
log "done: $("$PREFIX/bin/limactl" --version); template://docker and template://default resolve"
