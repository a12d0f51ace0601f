# shellcheck shell=bash
# lima-env.sh — sourced (as root) by the real-VM e2e suite and by e2e/probe.sh.
#
# Why: limactl refuses to run as root, Lima v1.2.1 needs two workarounds on hosts like
# ours (no working KVM; a guest-agent forward bug), and sockets under LIMA_HOME must keep
# short paths. After `sbf_e2e_setup` the caller can run Lima as an unprivileged user with
# `as_e2e_user limactl ...`.
#
# sbf_e2e_setup does, idempotently:
#   1. scripts/host-deps.sh (apt packages), scripts/build-lima.sh into the cache,
#      e2e/image/cached-image.sh (guest image), all cached under $SBF_E2E_CACHE;
#   2. creates the user $SBF_E2E_USER (regular UID: Lima reuses it as the guest UID)
#      with home $SBF_E2E_HOME and LIMA_HOME=$SBF_E2E_HOME/lima (short socket paths);
#   3. installs the wrappers (e2e/wrappers) into $SBF_E2E_HOME/wrappers, readable by the
#      user even when the checkout is not (e.g. under /root);
#   4. decides by measurement whether KVM works (see sbf_e2e_detect_accel) and, if not,
#      points QEMU_SYSTEM_X86_64 at the TCG-rewriting qemu wrapper.
#
# Exports: SBF_E2E_USER SBF_E2E_HOME SBF_E2E_CACHE SBF_E2E_LIMA_PREFIX SBF_E2E_IMAGE_DIR
#          SBF_E2E_ACCEL (tcg|kvm) LIMA_HOME SBF_E2E_PATH [QEMU_SYSTEM_X86_64]
# Knobs:   SBF_E2E_ACCEL=tcg|kvm forces the accelerator; SBF_E2E_CACHE (default
#          /var/cache/sbf-e2e); SBF_E2E_USER (default sbf-e2e); SBF_E2E_HOME (default
#          /var/lib/$SBF_E2E_USER).

SBF_E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SBF_E2E_REPO=$(cd "$SBF_E2E_DIR/.." && pwd)
: "${SBF_E2E_CACHE:=/var/cache/sbf-e2e}"
: "${SBF_E2E_USER:=sbf-e2e}"
: "${SBF_E2E_HOME:=/var/lib/$SBF_E2E_USER}"
: "${SBF_E2E_LIMA_PREFIX:=$SBF_E2E_CACHE/lima-1.2.1}"
export SBF_E2E_CACHE SBF_E2E_USER SBF_E2E_HOME SBF_E2E_LIMA_PREFIX
export LIMA_HOME=$SBF_E2E_HOME/lima
# The ssh wrapper logs each cancel+forward here (beside LIMA_HOME, which then holds only
# Lima's own files).
: "${SBF_E2E_SSH_LOG:=$SBF_E2E_HOME/ssh-wrapper.log}"
export SBF_E2E_SSH_LOG
SBF_E2E_WRAPPERS=$SBF_E2E_HOME/wrappers
export SBF_E2E_PATH=$SBF_E2E_WRAPPERS/bin:$SBF_E2E_LIMA_PREFIX/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

_sbf_log() { echo "lima-env: $*" >&2; }

# sbf_e2e_user_setup: the unprivileged user, its LIMA_HOME and the wrappers.
sbf_e2e_user_setup() {
  if ! id -u "$SBF_E2E_USER" >/dev/null 2>&1; then
    # Not --system: Lima creates the guest user with the host UID, and a system UID would
    # collide with the guest's own system accounts.
    useradd --create-home --home-dir "$SBF_E2E_HOME" --shell /bin/bash --user-group "$SBF_E2E_USER"
  fi
  install -d -m 0755 -o "$SBF_E2E_USER" -g "$SBF_E2E_USER" "$SBF_E2E_HOME"
  install -d -m 0700 -o "$SBF_E2E_USER" -g "$SBF_E2E_USER" "$LIMA_HOME"
  install -d -m 0755 "$SBF_E2E_WRAPPERS" "$SBF_E2E_WRAPPERS/bin" "$SBF_E2E_WRAPPERS/qemu"
  install -m 0755 "$SBF_E2E_DIR/wrappers/bin/ssh" "$SBF_E2E_WRAPPERS/bin/ssh"
  install -m 0755 "$SBF_E2E_DIR/wrappers/qemu/qemu-system-x86_64" "$SBF_E2E_WRAPPERS/qemu/qemu-system-x86_64"
  local p=$SBF_E2E_LIMA_PREFIX
  while [[ "$p" != / ]]; do chmod o+x "$p" 2>/dev/null || true; p=$(dirname "$p"); done
}

# as_e2e_user CMD...: run CMD as the e2e user in its home, with a clean environment that
# carries only what Lima needs. stdin/stdout/stderr pass through (so `... create -` works).
as_e2e_user() {
  local envs=(
    "HOME=$SBF_E2E_HOME" "USER=$SBF_E2E_USER" "LOGNAME=$SBF_E2E_USER" "SHELL=/bin/bash"
    "PATH=$SBF_E2E_PATH" "LIMA_HOME=$LIMA_HOME" "TERM=${TERM:-dumb}" "LANG=C.UTF-8"
  )
  [[ -n "${QEMU_SYSTEM_X86_64:-}" ]] && envs+=("QEMU_SYSTEM_X86_64=$QEMU_SYSTEM_X86_64")
  local v
  for v in LIMA_SSH_PORT_FORWARDER LIMA_INSTANCE LIMA_SHELL SBF_E2E_REAL_QEMU SBF_E2E_REAL_SSH SBF_E2E_SSH_LOG; do
    [[ -n "${!v:-}" ]] && envs+=("$v=${!v}")
  done
  if command -v runuser >/dev/null 2>&1; then
    (cd "$SBF_E2E_HOME" && runuser -u "$SBF_E2E_USER" -- env -i "${envs[@]}" "$@")
  else
    (cd "$SBF_E2E_HOME" && setpriv --reuid="$SBF_E2E_USER" --regid="$SBF_E2E_USER" --init-groups \
       env -i "${envs[@]}" "$@")
  fi
}

# _sbf_boot_banner ACCEL CPU KERNEL: as the e2e user, boot KERNEL (no initrd, no disk)
# with the serial port in a file; print what it wrote, stopping as soon as the kernel
# banner shows (a working accelerator prints it within a second or two) or after ~8 s.
_sbf_boot_banner() {
  as_e2e_user bash -c '
    f=$(mktemp); e=$(mktemp)
    qemu-system-x86_64 -accel "$1" -cpu "$2" -m 256 -nodefaults -display none -no-reboot \
      -serial "file:$f" -kernel "$3" -append "console=ttyS0 panic=-1" </dev/null >/dev/null 2>"$e" &
    pid=$!
    for _ in $(seq 40); do
      grep -q "Linux version" "$f" 2>/dev/null && break
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
    kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
    cat "$f" "$e" | head -c 4096; rm -f "$f" "$e"' _ "$@"
}

# sbf_e2e_detect_accel KERNEL: decide tcg|kvm by measurement, as the e2e user (who runs
# QEMU). Boots KERNEL (no initrd, no disk) with -accel kvm and console=ttyS0; a kernel
# under working KVM prints its banner on the serial port within a second or two, while a
# broken nested-virt host spins silently and a user without access to /dev/kvm fails at
# once. Result cached for this boot of the host in $SBF_E2E_HOME/accel.<boot_id>.
sbf_e2e_detect_accel() {
  local kernel=$1
  if [[ -n "${SBF_E2E_ACCEL:-}" ]]; then
    case "$SBF_E2E_ACCEL" in tcg|kvm) ;; *) _sbf_log "SBF_E2E_ACCEL must be tcg or kvm"; return 1 ;; esac
    return 0
  fi
  local boot_id cache
  boot_id=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null || echo unknown)
  cache=$SBF_E2E_HOME/accel.$boot_id
  if [[ -s "$cache" ]]; then
    SBF_E2E_ACCEL=$(cat "$cache")
    export SBF_E2E_ACCEL
    return 0
  fi
  SBF_E2E_ACCEL=tcg
  if [[ -e /dev/kvm ]]; then
    # Let the user open /dev/kvm if the device is group-accessible (usually group kvm).
    local grp mode
    grp=$(stat -c %G /dev/kvm); mode=$(stat -c %a /dev/kvm)
    if [[ "$grp" != root && "${mode:1:1}" =~ [67] ]] && ! id -nG "$SBF_E2E_USER" | tr ' ' '\n' | grep -qx "$grp"; then
      usermod -aG "$grp" "$SBF_E2E_USER"
    fi
    local out t0 t1
    t0=$(date +%s.%N)
    out=$(_sbf_boot_banner kvm host "$kernel" || true)
    t1=$(date +%s.%N)
    if grep -q "Linux version" <<<"$out"; then
      SBF_E2E_ACCEL=kvm
    fi
    _sbf_log "KVM probe: $( [[ $SBF_E2E_ACCEL == kvm ]] && echo "kernel printed its banner" || echo "no serial output ($(head -c 200 <<<"$out" | tr '\n' ' '))") in $(awk "BEGIN{printf \"%.1f\", $t1-$t0}")s"
  else
    _sbf_log "no /dev/kvm"
  fi
  echo "$SBF_E2E_ACCEL" >"$cache"
  export SBF_E2E_ACCEL
}

# sbf_e2e_setup: everything above; safe to call more than once.
sbf_e2e_setup() {
  local t0=$SECONDS
  [[ $(id -u) -eq 0 ]] || { _sbf_log "sbf_e2e_setup must run as root"; return 1; }
  "$SBF_E2E_REPO/scripts/host-deps.sh" || return 1
  "$SBF_E2E_REPO/scripts/build-lima.sh" "$SBF_E2E_LIMA_PREFIX" || return 1
  SBF_E2E_IMAGE_DIR=$("$SBF_E2E_DIR/image/cached-image.sh") || return 1
  export SBF_E2E_IMAGE_DIR
  sbf_e2e_user_setup || return 1
  sbf_e2e_detect_accel "$SBF_E2E_IMAGE_DIR/vmlinuz" || return 1
  if [[ "$SBF_E2E_ACCEL" == tcg ]]; then
    export QEMU_SYSTEM_X86_64=$SBF_E2E_WRAPPERS/qemu/qemu-system-x86_64
  else
    unset QEMU_SYSTEM_X86_64
  fi
  _sbf_log "ready in $((SECONDS - t0))s: accel=$SBF_E2E_ACCEL user=$SBF_E2E_USER LIMA_HOME=$LIMA_HOME image=$SBF_E2E_IMAGE_DIR"
}

# sbf_e2e_delete_all: force-delete every instance under LIMA_HOME (suite teardown).
sbf_e2e_delete_all() {
  local n
  for n in $(as_e2e_user limactl list --quiet 2>/dev/null); do
    as_e2e_user limactl delete --force "$n" >/dev/null 2>&1 || true
  done
}
