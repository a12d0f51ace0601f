# shellcheck shell=bash
# lima-env.sh — sourced (as root) by e2e/run.sh.
#
# The suite runs sbf the way `make run` does, on the same pieces, so the two cannot drift:
# Debian's QEMU (scripts/host-deps.sh), Lima v1.2.1 (scripts/build-lima.sh, shared with
# make run under /var/cache/sandboxforge), sbf's offline guest image (`sbf image build`),
# and an unprivileged user made by scripts/vm-user.sh (limactl refuses root). Whether KVM
# works and the software-emulation wrappers are sbf's own business (drivers/lima).
#
# sbf_e2e_setup SBF_BIN   all of the above; exports SBF_E2E_IMAGE_DIR
# as_e2e_user CMD...      run CMD as the e2e user (limactl on PATH, LIMA_HOME set)
# sbf_e2e_delete_all      force-delete every instance of the e2e user
# Knobs: SBF_E2E_USER (default sbf-e2e), SBF_E2E_HOME (default /var/lib/$SBF_E2E_USER),
#        SBF_IMAGE_CACHE (image cache folder; default the host's).

SBF_E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SBF_E2E_REPO=$(cd "$SBF_E2E_DIR/.." && pwd)
: "${SBF_E2E_USER:=sbf-e2e}"
: "${SBF_E2E_HOME:=/var/lib/$SBF_E2E_USER}"
: "${SBF_E2E_LIMA_PREFIX:=/var/cache/sandboxforge/lima-1.2.1}"
export SBF_E2E_USER SBF_E2E_HOME SBF_E2E_LIMA_PREFIX
SBF_VM_USER=$SBF_E2E_USER
SBF_VM_HOME=$SBF_E2E_HOME
# shellcheck source=../scripts/vm-user.sh
source "$SBF_E2E_REPO/scripts/vm-user.sh"
export SBF_VM_PATH=$SBF_E2E_HOME/bin:$SBF_E2E_LIMA_PREFIX/bin

_sbf_log() { echo "lima-env: $*" >&2; }

as_e2e_user() { as_vm_user "$@"; }

sbf_e2e_setup() {
  local sbf=${1:?usage: sbf_e2e_setup SBF_BIN} t0=$SECONDS
  [[ $(id -u) -eq 0 ]] || { _sbf_log "sbf_e2e_setup must run as root"; return 1; }
  "$SBF_E2E_REPO/scripts/host-deps.sh" || return 1
  "$SBF_E2E_REPO/scripts/build-lima.sh" "$SBF_E2E_LIMA_PREFIX" || return 1
  SBF_E2E_IMAGE_DIR=$("$sbf" image build debian-12) || return 1
  export SBF_E2E_IMAGE_DIR
  vm_user_setup || return 1
  vm_user_open_path "$SBF_E2E_LIMA_PREFIX/bin"
  vm_user_open_path "$SBF_E2E_IMAGE_DIR"
  _sbf_log "ready in $((SECONDS - t0))s: user=$SBF_E2E_USER LIMA_HOME=$LIMA_HOME image=$SBF_E2E_IMAGE_DIR"
}

sbf_e2e_delete_all() {
  local n
  for n in $(as_e2e_user limactl list --quiet 2>/dev/null); do
    as_e2e_user limactl delete --force "$n" >/dev/null 2>&1 || true
  done
}
