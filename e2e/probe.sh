#!/usr/bin/env bash
# probe.sh — prove the real-VM e2e infrastructure end to end on this host, with timings.
#
# Why: the e2e suite relies on Lima v1.2.1 + the offline Debian image + the wrappers in
# lima-env.sh; this script runs one whole VM lifecycle the way the suite will, so a broken
# piece shows up here first. Run as root (it sets things up, then runs Lima as the
# unprivileged e2e user):
#   create (e2e/probe-lima.yaml from stdin) -> start -> uname -> docker info/compose version
#   without sudo -> docker import of a busybox rootfs -> docker run httpd -p 80 -> curl from
#   the host through Lima's forward 18080 -> ssh -F ssh.config -> 10 warm `limactl shell
#   true` -> stop -> start -> check again -> delete --force.
# The instance is always deleted at the end (SBF_E2E_KEEP=1 keeps it).
# Knobs: SBF_E2E_PROBE_NAME (default sbf-e2e-probe), SBF_E2E_ACCEL, SBF_E2E_CACHE,
#        SBF_E2E_LOG_DIR (copy Lima's logs, ssh.config and lima.yaml there after each boot).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lima-env.sh
source "$HERE/lima-env.sh"

NAME=${SBF_E2E_PROBE_NAME:-sbf-e2e-probe}
HOST_PORT=18080
T_ALL=$(date +%s.%N)
TIMINGS=()

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
# step LABEL CMD...: run CMD, record its wall time, fail loudly.
step() {
  local label=$1; shift
  local t; t=$(now)
  echo "probe: ==> $label" >&2
  if "$@"; then
    TIMINGS+=("$(printf '%-46s %8ss' "$label" "$(elapsed "$t")")")
  else
    local rc=$?
    TIMINGS+=("$(printf '%-46s %8s' "$label" FAILED)")
    echo "probe: FAILED: $label (exit $rc)" >&2
    return $rc
  fi
}
lima() { as_e2e_user limactl --tty=false "$@"; }
gsh() { as_e2e_user limactl --tty=false shell --workdir / "$NAME" "$@"; }
# save_logs TAG: keep the instance's logs (SBF_E2E_LOG_DIR only).
save_logs() {
  [[ -n "${SBF_E2E_LOG_DIR:-}" ]] || return 0
  mkdir -p "$SBF_E2E_LOG_DIR"
  local f
  for f in ha.stderr.log serial.log serialv.log ssh.config lima.yaml; do
    [[ -r "$LIMA_HOME/$NAME/$f" ]] && cp "$LIMA_HOME/$NAME/$f" "$SBF_E2E_LOG_DIR/$1.$f"
  done
  [[ -r "$SBF_E2E_SSH_LOG" ]] && cp "$SBF_E2E_SSH_LOG" "$SBF_E2E_LOG_DIR/ssh-wrapper.log"
  return 0
}

WORK=$(mktemp -d /tmp/sbf-probe.XXXXXX)
chmod 0755 "$WORK"
finish() {
  local rc=$?
  set +e
  if [[ "${SBF_E2E_KEEP:-0}" != 1 ]] && id -u "$SBF_E2E_USER" >/dev/null 2>&1 &&
     [[ -x "$SBF_E2E_LIMA_PREFIX/bin/limactl" ]] && lima list --quiet 2>/dev/null | grep -qx "$NAME"; then
    save_logs final
    if ((rc != 0)); then
      echo "probe: --- last lines of ha.stderr.log ---" >&2
      tail -n 25 "$LIMA_HOME/$NAME/ha.stderr.log" >&2 2>/dev/null
    fi
    local t; t=$(now)
    lima delete --force "$NAME" >/dev/null 2>&1
    TIMINGS+=("$(printf '%-46s %8ss' "limactl delete --force" "$(elapsed "$t")")")
  fi
  rm -rf "$WORK"
  echo
  if [[ -s "${SBF_E2E_SSH_LOG:-}" ]]; then
    echo "probe: ssh wrapper (Lima bug 1 workaround) handled $(wc -l <"$SBF_E2E_SSH_LOG") \`-O forward\` call(s):"
    sed 's/^/  /' "$SBF_E2E_SSH_LOG"
  fi
  echo "probe: timings (accel=${SBF_E2E_ACCEL:-?})"
  printf '  %s\n' "${TIMINGS[@]}"
  echo "  $(printf '%-46s %8ss' total "$(elapsed "$T_ALL")")"
  if ((rc == 0)); then echo "probe: OK"; else echo "probe: FAILED (exit $rc)"; fi
  exit $rc
}
trap finish EXIT

step "setup (deps, lima, image, user, accel)" sbf_e2e_setup

# --- a tiny container rootfs: busybox from Debian's busybox-static package ---
make_rootfs() {
  (cd "$WORK" &&
   { apt-get download busybox-static >/dev/null 2>&1 ||
     { apt-get update -qq && apt-get download busybox-static >/dev/null; }; } &&
   dpkg-deb -x busybox-static_*.deb deb &&
   mkdir -p rootfs/bin rootfs/www rootfs/tmp &&
   cp deb/bin/busybox rootfs/bin/busybox &&
   ln -s busybox rootfs/bin/sh && ln -s busybox rootfs/bin/httpd &&
   echo "hello from sbf-e2e-probe" >rootfs/www/index.html &&
   tar -C rootfs -cf rootfs.tar . &&
   chmod 0644 rootfs.tar)
}
step "build busybox rootfs tarball" make_rootfs

if lima list --quiet 2>/dev/null | grep -qx "$NAME"; then
  lima delete --force "$NAME" >/dev/null
fi
render() { sed "s#@IMAGE_DIR@#$SBF_E2E_IMAGE_DIR#g" "$HERE/probe-lima.yaml"; }
do_create() { render | lima create --name "$NAME" -; }
step "limactl create (yaml on stdin)" do_create

check_running() {
  local st
  st=$(lima list --format '{{.Status}}' "$NAME")
  echo "probe: status $st" >&2
  [[ "$st" == Running ]] || return 1
  if grep -q "guest agent does not seem to be running" "$LIMA_HOME/$NAME/ha.stderr.log"; then
    echo "probe: instance is DEGRADED (guest agent)" >&2
    return 1
  fi
}
rm -f "$SBF_E2E_SSH_LOG"
step "limactl start (first boot)" lima start --timeout 15m "$NAME"
save_logs boot1
check_running

step "limactl shell uname -a" gsh uname -a
do_docker_info() { gsh docker info --format 'server {{.ServerVersion}} storage {{.Driver}} cgroup v{{.CgroupVersion}}'; }
step "docker info (no sudo)" do_docker_info
step "docker compose version" gsh docker compose version
do_import() { gsh docker import - sbf-probe:latest <"$WORK/rootfs.tar" >/dev/null; }
step "docker import busybox rootfs (stdin)" do_import
step "docker run httpd -p 80:80" gsh docker run -d --name sbf-probe-web -p 80:80 sbf-probe:latest /bin/busybox httpd -f -p 80 -h /www

curl_forward() {
  local deadline=$((SECONDS + 60)) out
  while ((SECONDS < deadline)); do
    if out=$(curl -fsS --max-time 3 "http://127.0.0.1:$HOST_PORT/" 2>/dev/null); then
      echo "probe: curl -> $out" >&2
      [[ "$out" == "hello from sbf-e2e-probe" ]]
      return
    fi
    sleep 0.5
  done
  return 1
}
step "curl host:$HOST_PORT (until forward is up)" curl_forward
step "curl host:$HOST_PORT (forward warm)" curl -fsS --max-time 5 -o /dev/null "http://127.0.0.1:$HOST_PORT/"

step "ssh -F \$LIMA_HOME/$NAME/ssh.config lima-$NAME true" as_e2e_user ssh -F "$LIMA_HOME/$NAME/ssh.config" "lima-$NAME" true

warm_shell() {
  local t times=()
  for _ in $(seq 10); do
    t=$(now); gsh true; times+=("$(elapsed "$t")")
  done
  echo "probe: warm 'limactl shell $NAME true' x10: ${times[*]}" >&2
  printf '%s\n' "${times[@]}" | sort -n | awk '{ a[NR]=$1 } END { printf "probe: median %.3fs\n", (a[5]+a[6])/2 }' >&2
}
step "limactl shell true x10 (warm)" warm_shell

step "limactl stop" lima stop "$NAME"
step "limactl start (restart)" lima start --timeout 15m "$NAME"
save_logs boot2
check_running
step "after restart: docker info (no sudo)" gsh docker info --format '{{.ServerVersion}}'
step "after restart: docker run --rm" gsh docker run --rm sbf-probe:latest /bin/busybox true

if [[ "${SBF_E2E_KEEP:-0}" != 1 ]]; then
  t=$(now)
  lima delete --force "$NAME" >/dev/null
  TIMINGS+=("$(printf '%-46s %8ss' "limactl delete --force" "$(elapsed "$t")")")
fi
