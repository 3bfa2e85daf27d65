#!/usr/bin/env bash
# Install what the VS Code end-to-end test (tests/e2e/test_vscode.py) needs, outside the repo:
#   Debian: chromium (headless browser), libkrb5-dev (a native module of code-server needs gssapi.h)
#   npm, into $LOOM_E2E_CACHE (default ~/.cache/loom-vscode-e2e): node@24, code-server, playwright-core
# Idempotent: a second run with everything present takes a few seconds.
set -euo pipefail
CACHE=${LOOM_E2E_CACHE:-$HOME/.cache/loom-vscode-e2e}
CODE_SERVER_VERSION=${CODE_SERVER_VERSION:-4.139.1}
NODE24_VERSION=${NODE24_VERSION:-24}
PLAYWRIGHT_VERSION=${PLAYWRIGHT_VERSION:-1.65.1}

need_apt=()
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
[ -f /usr/include/gssapi/gssapi.h ] || need_apt+=(libkrb5-dev)
if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${need_apt[@]}"
fi

mkdir -p "$CACHE/node24" "$CACHE/tools"
if [ ! -x "$CACHE/node24/node_modules/.bin/node" ]; then
  (cd "$CACHE/node24" && [ -f package.json ] || echo '{"private":true}' > package.json
   cd "$CACHE/node24" && npm install --no-audit --no-fund --loglevel=error "node@$NODE24_VERSION")
fi
export PATH="$CACHE/node24/node_modules/.bin:$PATH"
echo "node for code-server: $(node --version)"

cd "$CACHE/tools"
[ -f package.json ] || echo '{"private":true}' > package.json
if [ ! -x node_modules/.bin/code-server ] \
   || [ "$(node -p 'require("./node_modules/code-server/package.json").version' 2>/dev/null)" != "$CODE_SERVER_VERSION" ] \
   || [ ! -d node_modules/playwright-core ]; then
  npm install --no-audit --no-fund --loglevel=error --unsafe-perm \
    "code-server@$CODE_SERVER_VERSION" "playwright-core@$PLAYWRIGHT_VERSION"
fi
# MiniLoom's patch library, for the loader checks of the MiniLoom export (tests/unit/js/)
if [ ! -d node_modules/diff-match-patch ]; then
  npm install --no-audit --no-fund --loglevel=error "diff-match-patch@1.0.5"
fi
echo "code-server: $(node_modules/.bin/code-server --version 2>/dev/null | grep -m1 'with Code')"
echo "e2e tools ready in $CACHE"
