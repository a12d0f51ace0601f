#!/usr/bin/env bash
# test.sh — `make test`: every check CI runs, in order, each step timed, with a
# line at least every 20 s while a step is silent (scripts/heartbeat.sh), so a
# long package is never mistaken for a hang.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=heartbeat.sh
source scripts/heartbeat.sh
GO=${GO:-go}
start=$SECONDS

step() {
  local label=$1 t0=$SECONDS
  shift
  echo "== $label"
  with_heartbeat "$label" "$@"
  echo "   $label: $((SECONDS - t0))s"
}

# Checks that only compile (the cross-OS vet and type-checks) do not wait for the tests: they
# run beside the race tests at a lower priority (nice), and the bounded fuzz runs and the MCP
# conformance suite beside the kubevirt tests, so they take the CPU the tests leave idle while
# they wait on processes, sockets and leases, and delay no test result. Their output is shown,
# and their status counted, when they are collected.
bg_pids=() bg_labels=() bg_logs=()
background() {
  local label=$1 log
  shift
  log=$(mktemp)
  echo "== $label (beside the others, at a lower priority)"
  (
    t0=$SECONDS rc=0
    renice -n 10 -p "$BASHPID" >/dev/null
    "$@" >"$log" 2>&1 || rc=$?
    echo "   $label: $((SECONDS - t0))s" >>"$log"
    echo "$rc" >"$log.rc" # bash may have forgotten the status of a job that ended long ago
  ) &
  bg_pids+=("$!") bg_labels+=("$label") bg_logs+=("$log")
}
await() { wait "$1" 2>/dev/null || true; }
collect() {
  local i failed=0
  for i in "${!bg_pids[@]}"; do
    echo "== ${bg_labels[$i]} (collected)"
    with_heartbeat "${bg_labels[$i]}" await "${bg_pids[$i]}"
    cat "${bg_logs[$i]}"
    if [ "$(cat "${bg_logs[$i]}.rc" 2>/dev/null)" != 0 ]; then
      failed=1
      echo "make test: FAIL: ${bg_labels[$i]} (its output above)" >&2
    fi
    rm -f "${bg_logs[$i]}" "${bg_logs[$i]}.rc"
  done
  bg_pids=() bg_labels=() bg_logs=()
  return "$failed"
}
# A step that fails ends the script: what still runs beside it ends too, children first.
end_tree() {
  local child
  for child in $(pgrep -P "$1" || true); do end_tree "$child"; done
  kill "$1" 2>/dev/null || true
}
trap 'for pid in "${bg_pids[@]}"; do end_tree "$pid"; done' EXIT

# Go's build and test caches make a second run fast, and -trimpath lets a fresh clone share
# them: without it every package's cache key holds the folder it was cloned into. Outside CI a
# package whose code and inputs did not change is not tested again (go test's own cache); in CI
# (CI=true) every test runs (-count=1) and fuzzing is never skipped.
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-trimpath"
# A binary built with -race sleeps a second before it exits (the race detector's
# atexit_sleep_ms, for goroutines still running): a second for each of the 61 test binaries, ~30 s
# of the race step on 2 cores. Go's own race tests run with 0; a GORACE of the user's still wins.
export GORACE="atexit_sleep_ms=0${GORACE:+ $GORACE}"
count=()
if [ "${CI:-}" = true ]; then count=(-count=1); fi

# A step that passed on this very tree is not run again outside CI (scripts/passed.sh: once).
# shellcheck source=passed.sh
source scripts/passed.sh
# shellcheck source=stable-mtimes.sh
source scripts/stable-mtimes.sh

# What the tests need beyond Go: Node.js and npm for the MCP client tests (the official
# TypeScript SDK). A fresh machine gets Debian's when sbf may install packages (root with apt).
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    step "install Node.js and npm (apt)" bash -c \
      'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null'
  else
    echo "make test: FAIL: the MCP client tests need Node.js and npm; install them (Debian: apt-get install" \
      "nodejs npm) and run make test again" >&2
    exit 1
  fi
fi

# The kubevirt tests need a real kube-apiserver and etcd (make kube-test-bins, ~23 min cold,
# cached on the machine). In CI (CI=true) they must run: a green run that tested none of them
# would hide a broken cache. Elsewhere a machine without them skips them, saying so loudly and
# how to run them, unless SBF_KUBE_REQUIRED=1 asks for them too. They run after the race tests,
# not beside them: tried beside them, under the load one run's kill in a crash test missed the
# window it aims at.
KUBE_BINS=${KUBE_BINS:-${SBF_KUBE_BINS:-/var/cache/sandboxforge/kube-1.34.3}}
kube_step=() kube_skipped=
if [ -x "$KUBE_BINS/kube-apiserver" ] && [ -x "$KUBE_BINS/etcd" ]; then
  kube_id=$(stat -L -c '%n %s %Y' "$KUBE_BINS/kube-apiserver" "$KUBE_BINS/etcd")
  kube_step=("kubevirt (real kube-apiserver)" once "kubevirt" "$kube_id" env SBF_GO_TEST_COUNT="${count[*]}"
    make --no-print-directory test-kubevirt GO="$GO" KUBE_BINS="$KUBE_BINS")
elif [ "${CI:-}" = true ] || [ "${SBF_KUBE_REQUIRED:-0}" = 1 ]; then
  echo "make test: FAIL: no kube-apiserver and etcd in $KUBE_BINS, so the kubevirt tests cannot run" \
    "(CI=true or SBF_KUBE_REQUIRED=1 requires them). Build them: make kube-test-bins (~23 min cold)" >&2
  exit 1
else
  kube_skipped=1
fi
# Their staticcheck first: installed later, its folder would change the root's time under the
# results of the tests that look at the root (scripts/stable-mtimes.sh).
if [ "${#kube_step[@]}" -gt 0 ] && [ ! -x .tools/bin/staticcheck ]; then
  step "install staticcheck" make --no-print-directory "$PWD/.tools/bin/staticcheck"
fi
# Files' and folders' times follow their content, so go test's cache serves a fresh clone the
# results of the tests whose inputs did not change (scripts/stable-mtimes.sh; outside CI). Last
# before the tests: a folder made in the checkout after it gets a time of its own again.
stable_mtimes
# go vet's checks for windows and the vz driver's for macOS, from source (internal/tools/crossvet):
# go vet compiles every dependency for the target first, ~260 s of CPU for the three targets with a
# cold cache against ~40 s. With no cache of their own, a tree that passed them is not checked again.
background "go vet (windows)" once "go vet (windows)" "" "$GO" run ./internal/tools/crossvet -os windows ./...
background "darwin type-check (drivers/vz)" once "check-darwin" "" make --no-print-directory check-darwin GO="$GO"
# The unit and race tests first: what a change breaks shows soonest. Tests that wait on
# processes and sockets run four at a time (t.Parallel). -vet=all makes go test run every
# go vet analyzer, not only its default few, on each package and its tests: the whole of
# `go vet ./...` (make vet), without compiling every package a second time without -race.
# A package's tests may take 20 minutes, not go test's 10: the jobs beside them share the cores.
node_id="node $(node --version 2>&1)"
# The node the MCP client tests run is outside the checkout: testutil.NPMCI reads this, so a
# new node is in go test's key.
export SBF_NODE_VERSION=$node_id
step "go test -race (and go vet)" once "go test -race" "$node_id" \
  "$GO" test "${count[@]}" -race -vet=all -parallel 4 -timeout 20m ./...
# A test that moves megabytes through one goroutine runs ten times slower under the race
# detector, which finds nothing in it, and a bound on an address space meets the detector's own
# mappings: such tests skip under it (testutil.WithoutRace) and run here again without it, beside
# the kubevirt tests (beside the race tests they slowed them more than they took). Each is the
# test function its call is in; a call outside one would run nowhere, and fails here.
without_race=$(grep -rl --include='*_test.go' --exclude-dir=kubevirt --exclude-dir=.tools \
  'testutil\.WithoutRace(' . | sort | xargs -r awk '/^func /{fn=$0}
  /testutil\.WithoutRace\(/ {
    if (fn !~ /^func Test[A-Za-z0-9_]*\(/) {
      print "FAIL: " FILENAME ": testutil.WithoutRace outside a test function runs nowhere"; next }
    name = fn; sub(/^func /, "", name); sub(/\(.*/, "", name)
    dir = FILENAME; sub(/\/[^\/]*$/, "", dir); print dir, name }' | sort -u)
if grep -q '^FAIL' <<<"$without_race"; then
  grep '^FAIL' <<<"$without_race" | sed 's/^/make test: /' >&2
  exit 1
fi
if [ -n "$without_race" ]; then
  mapfile -t norace_pkgs < <(cut -d' ' -f1 <<<"$without_race" | sort -u)
  norace_run="^($(cut -d' ' -f2 <<<"$without_race" | sort -u | paste -sd'|'))\$"
  background "go test without -race ($(wc -l <<<"$without_race") tests)" once "go test without -race" "$node_id" \
    "$GO" test "${count[@]}" -vet=off -run "$norace_run" -parallel 4 -timeout 20m "${norace_pkgs[@]}"
fi
# Fuzz targets run for a bounded number of inputs: counts, not durations, because a
# -fuzztime duration can fail spuriously at its deadline before Go 1.27 (Go issue 75804)
# (and a count means the same on a loaded machine as on an idle one). Outside CI a target that
# passed on what its package is built from is not run again (once_built), as go test's cache
# does not run a test again: a change to the engine runs only the targets of packages that use it.
fuzz() { # TARGET COUNT PKG [PATH...]: PATHs hold what else it reads (seeds outside PKG's testdata)
  local target=$1 count=$2 pkg=$3 cmd
  shift 3
  cmd=("$GO" test -run '^$' -fuzz "^$target\$" -fuzztime "$count" -fuzzminimizetime 100x "$pkg")
  once_built "$pkg" "fuzz $target" "${cmd[*]} $(digest "$PWD" "$@")" "${cmd[@]}"
}
fuzz_all() { # chained: it runs in a || list (background), where set -e is off
  fuzz FuzzLoad 3000x ./spec testdata/spec &&
    fuzz FuzzLoadWithinLimits 30000x ./spec testdata/spec &&
    fuzz FuzzTreeMatchesGoTOML 30000x ./spec testdata/spec &&
    fuzz FuzzHTTPHandler 10000x ./mcpserver/streamhttp &&
    fuzz FuzzUpsertEnv 20000x ./drivers/guest &&
    fuzz FuzzRenderedTextIsSafe 20000x ./internal/termsafe
}
# A tree that passed them all is not asked about each (once, then once_built).
background "fuzz (6 targets)" once "fuzz" "" fuzz_all
# The official MCP conformance suite against sbf serve (~15 s once installed; skipped, loudly,
# only when npm's registry is unreachable), beside the kubevirt tests, which wait on leases.
background "MCP conformance" once "MCP conformance" "" env GO="$GO" SBF_SKIP_STATUS=77 bash scripts/conformance.sh
if [ -n "$kube_skipped" ]; then
  echo "=================================================================="
  echo "make test: SKIPPED the kubevirt tests: no kube-apiserver and etcd in $KUBE_BINS."
  echo "  Run them: make kube-test-bins (~23 min cold, cached) && make test-kubevirt"
  echo "=================================================================="
else
  step "${kube_step[@]}"
fi
collect
echo "make test: passed in $((SECONDS - start))s"
