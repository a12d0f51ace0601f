#!/usr/bin/env bash
# run-example.sh — `make run`: the main job on this machine, from a clean clone.
#
# Builds sbf, asks `sbf doctor` what the machine can do, builds what is missing (Lima
# v1.2.1 when no limactl is on PATH; sbf's offline Debian image when the example's
# default image cannot be downloaded), then converges examples/hello on a real VM, runs a
# command in it and shows the status. The VM keeps running: `sbf destroy` (as the same
# user) removes it, and its lease (1h) ends it otherwise when `sbf reconcile` runs.
#
# As root (limactl refuses root) the example runs as the unprivileged user "sbf", made the
# way the e2e suite makes its own (scripts/vm-user.sh), on a copy of the example in that
# user's home; QEMU comes from Debian's packages (scripts/host-deps.sh).
# `run-example.sh down` (make run-down) destroys the example's VM, and does nothing else.
# Knobs: SBF_EXAMPLE (default examples/hello), SBF_IMAGE_CACHE (image cache folder; CI
# points it at an empty one with SBF_CI_COLD=1 to prove the cold path), SBF_RUN_OFFLINE_IMAGE=1 (use
# sbf:debian-12 even where the default image could be downloaded), SBF_VM_USER.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
command -v go >/dev/null || export PATH=/usr/local/go/bin:$PATH
EXAMPLE=${SBF_EXAMPLE:-examples/hello}
SANDBOX=$(sed -n 's/^\[sandboxes\.\([A-Za-z0-9_-]*\)\].*/\1/p' "$EXAMPLE/.sandboxforge.toml" | head -n1)
SBF=$REPO/bin/sbf
MODE=${1:-up}
ROOT=0; [[ $(id -u) -eq 0 ]] && ROOT=1

# shellcheck source=heartbeat.sh
source "$REPO/scripts/heartbeat.sh"
PHASES=()
T_ALL=$SECONDS
# phase LABEL CMD...: run CMD with a banner and a line at least every 20 s while it runs
# (a cold sbf build takes minutes and prints nothing), record how long it took.
phase() {
  local label=$1 t=$SECONDS; shift
  echo "==> make run: $label" >&2
  with_heartbeat "$label" "$@"
  PHASES+=("$(printf '%-34s %5ss' "$label" $((SECONDS - t)))")
}
# reporting LABEL CMD...: a phase whose command says itself, every 20 s, what is still
# running (sbf apply, sbf image build, build-lima.sh): a second heartbeat would only
# interleave with its own.
reporting() {
  local label=$1 t=$SECONDS; shift
  echo "==> make run: $label" >&2
  "$@"
  PHASES+=("$(printf '%-34s %5ss' "$label" $((SECONDS - t)))")
}
summary() {
  echo "==> make run: phases" >&2
  printf '    %s\n' "${PHASES[@]}" "$(printf '%-34s %5ss' total $((SECONDS - T_ALL)))" >&2
}
trap summary EXIT

build() {
  go build -buildvcs=auto -o "$SBF" ./cmd/sbf # devel, with the commit Go embeds
  go build -buildvcs=auto -o "$(dirname "$SBF")/sbf-server" ./cmd/sbf-server # sbf mcp, serve, compose files
}

# make run-down: destroy the example's VM with the sbf and limactl make run left, and
# nothing else (no build, no doctor, no packages): when they are not there, neither is a VM.
down() {
  local limactl p
  limactl=$(command -v limactl || true)
  for p in "$REPO/.tools/lima/bin/limactl" /var/cache/sandboxforge/lima-1.2.1/bin/limactl; do
    [[ -z "$limactl" && -x "$p" ]] && limactl=$p
  done
  if [[ -z "$limactl" ]]; then
    echo "make run-down: no limactl here, so make run made no VM to destroy" >&2
    return 0
  fi
  PATH=$(dirname "$limactl"):$PATH
  export PATH
  if ((ROOT)); then
    # shellcheck source=vm-user.sh
    source "$REPO/scripts/vm-user.sh"
    if [[ ! -x "$SBF_VM_HOME/bin/sbf" ]]; then
      echo "make run-down: no $SBF_VM_HOME/bin/sbf, so make run made no VM to destroy" >&2
      return 0
    fi
    SBF_VM_PATH=$SBF_VM_HOME/bin:$(dirname "$limactl")
    export SBF_VM_PATH
    phase "sbf destroy" as_vm_user sbf destroy -C "$SBF_VM_HOME/$EXAMPLE" --auto-approve
  else
    [[ -x "$SBF" ]] || phase "build sbf" build # a clone that never ran make run
    phase "sbf destroy" "$SBF" destroy -C "$EXAMPLE" --auto-approve
  fi
}
if [[ $MODE == down ]]; then
  down
  exit 0
fi

phase "build sbf" build
# The Lima an earlier make run built goes on PATH before the doctor looks for limactl.
LIMA_PREFIX=$REPO/.tools/lima
((ROOT)) && LIMA_PREFIX=/var/cache/sandboxforge/lima-1.2.1 # readable by the VM user
if ! command -v limactl >/dev/null && [[ -x "$LIMA_PREFIX/bin/limactl" ]]; then
  PATH=$LIMA_PREFIX/bin:$PATH
fi
# What the machine can do, before anything slow. The checks this script answers itself are
# skipped here, so a 'fail' line is one that blocks the run: it builds Lima v1.2.1 when limactl
# is missing and the offline image when the example's cannot be downloaded, and as root it
# installs QEMU and runs the example as an unprivileged user. Doctor checks everything again,
# as the user the example runs as, before the apply.
DOCTOR_SKIP=(--skip limactl --skip image)
((ROOT)) && DOCTOR_SKIP+=(--skip user --skip qemu)
phase "sbf doctor" bash -c '"$0" doctor -C "$1" "${@:2}" || true' "$SBF" "$EXAMPLE" "${DOCTOR_SKIP[@]}"

# --- what is missing ------------------------------------------------------------------
if ((ROOT)); then
  phase "host packages (QEMU)" scripts/host-deps.sh
fi
if ! LIMACTL=$(command -v limactl) || [[ $LIMACTL == "$LIMA_PREFIX/bin/limactl" ]]; then
  reporting "Lima v1.2.1" scripts/build-lima.sh "$LIMA_PREFIX" # checks (and repairs) one already there
  LIMACTL=$LIMA_PREFIX/bin/limactl
fi
export PATH=$(dirname "$LIMACTL"):$PATH

# The example's default image (Lima's template:docker, an Ubuntu cloud image) needs the
# internet; without it, boot sbf's offline image instead, through the uncommitted
# .sandboxforge.local.toml layer so the committed example stays as a user would write it.
LOCAL_LAYER=""
if ! "$SBF" doctor -C "$EXAMPLE" --only image >/dev/null 2>&1 || [[ -n "${SBF_RUN_OFFLINE_IMAGE:-}" ]]; then
  if ! grep -qs 'sbf:debian-12' "$EXAMPLE/.sandboxforge.local.toml"; then
    echo "make run: the example's default image cannot be downloaded here; using sbf:debian-12 (built offline)" >&2
  fi
  reporting "image sbf:debian-12" bash -c '"$0" image build debian-12 >/dev/null' "$SBF"
  LOCAL_LAYER='# Written by make run: this machine cannot download the default image, so the example
# boots the image sbf builds offline (sbf image build). Delete this file to use the default.
[vm.image]
location = "sbf:debian-12"
'
fi

# --- the example ------------------------------------------------------------------------
if ((ROOT)); then
  # shellcheck source=vm-user.sh
  source "$REPO/scripts/vm-user.sh"
  vm_user_setup
  WS=$SBF_VM_HOME/$EXAMPLE
  install -d -o "$SBF_VM_USER" -g "$SBF_VM_USER" "$SBF_VM_HOME/bin" "$WS"
  install -m 0755 "$SBF" "$SBF_VM_HOME/bin/sbf"
  install -m 0755 "$SBF-server" "$SBF_VM_HOME/bin/sbf-server" # compose files, sbf mcp, sbf serve
  # The spec files only: the user's own .sandboxforge/ (state, leases) stays.
  tar -C "$EXAMPLE" --exclude=.sandboxforge --exclude=.sandboxforge.local.toml -cf - . | tar -C "$WS" -xf -
  [[ -n "$LOCAL_LAYER" ]] && printf '%s' "$LOCAL_LAYER" >"$WS/.sandboxforge.local.toml"
  chown -R "$SBF_VM_USER:" "$WS"
  vm_user_open_path "$(dirname "$LIMACTL")"
  [[ -n "${SBF_IMAGE_CACHE:-}" ]] && vm_user_open_path "$SBF_IMAGE_CACHE"
  export SBF_VM_PATH=$SBF_VM_HOME/bin:$(dirname "$LIMACTL")
  echo "make run: running the example as user $SBF_VM_USER in $WS (limactl refuses root)" >&2
  run_sbf() { as_vm_user sbf "$@"; }
else
  WS=$EXAMPLE
    if [[ -n "$LOCAL_LAYER" ]] && { [[ ! -e "$WS/.sandboxforge.local.toml" ]] || grep -qs 'Written by make run' "$WS/.sandboxforge.local.toml"; }; then
    printf '%s' "$LOCAL_LAYER" >"$WS/.sandboxforge.local.toml"
  fi
  run_sbf() { "$SBF" "$@"; }
fi

phase "sbf doctor (the VM's user)" run_sbf doctor -C "$WS"
reporting "sbf apply" run_sbf apply -C "$WS" --auto-approve
phase "sbf exec $SANDBOX -- uname -a" run_sbf exec -C "$WS" "$SANDBOX" -- uname -a
phase "sbf status" run_sbf status -C "$WS"
echo "make run: the VM keeps running; 'make run-down' destroys it" >&2
