# shellcheck shell=bash
# heartbeat.sh — sourced by make run (scripts/run-example.sh), make test (scripts/test.sh),
# scripts/build-lima.sh and scripts/kube-test-bins.sh.
#
#   with_heartbeat LABEL CMD...  runs CMD; while it runs, writes "LABEL: still running (Ns)"
#                                to stderr every SBF_HEARTBEAT_SECONDS (default 15, so that a
#                                line comes at least every 20 s, as the README promises), so a
#                                step silent for minutes (a cold go build, a module
#                                download) is never mistaken for a hang. Returns CMD's status.
# CMD runs as the caller would run it (under the caller's set -e a failure still ends the
# script at once); the heartbeat ends within a second of its caller, whatever ends it.
# Lines are timed by the clock ($SECONDS), not by counting turns of the loop: on a loaded
# machine a turn (sleep 1, ps, tr) takes longer than a second, and counted turns made a
# 20 s promise into lines 23-32 s apart.

with_heartbeat() {
  local label=$1 every=${SBF_HEARTBEAT_SECONDS:-15} start=$SECONDS parent=$BASHPID hb rc
  shift
  (
    # Its parent gone (even a zombie not yet reaped), the loop is an orphan: it stops.
    me=$BASHPID last=$start
    while sleep 1 && [[ $(ps -o ppid= -p "$me" 2>/dev/null | tr -d ' ') == "$parent" ]]; do
      if ((SECONDS - last >= every)); then
        last=$SECONDS
        echo "    ... $label: still running ($((SECONDS - start))s)" >&2
      fi
    done
  ) &
  hb=$!
  "$@"       # not in a || list: that would switch set -e off inside CMD's functions
  rc=$?
  # SIGKILL: a subshell killed by SIGTERM before it has reset the traps it was forked with runs
  # its caller's EXIT trap (make test's ends every job beside the step; another script's removes
  # its work folder). A command that ends at once stops the heartbeat in that window.
  kill -KILL "$hb" 2>/dev/null || true
  wait "$hb" 2>/dev/null || true
  return "$rc"
}
