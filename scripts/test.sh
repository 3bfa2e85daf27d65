#!/usr/bin/env bash
# Set up (first run: a venv with every extra, and `loom model setup`: the local model's
# server built portably in ~5 min, then kept in the user's cache) and run the linters and
# the whole test suite, in LOOM_TEST_WORKERS processes (default 2: most tests wait on
# servers, editors and the model service, so two halve the time on two cores; 0 runs in
# this process). Extra args go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# The PostgreSQL tests start a server of their own from Debian's binaries.
bash scripts/postgres-setup.sh
# The terminal journeys drive `loom demo` in tmux.
bash scripts/tmux-setup.sh
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[lsp,models,local,mcp,dev,postgres]'
.venv/bin/loom model setup
.venv/bin/ruff check server tests bench
# Bytecode for Loom's modules, as pip writes it for an installed package: where the
# environment sets PYTHONDONTWRITEBYTECODE, every server a test starts compiled all of Loom
# again (about 0.25 s of each start). Python reads it whatever that variable says.
.venv/bin/python -m compileall -q -j 0 server/loom >/dev/null
workers=(-n "${LOOM_TEST_WORKERS:-2}" --dist worksteal)
for arg in "$@"; do  # tests named: run just those
  if [ -e "${arg%%::*}" ]; then exec .venv/bin/pytest "${workers[@]}" "$@"; fi
done
# The whole suite. The VS Code end-to-end test (code-server and Chromium, and a check of how
# long the editor shows a tab unsaved while text streams in) runs after the rest, alone on
# the machine: beside the other worker its timings were the load's, not Loom's.
status=0
run() {  # pytest's 5 (no test selected, as with -k) is no failure of either half
  .venv/bin/pytest "$@" || { rc=$?; [ "$rc" -eq 5 ] || status=$rc; }
}
run "${workers[@]}" --ignore=tests/e2e/test_vscode.py "$@"
run "$@" tests/e2e/test_vscode.py
exit "$status"
