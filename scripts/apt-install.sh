#!/usr/bin/env bash
# apt-get install the given Debian packages (the callers check first that they are missing).
# Not root and no sudo: it says so and exits 0, and the tests that need them are skipped
# with that reason (in CI they fail instead).
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "$(basename "$0"): no root and no sudo: apt-get install $*" >&2
    exit 0
  fi
fi
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "$@"
