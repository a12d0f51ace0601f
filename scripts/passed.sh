# shellcheck shell=bash
# passed.sh — sourced by make test (scripts/test.sh).
#
#   once LABEL EXTRA CMD...  runs CMD unless it passed before on this very tree: the same
#                            commit in a fresh clone (whose files are all new to go test's
#                            cache, which keys on their times) passes as it did.
#   once_built PKG LABEL EXTRA CMD...
#                            the same, but keyed on what go test of package PKG is built from
#                            and reads (built_from) instead of the whole tree, changed or not: a
#                            step that runs one package's tests (a fuzz target) is not run again
#                            for a change elsewhere, as go test's own cache does not run them.
#   built_from ROOT PKG...   the digest of the files of the module at ROOT (the one at hand when
#                            empty) that go builds PKG from, listed here: each package's Go, cgo,
#                            assembly and embedded files and PKG's own tests and testdata, with
#                            the module's go.mod and go.sum; their names and contents (digest).
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

pass_key() { # LABEL EXTRA [PKG]
  [ "${CI:-}" != true ] && [ "${SBF_TEST_AGAIN:-0}" != 1 ] || return 1
  local tree changed= ignored= goenv key
  goenv=$("${GO:-go}" env GOWORK GOVERSION GOEXPERIMENT CGO_ENABLED GOOS GOARCH GOAMD64 CC) || return 1
  if [ -n "${3:-}" ]; then
    tree=$(built_from "" "$3") || return 1
  else
    tree=$(git rev-parse 'HEAD^{tree}' 2>/dev/null) &&
      changed=$(git status --porcelain --untracked-files=all --ignore-submodules=none) &&
      ignored=$(git ls-files --others --ignored --exclude-standard -- '*.go' 'go.work*') || return 1
  fi
  [ -z "$changed" ] && [ -z "$ignored" ] || return 1
  case "${goenv%%$'\n'*}" in "" | off) ;; *) return 1 ;; esac # GOWORK: modules from outside the tree
  key=$(printf '%s\n' "$1" "$2" "$tree" "${GOFLAGS:-}" "$goenv" "${GODEBUG:-}" "$(env | grep '^SBF_' | sort)" \
    "$(command -v "${passed_tools[@]}")" | sha256sum | cut -c1-32)
  [ "${#key}" = 32 ] || return 1
  echo "$passed_dir/$key"
}

built_from() { # ROOT PKG...
  local root=$1 tmpl files list
  shift
  if [ -z "$root" ]; then root=$("${GO:-go}" list -m -f '{{.Dir}}') || return 1; fi
  # -test lists PKG's test variants, whose files are its tests too; testdata only for PKG (not DepOnly).
  tmpl='{{if and .Module (eq .Module.Dir "'"$root"'")}}{{$d := .Dir}}{{range .GoFiles}}{{$d}}/{{.}}
{{end}}{{range .CgoFiles}}{{$d}}/{{.}}
{{end}}{{range .EmbedFiles}}{{$d}}/{{.}}
{{end}}{{range .SFiles}}{{$d}}/{{.}}
{{end}}{{range .CFiles}}{{$d}}/{{.}}
{{end}}{{range .HFiles}}{{$d}}/{{.}}
{{end}}{{range .SysoFiles}}{{$d}}/{{.}}
{{end}}{{if not .DepOnly}}{{$d}}/testdata
{{end}}{{end}}'
  files=$("${GO:-go}" list -deps -test -f "$tmpl" "$@") || return 1
  [ -n "$files" ] || return 1 # none of the module's: a digest of go.mod alone would match anything
  mapfile -t list <<<"$files"
  digest "$root" "${list[@]}" "$root/go.mod" "$root/go.sum"
}

# digest ROOT PATH...: the names (from ROOT) and contents of the files at PATH, a folder's
# files (its tree) included; a PATH that does not exist is left out.
digest() {
  local root=$1 f
  shift
  for f in "$@"; do
    if [ -d "$f" ]; then find "$f" -type f; elif [ -e "$f" ]; then printf '%s\n' "$f"; fi
  done | while IFS= read -r f; do printf '%s\n' "${f#"$root"/}"; done | sort -u |
    (cd "$root" && tr '\n' '\0' | xargs -0 -r sha256sum) | sha256sum | cut -c1-64
}

once() { # LABEL EXTRA CMD...
  local label=$1 extra=$2
  shift 2
  run_once "$label" "$extra" "" "$@"
}

once_built() { # PKG LABEL EXTRA CMD...
  local pkg=$1 label=$2 extra=$3
  shift 3
  run_once "$label" "$extra" "$pkg" "$@"
}

run_once() { # LABEL EXTRA PKG CMD...
  local label=$1 extra=$2 pkg=$3 stamp
  shift 3
  if stamp=$(pass_key "$label" "$extra" "$pkg") && [ -e "$stamp" ]; then
    if [ -n "$pkg" ]; then
      echo "$label: passed on what $pkg is built from, with this Go, on $(date -r "$stamp" '+%F %R');" \
        "not run again (SBF_TEST_AGAIN=1 runs it)"
    else
      echo "$label: passed on this very tree with this Go on $(date -r "$stamp" '+%F %R'); not run again" \
        "(SBF_TEST_AGAIN=1 runs it)"
    fi
    return 0
  fi
  local rc=0
  "$@" || rc=$? # CMD's functions chain their steps with &&: set -e is off in a || list
  if [ "$rc" = 77 ]; then
    return 0 # skipped, as it said: passes, never remembered
  fi
  # A tree changed while CMD ran is not the tree that passed. A cache that cannot be written
  # only means the next run runs it again.
  if [ "$rc" = 0 ] && [ -n "${stamp:-}" ] && [ "$(pass_key "$label" "$extra" "$pkg")" = "$stamp" ]; then
    { mkdir -p "$passed_dir" && echo "$label" >"$stamp"; } 2>/dev/null || true
  fi
  return "$rc"
}
