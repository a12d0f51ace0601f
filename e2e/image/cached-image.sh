#!/usr/bin/env bash
# cached-image.sh — print the directory holding the e2e guest image
# ({vmlinuz,initrd.img,disk.ext4,recipe.sha256}), building it first if it is not cached.
#
# Why: building the image takes minutes; it only has to be rebuilt when its recipe
# changes. The cache lives outside the checkout, in ${SBF_E2E_CACHE:-/var/cache/sbf-e2e},
# keyed by recipe-hash.sh (sha256 of build-image.sh and its input files). A build runs in
# a temporary directory inside the cache and is renamed into place only when complete,
# so an interrupted build never leaves a half image where this script would find it.
# Concurrent callers are serialised with flock. Images of older recipes are removed after
# a successful build (set SBF_E2E_KEEP_OLD_IMAGES=1 to keep them).
# Only the directory is printed on stdout; progress goes to stderr. Building needs root.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${SBF_E2E_CACHE:-/var/cache/sbf-e2e}
KEY=$("$HERE/recipe-hash.sh")
DIR=$CACHE/image-$KEY

complete() {
  [[ -s "$1/vmlinuz" && -s "$1/initrd.img" && -s "$1/disk.ext4" ]] &&
    [[ "$(cat "$1/recipe.sha256" 2>/dev/null)" == "$KEY" ]]
}

if complete "$DIR"; then
  echo "$DIR"
  exit 0
fi

[[ $(id -u) -eq 0 ]] || { echo "cached-image: image $KEY not cached and not root, cannot build" >&2; exit 1; }

mkdir -p "$CACHE"
chmod 0755 "$CACHE"
exec 9>"$CACHE/.lock"
flock 9
if complete "$DIR"; then      # built by someone else while we waited
  echo "$DIR"
  exit 0
fi

# Leftovers of interrupted builds (nobody else builds while we hold the lock).
rm -rf "$CACHE"/.tmp-image-*
tmp=$(mktemp -d "$CACHE/.tmp-image-$KEY.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

echo "cached-image: building image $KEY" >&2
start=$(date +%s)
"$HERE/build-image.sh" "$tmp/out"
chmod 0755 "$tmp/out"
rm -rf "$DIR"
mv -T "$tmp/out" "$DIR"
echo "cached-image: built $DIR in $(( $(date +%s) - start ))s" >&2

if [[ "${SBF_E2E_KEEP_OLD_IMAGES:-0}" != 1 ]]; then
  for old in "$CACHE"/image-*; do
    [[ "$old" == "$DIR" ]] || rm -rf "$old"
  done
fi
echo "$DIR"
