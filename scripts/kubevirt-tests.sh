#!/usr/bin/env bash
# kubevirt-tests.sh — the kubevirt module's tests for make test-kubevirt, counted: it says
# how many ran against the real API server, and fails when any skipped for want of it (such
# a test proves nothing) unless SBF_KUBE_SKIP=1 allowed it. (The contract suite's skips of
# capabilities the driver lacks, snapshots and clones, are counted, not failed.)
# SBF_GO_TEST_COUNT is go test's -count: -count=1 (the default, and CI's: every test runs) or
# empty (make test outside CI: a package whose code and inputs did not change is not run again;
# the integration tests read the sources of the sbf and sbf-kubevirt they build, below, so their
# cache key covers them; make test's own step runs again when the API server's binaries change).
# Run from kubevirt/.
set -euo pipefail
GO=${GO:-go}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# The integration tests run sbf and sbf-kubevirt built from sbf's module, outside this one,
# and read deploy/kubevirt's manifests, files go test's cache does not look at: the digest of
# those (passed.sh's built_from and digest), read by the tests, is in its key.
# shellcheck source=passed.sh
source ../scripts/passed.sh
outer=$(cd .. && "$GO" list -m -f '{{.Dir}}')
SBF_SOURCES_ID=$({ built_from "$outer" ./cmd/sbf-kubevirt && (cd .. && built_from "" ./cmd/sbf) &&
  digest "$outer" "$outer/deploy/kubevirt"; } | sha256sum | cut -c1-64)
export SBF_SOURCES_ID
status=0
# The parallel tests wait on leases, boots and elections, not the CPU: eight at a time (the
# integration package, every test parallel: 110 s one at a time, 70 s four at a time, 50 s eight).
# -vet=all is go vet's every analyzer on the race build (no second compile without -race).
# shellcheck disable=SC2086 # the count is one word or none
"$GO" test -race -vet=all ${SBF_GO_TEST_COUNT--count=1} -parallel 8 -v "$@" ./... >"$out" 2>&1 || status=$?
grep -E '^(ok|FAIL|---|panic:)|^\?|WARNING: DATA RACE' "$out" | grep -v -e '^--- PASS' -e '^?' || true
passed=$(grep -c -E '^\s*--- PASS' "$out" || true)
skipped=$(grep -c -E '^\s*--- SKIP' "$out" || true)
if [ "$status" != 0 ]; then
  echo "kubevirt tests failed; their output:" >&2
  cat "$out" >&2
  exit "$status"
fi
unserved=$(grep -c 'no kube-apiserver and SBF_KUBE_SKIP' "$out" || true)
echo "kubevirt: $passed tests and subtests passed, $skipped skipped ($unserved for want of an API server)," \
  "against the kube-apiserver in ${SBF_KUBE_BINS:-?}"
if [ "$unserved" != 0 ] && [ "${SBF_KUBE_SKIP:-0}" != 1 ]; then
  echo "kubevirt: FAIL: $unserved tests skipped for want of an API server; SBF_KUBE_SKIP=1 allows it" >&2
  exit 1
fi
