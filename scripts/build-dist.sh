#!/usr/bin/env bash
# Build the Python package as PyPI gets it: the sdist and, from it, the wheel (with the
# Neovim plugin inside, loom/editors/nvim), then `twine check --strict` both (metadata,
# README rendering). Usage: scripts/build-dist.sh [OUTDIR] (default dist/). Needs `build`
# and `twine` in the Python that runs it ($PYTHON, default .venv/bin/python: the dev extra
# installs both). tests/e2e/test_install.py runs it, then installs the wheel with pipx.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
OUT=${1:-dist}
rm -rf "$OUT"
# uv (dev extra) makes build's isolated environments in a fraction of pip's time
INSTALLER=()
if "$PY" -m uv --version >/dev/null 2>&1; then INSTALLER=(--installer uv); fi
"$PY" -m build "${INSTALLER[@]}" --outdir "$OUT" . >"$OUT.build.log" 2>&1 || { cat "$OUT.build.log" >&2; exit 1; }
# a setuptools warning about our own configuration is a defect to fix, not noise
if grep -E "SetuptoolsDeprecationWarning|did not match any files|no files found matching" "$OUT.build.log" >&2; then
  echo "✗ BUILD: the build warned about the package's configuration (above)" >&2
  exit 1
fi
rm -f "$OUT.build.log"
"$PY" -m twine check --strict "$OUT"/*
ls -l "$OUT"
