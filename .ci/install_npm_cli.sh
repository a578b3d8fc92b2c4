#!/usr/bin/env bash
# Install one pinned npm CLI into a cache folder; idempotent. Prints the binary's path (last line).
#   usage: install_npm_cli.sh PACKAGE VERSION FOLDER BIN
#     e.g. install_npm_cli.sh @google/gemini-cli 0.61.0 gemini-cli gemini
#   installs PACKAGE@VERSION into $CONTEXTWARE_CACHE_DIR/FOLDER-VERSION (default cache root:
#   $HOME/.cache/contextware), the folder tests/*_fixtures.py look in, and checks that
#   node_modules/.bin/BIN runs `--version`.
# A package's install script may put a native binary in place (Claude Code's optional dependency
# @anthropic-ai/claude-code-<platform>, ~370 MB), so scripts must not be disabled.
set -euo pipefail

if [ "$#" -ne 4 ]; then
    echo "usage: install_npm_cli.sh PACKAGE VERSION FOLDER BIN" >&2
    exit 2
fi
package="$1" version="$2" folder="$3" name="$4"
cache_root="${CONTEXTWARE_CACHE_DIR:-$HOME/.cache/contextware}"
dir="$cache_root/$folder-$version"
bin="$dir/node_modules/.bin/$name"

runs() { [ -x "$bin" ] && [ -f "$dir/node_modules/$package/package.json" ] && "$bin" --version >/dev/null 2>&1; }

if runs; then
    echo "$bin"
    exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
    echo "install_npm_cli.sh: npm is not installed (apt-get install -y nodejs npm)" >&2
    exit 1
fi

mkdir -p "$dir"
# Quiet install; progress and warnings go to stderr so stdout is only the binary path.
npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "$package@$version" >&2

if ! runs; then
    echo "install_npm_cli.sh: installed $package@$version, but $bin does not run" >&2
    exit 1
fi
echo "$bin"
