# shellcheck shell=bash
# passed.sh — sourced by make test (scripts/test.sh).
#
#   once LABEL EXTRA CMD...  runs CMD unless it passed before on this very tree: the same
#                            commit in a fresh clone (whose files are all new to go test's
#                            cache, which keys on their times) passes as it did.
# The key is the committed tree (only with nothing changed or untracked, and no Go file ignored),
# the Go toolchain ($GO) and the settings it builds with, LABEL, what the tests read from outside
# the tree (the SBF_ variables, which tools are installed) and EXTRA: what else the step uses
# (the Node it runs, the API server's binaries). In CI (CI=true), with SBF_TEST_AGAIN=1, with a
# go.work in use or with anything not committed, CMD always runs. A pass is remembered in
# $XDG_CACHE_HOME/sandboxforge/passed (SBF_PASSED_DIR); a failure never, nor a run that
# skipped (CMD exits 77: it passes, as a skip does).
passed_dir="${SBF_PASSED_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/sandboxforge/passed}"

# The tools the tests skip without (exec.LookPath in a _test.go); installing one un-skips them.
passed_tools=(bash git ps python3 qemu-img qemu-io qemu-system-x86_64 blkid fsck.fat mtype sbf node npm)

pass_key() { # LABEL EXTRA
  [ "${CI:-}" != true ] && [ "${SBF_TEST_AGAIN:-0}" != 1 ] || return 1
  local tree changed ignored goenv key
  tree=$(git rev-parse 'HEAD^{tree}' 2>/dev/null) &&
    changed=$(git status --porcelain --untracked-files=all --ignore-submodules=none) &&
    ignored=$(git ls-files --others --ignored --exclude-standard -- '*.go' 'go.work*') &&
    goenv=$("${GO:-go}" env GOWORK GOVERSION GOEXPERIMENT CGO_ENABLED GOOS GOARCH GOAMD64 CC) || return 1
  [ -z "$changed" ] && [ -z "$ignored" ] || return 1
  case "${goenv%%$'\n'*}" in "" | off) ;; *) return 1 ;; esac # GOWORK: modules from outside the tree
  key=$(printf '%s\n' "$1" "$2" "$tree" "${GOFLAGS:-}" "$goenv" "${GODEBUG:-}" "$(env | grep '^SBF_' | sort)" \
    "$(command -v "${passed_tools[@]}")" | sha256sum | cut -c1-32)
  [ "${#key}" = 32 ] || return 1
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
  if [ "$rc" = 77 ]; then
    return 0 # skipped, as it said: passes, never remembered
  fi
  # A tree changed while CMD ran is not the tree that passed. A cache that cannot be written
  # only means the next run runs it again.
  if [ "$rc" = 0 ] && [ -n "${stamp:-}" ] && [ "$(pass_key "$label" "$extra")" = "$stamp" ]; then
    { mkdir -p "$passed_dir" && echo "$label" >"$stamp"; } 2>/dev/null || true
  fi
  return "$rc"
}
