#!/usr/bin/env bash
# recipe-hash.sh — print the cache key of the e2e guest image: the sha256 of every file
# that decides its content (build-image.sh, this script, files/*) plus the host arch.
# Changing any of them makes cached-image.sh build a new image.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
{
  find build-image.sh recipe-hash.sh files -type f | LC_ALL=C sort | xargs sha256sum
  echo "arch $(uname -m)"
  echo "compose ${SBF_E2E_COMPOSE_VERSION:-default}"
} | sha256sum | cut -c1-64
