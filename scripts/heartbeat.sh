# shellcheck shell=bash
# heartbeat.sh — sourced by make run (scripts/run-example.sh) and scripts/build-lima.sh.
#
#   with_heartbeat LABEL CMD...  runs CMD; while it runs, writes "LABEL: still running (Ns)"
#                                to stderr every SBF_HEARTBEAT_SECONDS (default 20), so a
#                                step silent for minutes (a cold go build, a module
#                                download) is never mistaken for a hang. Returns CMD's status.
# CMD runs as the caller would run it (under the caller's set -e a failure still ends the
# script at once); the heartbeat ends within a second of its caller, whatever ends it.

with_heartbeat() {
  local label=$1 every=${SBF_HEARTBEAT_SECONDS:-20} start=$SECONDS parent=$BASHPID hb rc
  shift
  (
    # Its parent gone (even a zombie not yet reaped), the loop is an orphan: it stops.
    n=0 me=$BASHPID
    while sleep 1 && [[ $(ps -o ppid= -p "$me" 2>/dev/null | tr -d ' ') == "$parent" ]]; do
      n=$((n + 1))
      ((n % every == 0)) && echo "    ... $label: still running ($((SECONDS - start))s)" >&2
    done
  ) &
  hb=$!
  "$@"       # not in a || list: that would switch set -e off inside CMD's functions
  rc=$?
  kill "$hb" 2>/dev/null || true
  wait "$hb" 2>/dev/null || true
  return "$rc"
}
