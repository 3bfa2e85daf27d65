#!/usr/bin/env bash
# Build the VS Code extension: install its npm dependencies, lint, compile, run its unit and
# grammar snapshot tests, and package vscode-extension/loom.vsix with @vscode/vsce.
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
npx vsce package --allow-missing-repository --skip-license -o loom.vsix
ls -l loom.vsix
