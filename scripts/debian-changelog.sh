#!/usr/bin/env bash
# Writes the .deb's /usr/share/doc/sbf/changelog.gz (the name a native
# package's changelog has): one Debian-format entry for VERSION, dated
# DATE (the commit's, so the package is reproducible), pointing at
# CHANGELOG.md, which is the real account. GoReleaser runs it before
# packaging: debian-changelog.sh VERSION DATE OUT.
set -euo pipefail
version=${1:?usage: debian-changelog.sh VERSION DATE OUT} date=${2:?} out=${3:?}
version=${version/-/\~} # as nfpm writes a prerelease into the package's version
mkdir -p "$(dirname "$out")"
{
  printf 'sbf (%s) unstable; urgency=medium\n\n' "$version"
  printf '  * Release %s.\n  * /usr/share/doc/sbf/CHANGELOG.md says what changed.\n\n' "$version"
  printf ' -- SandboxForge maintainers <sbf@sandboxforge.invalid>  %s\n' "$(date -u -R -d "$date")"
} | gzip -9n >"$out"
