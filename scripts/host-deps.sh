#!/usr/bin/env bash
# host-deps.sh — install (with apt, quietly) the host packages the real-VM e2e suite needs,
# only if some are missing. Run as root. Idempotent.
#
#   qemu-system-x86 (or -arm)  the VM (pulls seabios for Lima's legacyBIOS boot)
#   qemu-utils                 qemu-img: Lima makes the instance disk as a qcow2 overlay
#   openssh-client             ssh/ssh-keygen: limactl talks to the guest only over ssh
#   debootstrap, debian-archive-keyring, e2fsprogs (mkfs.ext4 -d)  building the guest image
#   curl                       probing Lima's port forwards from the host
#   ca-certificates            HTTPS mirrors, if the host's apt uses one
# Recommends are not installed (no GUI, no OVMF: direct kernel boot with legacy BIOS).
set -euo pipefail

case "$(uname -m)" in
  x86_64) qemu_pkg=qemu-system-x86 ;;
  aarch64|arm64) qemu_pkg=qemu-system-arm ;;
  *) echo "host-deps: unsupported arch $(uname -m)" >&2; exit 1 ;;
esac

pkgs=("$qemu_pkg" qemu-utils openssh-client debootstrap debian-archive-keyring e2fsprogs curl ca-certificates)

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "host-deps: all present" >&2
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "host-deps: missing ${missing[*]} and not root" >&2
  exit 1
fi

echo "host-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
  cat "$log" >&2
  echo "host-deps: apt-get failed" >&2
  exit 1
fi
echo "host-deps: done" >&2
