# shellcheck shell=bash
# vm-user.sh — sourced (as root) by `make run` (scripts/run-example.sh) and the e2e suite.
#
# limactl refuses to run as root, so a root caller runs sbf as an unprivileged user made
# for VMs. This file prepares that user the same way for both, so the main job and the
# tests cannot drift apart:
#   vm_user_setup       creates $SBF_VM_USER (a regular UID: Lima makes the guest user with
#                       the host UID, and a system UID would clash inside the guest) with
#                       home $SBF_VM_HOME and LIMA_HOME=$SBF_VM_HOME/lima (short socket paths)
#   as_vm_user CMD...   runs CMD as that user in its home with a clean environment carrying
#                       only what sbf and Lima need; stdin/stdout/stderr pass through
#   vm_user_open_path P makes every folder above P traversable, so the user reaches P
# Knobs: SBF_VM_USER (default sbf), SBF_VM_HOME (default /var/lib/$SBF_VM_USER),
#        SBF_VM_PATH (extra PATH entries, first), SBF_VM_ENV (extra NAME=VALUE words).

: "${SBF_VM_USER:=sbf}"
: "${SBF_VM_HOME:=/var/lib/$SBF_VM_USER}"
export SBF_VM_USER SBF_VM_HOME
export LIMA_HOME=$SBF_VM_HOME/lima

vm_user_setup() {
  [[ $(id -u) -eq 0 ]] || { echo "vm-user: must run as root" >&2; return 1; }
  if ! id -u "$SBF_VM_USER" >/dev/null 2>&1; then
    useradd --create-home --home-dir "$SBF_VM_HOME" --shell /bin/bash --user-group "$SBF_VM_USER"
    echo "vm-user: created user $SBF_VM_USER (home $SBF_VM_HOME) to run VMs: limactl refuses root" >&2
  fi
  install -d -m 0755 -o "$SBF_VM_USER" -g "$SBF_VM_USER" "$SBF_VM_HOME"
  install -d -m 0700 -o "$SBF_VM_USER" -g "$SBF_VM_USER" "$LIMA_HOME"
}

vm_user_open_path() {
  local p=$1
  while [[ "$p" != / && -n "$p" ]]; do chmod o+x "$p" 2>/dev/null || true; p=$(dirname "$p"); done
}

as_vm_user() {
  local envs=(
    "HOME=$SBF_VM_HOME" "USER=$SBF_VM_USER" "LOGNAME=$SBF_VM_USER" "SHELL=/bin/bash"
    "PATH=${SBF_VM_PATH:+$SBF_VM_PATH:}/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    "LIMA_HOME=$LIMA_HOME" "TERM=${TERM:-dumb}" "LANG=C.UTF-8"
  )
  local v
  for v in SBF_IMAGE_CACHE NO_COLOR; do
    [[ -n "${!v:-}" ]] && envs+=("$v=${!v}")
  done
  # shellcheck disable=SC2206
  [[ -n "${SBF_VM_ENV:-}" ]] && envs+=($SBF_VM_ENV)
  if command -v runuser >/dev/null 2>&1; then
    (cd "$SBF_VM_HOME" && runuser -u "$SBF_VM_USER" -- env -i "${envs[@]}" "$@")
  else
    (cd "$SBF_VM_HOME" && setpriv --reuid="$SBF_VM_USER" --regid="$SBF_VM_USER" --init-groups \
       env -i "${envs[@]}" "$@")
  fi
}
