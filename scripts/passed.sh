# shellcheck shell=bash
# passed.sh — sourced by make test (scripts/test.sh).
#
#   once LABEL EXTRA CMD...  runs CMD unless it passed before on this very tree: the same
#                            commit in a fresh clone (whose files are all new to go test's
#                            cache, which keys on their times) passes as it did.
# The key is the committed tree (only with nothing changed, untracked files included), the Go
# toolchain ($GO) and its settings ($GOFLAGS), LABEL, and EXTRA: what the step uses from outside
# the tree (the Node it runs, the API server's binaries). In CI (CI=true), with SBF_TEST_AGAIN=1
# or with anything not committed, CMD always runs. A pass is remembered in
# $XDG_CACHE_HOME/sandboxforge/passed (SBF_PASSED_DIR), a failure never.
passed_dir="${SBF_PASSED_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/sandboxforge/passed}"

pass_key() { # LABEL EXTRA
  [ "${CI:-}" != true ] && [ "${SBF_TEST_AGAIN:-0}" != 1 ] || return 1
  local tree changed key
  tree=$(git rev-parse 'HEAD^{tree}' 2>/dev/null) && changed=$(git status --porcelain) || return 1
  [ -z "$changed" ] || return 1
  key=$(printf '%s\n' "$1" "$2" "$tree" "${GOFLAGS:-}" \
    "$("${GO:-go}" env GOVERSION GOEXPERIMENT CGO_ENABLED GOARCH)" | sha256sum | cut -c1-32)
  echo "$passed_dir/$key"
}

once() { # LABEL EXTRA CMD...
  local label=$1 extra=$2 stamp
  shift 2
  if stamp=$(pass_key "$label" "$extra") && [ -e "$stamp" ]; then
    echo "$label: passed on this very tree with this Go on $(date -r "$stamp" '+%F %R'); not run again" \
      "(SBF_TEST_AGAIN=1 runs it)"
    return 0
  fi
  local rc=0
  "$@" || rc=$? # CMD's functions chain their steps with &&: set -e is off in a || list
  # A tree changed while CMD ran is not the tree that passed.
  if [ "$rc" = 0 ] && [ -n "${stamp:-}" ] && [ "$(pass_key "$label" "$extra")" = "$stamp" ]; then
    mkdir -p "$passed_dir" && echo "$label" >"$stamp"
  fi
  return "$rc"
}
