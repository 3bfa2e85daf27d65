#!/usr/bin/env bash
# Install what the PostgreSQL tests need when it is missing: Debian's postgresql package
# (initdb, pg_ctl, postgres under /usr/lib/postgresql/*/bin). The tests start and stop a
# throwaway server themselves (tests/pg_cluster.py); nothing is left running.
# Idempotent: with the binaries present it does nothing. Not root and no sudo: it says so,
# and the PostgreSQL tests are skipped with that reason.
set -euo pipefail
if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1; then
  exit 0
fi
exec bash "$(dirname "$0")/apt-install.sh" postgresql
