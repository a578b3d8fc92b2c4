#!/usr/bin/env bash
# Install the real Gemini CLI (pinned) into a cache folder; idempotent. Prints the binary path.
#   CONTEXTWARE_CACHE_DIR   cache root (default: $HOME/.cache/contextware)
#   GEMINI_CLI_VERSION      version to install (default: 0.61.0)
set -euo pipefail

version="${GEMINI_CLI_VERSION:-0.61.0}"
cache_root="${CONTEXTWARE_CACHE_DIR:-$HOME/.cache/contextware}"
dir="$cache_root/gemini-cli-$version"
bin="$dir/node_modules/.bin/gemini"

if [ -x "$bin" ] && [ -f "$dir/node_modules/@google/gemini-cli/package.json" ]; then
    echo "$bin"
    exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
    echo "install_gemini_cli.sh: npm is not installed (apt-get install -y nodejs npm)" >&2
    exit 1
fi

mkdir -p "$dir"
# Quiet install; progress and warnings go to stderr so stdout is only the binary path.
npm install --prefix "$dir" --no-audit --no-fund --loglevel=error \
    "@google/gemini-cli@$version" >&2

if [ ! -x "$bin" ]; then
    echo "install_gemini_cli.sh: install finished but $bin is missing" >&2
    exit 1
fi
echo "$bin"
