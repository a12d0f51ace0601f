#!/usr/bin/env bash
# run.sh — `make e2e`: sbf against real Lima VMs on this machine.
#
# As root it builds sbf and the test binaries where the e2e user can read them,
# prepares what the suite needs (QEMU, Lima v1.2.1, sbf's offline guest image built
# with `sbf image build`, an unprivileged user; see lima-env.sh) and a busybox rootfs
# for containers, then runs the suite as that user (limactl refuses root).
# Afterwards it checks that no sbf instance and nothing but Lima's own config is left
# under LIMA_HOME.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
export PATH="/usr/local/go/bin:$PATH"
# shellcheck source=lima-env.sh
source "$HERE/lima-env.sh"
# shellcheck source=../scripts/heartbeat.sh
source "$REPO/scripts/heartbeat.sh" # the builds below are silent for minutes

t0=$SECONDS
vm_user_setup
BIN=$SBF_E2E_HOME/bin
install -d -m 0755 "$BIN"
# sbf as released: static (CGO_ENABLED=0; a dynamic binary starts ~1 ms slower) and trimmed.
build_binaries() {
  (cd "$REPO" && export CGO_ENABLED=0 &&
   go build -trimpath -o "$BIN/sbf" ./cmd/sbf && go build -trimpath -o "$BIN/sbf-server" ./cmd/sbf-server &&
   unset CGO_ENABLED &&
   go test -c -tags e2e -o "$BIN/e2e.test" ./e2e &&
   go test -c -o "$BIN/lima.test" ./drivers/lima)
}
echo "e2e: building sbf, sbf-server and the test binaries" >&2
with_heartbeat "e2e: building sbf, sbf-server and the test binaries" build_binaries
chmod 0755 "$BIN/sbf" "$BIN/sbf-server" "$BIN/e2e.test" "$BIN/lima.test"
echo "e2e: built sbf and the test binaries in $((SECONDS - t0))s" >&2
sbf_e2e_setup "$BIN/sbf"
echo "e2e: setup took $((SECONDS - t0))s" >&2

# In a folder of its own: the tests allow its folder (--allow-path), and sbf refuses to allow
# the e2e user's home folder itself (issue 39).
ROOTFS=$SBF_E2E_HOME/data/busybox-rootfs.tar
install -d -m 0755 "$(dirname "$ROOTFS")"
if [[ ! -s $ROOTFS ]]; then
  work=$(mktemp -d)
  (cd "$work" &&
   { apt-get download busybox-static >/dev/null 2>&1 || { apt-get update -qq && apt-get download busybox-static >/dev/null; }; } &&
   dpkg-deb -x busybox-static_*.deb deb &&
   mkdir -p rootfs/bin rootfs/www rootfs/tmp &&
   cp deb/bin/busybox rootfs/bin/busybox && ln -s busybox rootfs/bin/sh && ln -s busybox rootfs/bin/httpd &&
   tar -C rootfs -cf "$ROOTFS" .)
  rm -rf "$work"
  chmod 0644 "$ROOTFS"
fi

# The official TypeScript SDK drives some steps as an agent would (mcpserver/testdata/tsclient):
# installed here as root, copied where the e2e user can read it.
TSCLIENT=$SBF_E2E_HOME/tsclient
(cd "$REPO/mcpserver/testdata/tsclient" &&
 { [[ -f node_modules/@modelcontextprotocol/sdk/package.json ]] || npm ci --no-audit --no-fund >/dev/null; })
rm -rf "$TSCLIENT" && cp -r "$REPO/mcpserver/testdata/tsclient" "$TSCLIENT" && chmod -R a+rX "$TSCLIENT"

# Leftovers of an interrupted earlier run would skew the suite.
sbf_e2e_delete_all

status=0
# sbf's template resolution, and its reading of instance folders, agree with the real limactl.
(as_e2e_user env TMPDIR=/tmp SBF_TEST_LIMACTL="$SBF_E2E_LIMA_PREFIX/bin/limactl" \
  "$BIN/lima.test" -test.run 'TestTemplatesMatchRealLimactl|TestFoldersReadAsRealLimactlLists' -test.v -test.count 1) || status=$?
as_e2e_user env TMPDIR=/tmp SBF_E2E_ROOTFS="$ROOTFS" SBF_BIN="$BIN/sbf" SBF_E2E_TSCLIENT="$TSCLIENT" \
  "$BIN/e2e.test" -test.v -test.timeout 60m -test.count 1 ${SBF_E2E_RUN:+-test.run "$SBF_E2E_RUN"} || status=$?

# Exec brokers end once their VM is gone; give them a moment, then look.
sleep 12
brokers=$(pgrep -u "$SBF_E2E_USER" -f 'exec-broker' || true)
if [[ -n "$brokers" ]]; then
  echo "e2e: FAILED: exec brokers outlived their VMs: $brokers" >&2
  pkill -u "$SBF_E2E_USER" -f 'exec-broker' || true
  status=1
fi
left=$(as_e2e_user limactl list --quiet 2>/dev/null | grep '^sbf-' || true)
extra=$(find "$LIMA_HOME" -mindepth 1 -maxdepth 1 ! -name _config -printf '%f\n')
if [[ -n "$left" || -n "$extra" ]]; then
  echo "e2e: FAILED: left behind: instances [$left], LIMA_HOME entries [$extra]" >&2
  sbf_e2e_delete_all
  status=1
else
  echo "e2e: nothing left: limactl list has no sbf instance; LIMA_HOME holds only _config" >&2
fi
echo "e2e: total $((SECONDS - t0))s" >&2
exit $status
