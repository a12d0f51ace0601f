#!/usr/bin/env bash
# kube-test-bins.sh [DIR] — build kube-apiserver v1.34.3 from the Go module proxy and fetch
# Debian's etcd 3.4.23 into DIR (default $SBF_KUBE_BINS, else
# /var/cache/sandboxforge/kube-1.34.3): the real API server the kubevirt driver's tests
# (kubevirt/, `make test-kubevirt`) run against through controller-runtime's envtest.
#
# Why: envtest's own binary downloads are not reachable here. k8s.io/kubernetes is served
# by the module proxy, but only when its version and every staging module's version are
# named: a throwaway module requires k8s.io/kubernetes v1.34.3 and replaces each
# k8s.io/X => ./staging/src/k8s.io/X of its go.mod by k8s.io/X v0.34.3. The cold build takes
# ~11 minutes on 2 cores; progress is printed every 30 s. Debian's etcd-server package holds
# a plain etcd binary: `apt-get download` + `dpkg -x` is enough, nothing is installed.
# Idempotent: does nothing when DIR/kube-apiserver reports v1.34.3 and DIR/etcd 3.4.23.
set -euo pipefail

KUBE_VERSION=1.34.3
STAGING_VERSION=0.34.3
ETCD_VERSION=3.4.23
DIR=${1:-${SBF_KUBE_BINS:-/var/cache/sandboxforge/kube-$KUBE_VERSION}}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)

t0=$(date +%s)
log() { echo "kube-test-bins: [$(( $(date +%s) - t0 ))s] $*" >&2; }

# Each reads the whole --version output first: `cmd | grep -q` under pipefail fails when grep
# exits at the first line and cmd then dies of SIGPIPE writing the next (etcd prints four).
apiserver_ok() {
  [[ -x "$DIR/kube-apiserver" ]] && [[ $("$DIR/kube-apiserver" --version 2>/dev/null) == "Kubernetes v$KUBE_VERSION" ]]
}
etcd_ok() {
  [[ -x "$DIR/etcd" ]] && [[ $'\n'$("$DIR/etcd" --version 2>/dev/null) == *$'\n'"etcd Version: $ETCD_VERSION"* ]]
}

if apiserver_ok && etcd_ok; then
  log "kube-apiserver v$KUBE_VERSION and etcd $ETCD_VERSION already in $DIR; nothing to do"
  exit 0
fi

command -v go >/dev/null || export PATH=/usr/local/go/bin:$PATH
command -v go >/dev/null || { echo "kube-test-bins: go not found" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/sbf-kube-bins.XXXXXX")
trap 'rm -rf "$work"' EXIT

# with_heartbeat LABEL CMD...: a long, silent build says it is alive (CI and the shell tool
# read silence as a hang).
# shellcheck source=heartbeat.sh
source "$(dirname "$0")/heartbeat.sh"

fetch_etcd() {
  command -v apt-get >/dev/null || { echo "kube-test-bins: apt-get not found (Debian's etcd)" >&2; return 1; }
  mkdir -p "$work/etcd"
  log "fetching Debian's etcd-server"
  if ! (cd "$work/etcd" && apt-get download etcd-server >/dev/null 2>&1); then
    log "apt-get download failed; refreshing the package lists"
    apt-get update -qq >/dev/null
    (cd "$work/etcd" && apt-get download etcd-server >/dev/null)
  fi
  dpkg -x "$work"/etcd/etcd-server_*.deb "$work/etcd/root"
  install -m 0755 "$work/etcd/root/usr/bin/etcd" "$DIR/etcd"
  etcd_ok || { echo "kube-test-bins: Debian's etcd is not $ETCD_VERSION: $("$DIR/etcd" --version)" >&2; return 1; }
  log "etcd: $("$DIR/etcd" --version | head -n1)"
}

# write_module: the throwaway module that names every version (the proxy refuses listing).
write_module() {
  local kdir=$1 mod=$work/mod
  mkdir -p "$mod"
  {
    echo "module sbf.local/kube-test-bins"
    echo
    echo "go 1.24"
    echo
    echo "require k8s.io/kubernetes v$KUBE_VERSION"
    echo
    sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/src/k8s.io/.*#replace \1 => \1 v'"$STAGING_VERSION"'#p' \
      "$kdir/go.mod"
  } >"$mod/go.mod"
  grep -q '^replace k8s.io/api ' "$mod/go.mod" || { echo "kube-test-bins: no staging replaces found" >&2; return 1; }
  # go mod tidy needs an importable package; the command's own package is main.
  printf 'package tools\n\nimport _ "k8s.io/kubernetes/cmd/kube-apiserver/app"\n' >"$mod/tools.go"
}

build_apiserver() {
  local kdir v=k8s.io/component-base/version
  log "downloading k8s.io/kubernetes@v$KUBE_VERSION"
  kdir=$(cd "$work" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@v$KUBE_VERSION" |
         sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [[ -d "$kdir" ]] || { echo "kube-test-bins: module download failed" >&2; return 1; }
  write_module "$kdir"
  log "go mod tidy ($(grep -c '^replace' "$work/mod/go.mod") staging modules)"
  (cd "$work/mod" && with_heartbeat "go mod tidy" go mod tidy)
  log "building kube-apiserver (cold: ~11 min on 2 cores)"
  (cd "$work/mod" && CGO_ENABLED=0 with_heartbeat "go build kube-apiserver" go build -trimpath \
    -ldflags "-s -w -X $v.gitVersion=v$KUBE_VERSION -X $v.gitMajor=1 -X $v.gitMinor=34" \
    -o "$work/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver)
  # Install last, atomically: a present binary that reports the version marks the cache done.
  install -m 0755 "$work/kube-apiserver" "$DIR/kube-apiserver.tmp"
  mv -f "$DIR/kube-apiserver.tmp" "$DIR/kube-apiserver"
  apiserver_ok || { echo "kube-test-bins: built kube-apiserver does not report v$KUBE_VERSION" >&2; return 1; }
  log "kube-apiserver: $("$DIR/kube-apiserver" --version), $(( $(stat -c %s "$DIR/kube-apiserver") >> 20 )) MiB"
}

etcd_ok || fetch_etcd
apiserver_ok || build_apiserver
log "done: $DIR has kube-apiserver v$KUBE_VERSION and etcd $ETCD_VERSION"
