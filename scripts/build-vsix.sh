#!/usr/bin/env bash
# Build the VS Code extension: install its npm dependencies, lint, compile (tsc) and bundle
# (esbuild), run its unit and grammar snapshot tests, package vscode-extension/loom.vsix with
# @vscode/vsce, and check the package (scripts/check-vsix.py): any vsce warning, a file
# list other than vscode-extension/vsix-files.txt, or a manifest the Marketplace or Open
# VSX would refuse fails the build.
# vsce needs Node >= 22: a Node 24 from the npm package node@24 is put first on PATH
# (cached in $LOOM_E2E_CACHE, default ~/.cache/loom-vscode-e2e, shared with the e2e setup).
set -euo pipefail
cd "$(dirname "$0")/../vscode-extension"
CACHE=${LOOM_E2E_CACHE:-$HOME/.cache/loom-vscode-e2e}
major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$major" -lt 22 ]; then
  if [ ! -x "$CACHE/node24/node_modules/.bin/node" ]; then
    mkdir -p "$CACHE/node24"
    [ -f "$CACHE/node24/package.json" ] || echo '{"private":true}' > "$CACHE/node24/package.json"
    (cd "$CACHE/node24" && npm install --no-audit --no-fund --loglevel=error node@24)
  fi
  export PATH="$CACHE/node24/node_modules/.bin:$PATH"
fi
echo "node $(node --version), npm $(npm --version)"
if [ -f package-lock.json ]; then npm ci --no-audit --no-fund --loglevel=error; else npm install --no-audit --no-fund --loglevel=error; fi
npm run --silent lint
npm run --silent compile
npm run --silent test:unit
npm run --silent test:grammars
# no stdin: a vsce warning that asks "continue? [y/N]" aborts instead of waiting
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! npx vsce package -o loom.vsix </dev/null >"$log" 2>&1; then
  cat "$log"
  echo "✗ VSIX_PACKAGE: vsce package failed" >&2
  echo "  hint: its output is above" >&2
  exit 1
fi
cat "$log"
python3 ../scripts/check-vsix.py loom.vsix --vsce-log "$log"
