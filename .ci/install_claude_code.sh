#!/usr/bin/env bash
# Install the real Claude Code CLI (pinned) into a cache folder; idempotent. Prints the binary path.
#   CONTEXTWARE_CACHE_DIR   cache root (default: $HOME/.cache/contextware)
#   CLAUDE_CODE_VERSION     version to install (default: 2.1.328)
# The package's install script puts the native binary of the optional dependency
# @anthropic-ai/claude-code-<platform> (~370 MB) in place, so scripts must not be disabled.
set -euo pipefail

version="${CLAUDE_CODE_VERSION:-2.1.328}"
cache_root="${CONTEXTWARE_CACHE_DIR:-$HOME/.cache/contextware}"
dir="$cache_root/claude-code-$version"
bin="$dir/node_modules/.bin/claude"

if [ -x "$bin" ] && [ -f "$dir/node_modules/@anthropic-ai/claude-code/package.json" ] \
    && "$bin" --version >/dev/null 2>&1; then
    echo "$bin"
    exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
    echo "install_claude_code.sh: npm is not installed (apt-get install -y nodejs npm)" >&2
    exit 1
fi

mkdir -p "$dir"
# Quiet install; progress and warnings go to stderr so stdout is only the binary path.
npm install --prefix "$dir" --no-audit --no-fund --loglevel=error \
    "@anthropic-ai/claude-code@$version" >&2

if [ ! -x "$bin" ] || ! "$bin" --version >/dev/null 2>&1; then
    echo "install_claude_code.sh: install finished but $bin does not run" >&2
    exit 1
fi
echo "$bin"
