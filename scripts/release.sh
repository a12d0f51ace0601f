#!/usr/bin/env bash
# make release: GoReleaser builds the archives, SHA256SUMS and the .deb and
# .rpm packages into dist/ (a snapshot unless HEAD carries a v* tag, or as
# RELEASE_MODE=snapshot|release says), this script fills in the Homebrew
# formula and builds the controller's image (an OCI archive), and
# scripts/check-release.sh checks what was made. Nothing is
# published, and nothing is fetched: the modules come from the module cache
# (`make release` runs `go mod download` first) with GOPROXY=off.
set -euo pipefail
cd "$(dirname "$0")/.."
goreleaser=${GORELEASER:?set GORELEASER to the goreleaser binary (make release does)}

mode=${RELEASE_MODE:-auto}
if [ "$mode" = auto ]; then
  mode=snapshot
  if git describe --exact-match --tags --match 'v[0-9]*' HEAD >/dev/null 2>&1; then mode=release; fi
fi
# The release notes are CHANGELOG.md's section for the tag (## vX.Y.Z ...);
# a snapshot's are the Unreleased section. GoReleaser cleans dist/, so they
# wait outside it until it is done.
notes=$(mktemp)
trap 'rm -f "$notes"' EXIT
section() { # HEADING-PREFIX: the lines under the first heading starting so, up to the next
  awk -v h="## $1" 'index($0, h) == 1 { on = 1; next } on && /^## / { exit } on' CHANGELOG.md |
    sed -e '/./,$!d' # leading blank lines
}
case $mode in
  snapshot)
    args=(release --clean --snapshot)
    section Unreleased >"$notes"
    ;;
  release)
    tag=$(git describe --exact-match --tags --match 'v[0-9]*' HEAD 2>/dev/null) ||
      { echo "release: HEAD carries no v* tag" >&2; exit 2; }
    section "$tag" >"$notes"
    if ! grep -q '[^[:space:]]' "$notes"; then
      echo "release: CHANGELOG.md has no '## $tag' section (rename '## Unreleased' to it)" >&2
      exit 2
    fi
    args=(release --clean --skip=publish,announce,validate --release-notes "$notes")
    ;;
  *) echo "RELEASE_MODE must be snapshot or release, not $mode" >&2; exit 2 ;;
esac

# GoReleaser reads the repository's URL from its remote even when it will
# not publish; a checkout without one (a worktree, a tarball made into a
# repository) gets it from the environment, not from a changed git config.
env=(GOPROXY=off GOFLAGS=-mod=readonly)
if [ -z "$(git remote)" ]; then
  env+=(GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.origin.url
    GIT_CONFIG_VALUE_0=https://github.com/sandboxforge/sbf.git)
fi
echo "release: goreleaser ${args[*]}"
env "${env[@]}" "$goreleaser" "${args[@]}"

# The formula builds from the source archive; its version, commit and date
# are the release's.
version=$(sed -n 's/.*"version":"\([^"]*\)".*/\1/p' dist/metadata.json)
commit=$(git rev-parse HEAD)
date=$(TZ=UTC git log -1 --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd HEAD) # GoReleaser's .CommitDate
source_sum=$(grep "  sbf_${version}_source.tar.gz\$" dist/SHA256SUMS | cut -d' ' -f1)
sed -e "s|@VERSION@|$version|g" -e "s|@SOURCE_SHA256@|$source_sum|g" \
  -e "s|@COMMIT@|$commit|g" -e "s|@DATE@|$date|g" packaging/homebrew/sbf.rb.tmpl >dist/sbf.rb
cp scripts/install.sh dist/install.sh
cp "$notes" dist/release-notes.md

# The in-cluster controller's image (deploy/kubevirt), linux/amd64 and linux/arm64, from the
# binaries GoReleaser just built, as an OCI image layout archive: made without a Docker daemon or
# a base image (internal/tools/ociimage says why). Stamped with SOURCE_DATE_EPOCH, else the
# commit's time, so the same commit gives the same digest.
t0=$SECONDS
image=sbf-kubevirt_${version}_oci.tar
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct HEAD)}
env "${env[@]}" "${GO:-go}" run ./internal/tools/ociimage -artifacts dist/artifacts.json -version "v$version" \
  -revision "$commit" -epoch "$epoch" -o "dist/$image"
echo "release: dist/$image in $((SECONDS - t0))s"
# The formula and the image are release files like the others: SHA256SUMS lists them too.
(cd dist && sha256sum sbf.rb "$image" >>SHA256SUMS)

bash scripts/check-release.sh dist "$version"
