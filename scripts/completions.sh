#!/usr/bin/env bash
# Writes sbf's shell completions (cobra's, from `sbf completion SHELL`) to
# DIR (default completions/), for the release archives and packages. It
# builds sbf for this host once: completions do not depend on the target.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-completions}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/sbf" ./cmd/sbf
mkdir -p "$dir"
"$tmp/sbf" completion bash >"$dir/sbf.bash"
"$tmp/sbf" completion zsh >"$dir/_sbf"
"$tmp/sbf" completion fish >"$dir/sbf.fish"
"$tmp/sbf" completion powershell >"$dir/sbf.ps1"
