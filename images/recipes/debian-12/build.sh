#!/usr/bin/env bash
# build.sh OUTDIR — the recipe of sbf's "sbf:debian-12" guest image: Debian 12 (bookworm)
# with Docker and Compose v2 preinstalled, booted by Lima's direct kernel boot (no
# bootloader, no partitions). `sbf image build` runs it (embedded in the sbf binary) with
# stdout and stderr both sent to its progress output; do not call it directly.
#
# Why: no cloud image can be downloaded on these machines, but Debian's mirror and the Go
# module proxy are reachable, so the image is made here:
#   - debootstrap --variant=minbase + systemd, udev, openssh-server, sudo, iproute2,
#     ifupdown + isc-dhcp-client (cloud-init's ENI renderer), ca-certificates, kmod,
#     libpam-systemd (else user@UID.service fails), then linux-image, cloud-init,
#     iptables and docker.io in the chroot;
#   - the Docker Compose v2 CLI plugin, built from the Go module proxy (bookworm only
#     packages compose v1, and the suite needs `docker compose config --hash`), installed
#     as /usr/libexec/docker/cli-plugins/docker-compose;
#   - cloud-init: datasource_list [NoCloud, None], locale false, manage_etc_hosts localhost;
#   - initramfs MODULES=list with the virtio modules; fstab mounts the root by label;
#   - the Lima user is put in the docker group at boot (files/00-00-sbf-docker-group.sh);
#   - no message of the day for SSH sessions (pam_motd off in /etc/pam.d/sshd: it cost each new
#     connection ~0.2-0.3 s under emulation);
#   - ssh host keys and machine-id removed (regenerated per instance), docs/locales and
#     kernel modules for hardware a VM never has pruned.
# The kernel must be booted with apparmor=0 (Debian's kernel enables AppArmor and the
# image has no apparmor package, which makes `docker run` fail otherwise).
#
# Output: OUTDIR/{vmlinuz,initrd.img,disk.ext4}; disk.ext4 is a raw ext4
# filesystem labelled "limaroot" (boot with root=/dev/vda). OUTDIR must not exist or be
# empty. Run as root.
#
# Environment:
#   SBF_IMAGE_DEBIAN_MIRROR  Debian archive URL (default: taken from the host's apt sources)
set -euo pipefail

SUITE=bookworm
COMPOSE_VERSION=v2.40.3
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

OUTDIR=${1:?usage: build-image.sh OUTDIR}
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
if [[ -n "$(ls -A "$OUTDIR")" ]]; then
  echo "build-image: $OUTDIR is not empty" >&2
  exit 1
fi
[[ $(id -u) -eq 0 ]] || { echo "build-image: must run as root" >&2; exit 1; }
for c in debootstrap mkfs.ext4 chroot; do
  command -v "$c" >/dev/null || { echo "build-image: $c missing (Debian: apt-get install debootstrap e2fsprogs)" >&2; exit 1; }
done
command -v go >/dev/null || export PATH=/usr/local/go/bin:$PATH

t0=$(date +%s)
log() { echo "build-image: [$(( $(date +%s) - t0 ))s] $*" >&2; }

# --- the Debian mirror: the host's own apt source, never a name written in this repo ---
find_mirror() {
  # One-line format: "deb [opts] URI suite comps"; deb822: Types/URIs/Suites paragraphs.
  # Take the first enabled "deb" entry whose URI is not a security archive.
  local f
  {
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
      [[ -r $f ]] && awk '$1=="deb" { for (i=2;i<=NF;i++) if ($i ~ /^[a-z]+:\/\//) { print $i; break } }' "$f"
    done
    for f in /etc/apt/sources.list.d/*.sources; do
      [[ -r $f ]] && awk '
        BEGIN { RS=""; FS="\n" }
        { types=""; uris=""; enabled="yes"
          for (i=1;i<=NF;i++) {
            if ($i ~ /^Types:/)   { types=$i }
            if ($i ~ /^URIs:/)    { uris=$i; sub(/^URIs:[ \t]*/, "", uris) }
            if ($i ~ /^Enabled:/) { enabled=tolower($i); sub(/^enabled:[ \t]*/, "", enabled) }
          }
          if (types ~ /(^|[ \t])deb([ \t]|$)/ && enabled != "no" && uris != "") { split(uris, u, /[ \t]+/); print u[1] }
        }' "$f"
    done
  } | grep -v -i security | grep -E '/debian/?$' | head -n1
}
MIRROR=${SBF_IMAGE_DEBIAN_MIRROR:-$(find_mirror || true)}
[[ -n "$MIRROR" ]] || { echo "build-image: no Debian mirror found in apt sources; set SBF_IMAGE_DEBIAN_MIRROR" >&2; exit 1; }

case "$(uname -m)" in
  x86_64) DEB_ARCH=amd64; GOARCH=amd64 ;;
  aarch64|arm64) DEB_ARCH=arm64; GOARCH=arm64 ;;
  *) echo "build-image: unsupported arch $(uname -m)" >&2; exit 1 ;;
esac

WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/sbf-image.XXXXXX")
ROOT=$WORK/rootfs
mkdir -p "$ROOT"

unmount_all() {
  local m
  for m in dev/pts proc sys; do
    if mountpoint -q "$ROOT/$m" 2>/dev/null; then umount "$ROOT/$m" || umount -l "$ROOT/$m" || true; fi
  done
}
kill_tree() {   # kill a process and all its descendants (the background compose build)
  local c
  for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do kill_tree "$c"; done
  kill "$1" 2>/dev/null || true
}
cleanup() {
  local rc=$?
  if [[ -n "${COMPOSE_PID:-}" ]]; then kill_tree "$COMPOSE_PID"; fi
  unmount_all
  # Never rm -rf through a live mount.
  if findmnt -rn -o TARGET | grep -q "^$WORK/"; then
    echo "build-image: mounts remain under $WORK; not removing it" >&2
  else
    rm -rf "$WORK"
  fi
  exit $rc
}
trap cleanup EXIT

# --- Docker Compose v2 plugin: CPU-bound Go build, run while debootstrap downloads ---
build_compose() {
  local dir
  dir=$(cd "$WORK" && GOFLAGS=-mod=mod go mod download -json "github.com/docker/compose/v2@$COMPOSE_VERSION" |
        sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [[ -d "$dir" ]] || { echo "compose module download failed" >&2; return 1; }
  # The version variable has lived in internal/ since v2.20; fail loudly if that moves.
  grep -q '^var Version' "$dir/internal/variables.go" || { echo "compose: internal.Version not found" >&2; return 1; }
  cp -r "$dir" "$WORK/compose-src"
  chmod -R u+w "$WORK/compose-src"
  (cd "$WORK/compose-src" &&
   CGO_ENABLED=0 GOOS=linux GOARCH=$GOARCH go build -buildvcs=false -trimpath \
     -ldflags "-s -w -X github.com/docker/compose/v2/internal.Version=$COMPOSE_VERSION" \
     -o "$WORK/docker-compose" ./cmd)
}
log "building docker compose $COMPOSE_VERSION in the background (log: $WORK/compose.log)"
build_compose >"$WORK/compose.log" 2>&1 &
COMPOSE_PID=$!

# --- base system ---
log "debootstrap $SUITE ($DEB_ARCH, minbase)"
debootstrap --variant=minbase --arch="$DEB_ARCH" \
  --include=systemd,systemd-sysv,udev,dbus,openssh-server,sudo,iproute2,ifupdown,isc-dhcp-client,ca-certificates,kmod,libpam-systemd,e2fsprogs,initramfs-tools \
  "$SUITE" "$ROOT" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 ||
  { tail -n 30 "$WORK/debootstrap.log" >&2; exit 1; }

# No docs, man pages or translations from here on.
cat >"$ROOT/etc/dpkg/dpkg.cfg.d/01-sbf-nodoc" <<'EOF'
path-exclude=/usr/share/doc/*
path-include=/usr/share/doc/*/copyright
path-exclude=/usr/share/man/*
path-exclude=/usr/share/info/*
path-exclude=/usr/share/locale/*
path-include=/usr/share/locale/locale.alias
path-exclude=/usr/share/lintian/*
EOF
# Initramfs (initramfs-tools came with debootstrap): only the listed (virtio) modules, gzip.
printf 'MODULES=list\nCOMPRESS=gzip\n' >"$ROOT/etc/initramfs-tools/conf.d/90-sbf"
grep -v '^#' "$HERE/files/initramfs-modules" >>"$ROOT/etc/initramfs-tools/modules"
# Do not start services inside the chroot.
printf '#!/bin/sh\nexit 101\n' >"$ROOT/usr/sbin/policy-rc.d"
chmod 0755 "$ROOT/usr/sbin/policy-rc.d"
cp -L /etc/resolv.conf "$ROOT/etc/resolv.conf" 2>/dev/null || true

mount -t proc proc "$ROOT/proc"
mount -t sysfs sysfs "$ROOT/sys"
mkdir -p "$ROOT/dev/pts"
mount -t devpts -o newinstance,ptmxmode=0666 devpts "$ROOT/dev/pts"

log "installing kernel, cloud-init, iptables, docker.io"
chroot "$ROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive LC_ALL=C \
  sh -c "apt-get update -qq && apt-get install -y -qq --no-install-recommends \
         linux-image-$DEB_ARCH cloud-init iptables docker.io" \
  >"$WORK/apt.log" 2>&1 || { tail -n 40 "$WORK/apt.log" >&2; exit 1; }

# --- configuration ---
install -m 0644 "$HERE/files/cloud-init.cfg" "$ROOT/etc/cloud/cloud.cfg.d/90-sbf.cfg"
install -d -m 0755 "$ROOT/var/lib/cloud/scripts/per-boot"
install -m 0755 "$HERE/files/00-00-sbf-docker-group.sh" "$ROOT/var/lib/cloud/scripts/per-boot/00-00-sbf-docker-group.sh"
echo 'LABEL=limaroot / ext4 defaults 0 0' >"$ROOT/etc/fstab"  # no fsck: the initramfs has none
echo localhost >"$ROOT/etc/hostname"
# Timers that only cost time in a short-lived test VM.
chroot "$ROOT" systemctl mask apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer >/dev/null 2>&1 || true
# No message of the day: pam_motd runs update-motd.d (run-parts, uname) when each SSH connection
# opens its first session, also one that only runs commands and shows it to no one. Under
# emulation that was ~0.2-0.3 s of every new connection sbf makes (a server's first command on a
# spare, an exec broker, a fork's children): the first session 530-720 ms, 350-380 ms without.
sed -i 's/^session[[:space:]]\+optional[[:space:]]\+pam_motd\.so/# sbf: &/' "$ROOT/etc/pam.d/sshd"
if grep -q '^session[[:space:]].*pam_motd' "$ROOT/etc/pam.d/sshd"; then
  echo "build-image: pam_motd is still in /etc/pam.d/sshd" >&2
  exit 1
fi

# --- compose plugin ---
log "waiting for the compose build"
if ! wait "$COMPOSE_PID"; then
  COMPOSE_PID=
  tail -n 40 "$WORK/compose.log" >&2
  echo "build-image: compose build failed" >&2
  exit 1
fi
COMPOSE_PID=
install -d -m 0755 "$ROOT/usr/libexec/docker/cli-plugins"
install -m 0755 "$WORK/docker-compose" "$ROOT/usr/libexec/docker/cli-plugins/docker-compose"

# --- prune ---
log "pruning"
KVER=$(ls "$ROOT/lib/modules" | sort -V | tail -n1)
K=$ROOT/lib/modules/$KVER/kernel
for d in drivers/gpu drivers/media sound drivers/net/wireless drivers/net/ethernet drivers/net/can \
         drivers/usb drivers/bluetooth drivers/infiniband drivers/isdn drivers/staging drivers/iio \
         drivers/mmc drivers/nfc drivers/thunderbolt drivers/hwmon drivers/leds drivers/mtd drivers/w1 \
         drivers/atm drivers/target drivers/video drivers/input/touchscreen drivers/input/joystick \
         drivers/input/tablet drivers/platform/chrome drivers/platform/surface \
         net/bluetooth net/wireless net/mac80211 net/nfc net/can net/atm \
         fs/ocfs2 fs/gfs2 fs/ceph fs/ubifs fs/jffs2 fs/nilfs2 fs/orangefs fs/dlm; do
  rm -rf "${K:?}/$d"
done
chroot "$ROOT" depmod -a "$KVER"
rm -rf "$ROOT"/usr/share/doc/* "$ROOT"/usr/share/man/* "$ROOT"/usr/share/info/*
find "$ROOT/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} +
chroot "$ROOT" apt-get clean
rm -rf "$ROOT"/var/lib/apt/lists/* "$ROOT"/var/cache/apt/*.bin "$ROOT"/var/cache/debconf/*-old \
       "$ROOT"/var/log/*.log "$ROOT"/var/log/apt/* "$ROOT"/tmp/* "$ROOT"/var/tmp/*

# --- per-instance identity: regenerated on first boot ---
rm -f "$ROOT"/etc/ssh/ssh_host_* "$ROOT/var/lib/dbus/machine-id" "$ROOT/usr/sbin/policy-rc.d"
: >"$ROOT/etc/machine-id"
: >"$ROOT/etc/resolv.conf"
rm -rf "$ROOT/var/lib/cloud/instances" "$ROOT/var/lib/cloud/instance"

unmount_all

# --- outputs ---
log "copying kernel and initrd ($KVER)"
install -m 0644 "$ROOT/boot/vmlinuz-$KVER" "$OUTDIR/vmlinuz"
install -m 0644 "$ROOT/boot/initrd.img-$KVER" "$OUTDIR/initrd.img"

used_mb=$(du -sx --block-size=1M "$ROOT" | cut -f1)
size_mb=$(( used_mb * 5 / 4 + 256 ))
log "mkfs.ext4 -L limaroot -d rootfs (${used_mb} MiB used, ${size_mb} MiB image)"
mkfs.ext4 -q -L limaroot -d "$ROOT" "$OUTDIR/disk.ext4" "${size_mb}M"
chmod 0644 "$OUTDIR/disk.ext4"

log "done: $(cd "$OUTDIR" && du -h --apparent-size vmlinuz initrd.img disk.ext4 | tr '\n' ' ')"
