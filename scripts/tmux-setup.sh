#!/usr/bin/env bash
# Install tmux when missing (Debian's package): the terminal journeys (tests/e2e/
# test_demo_terminal.py) run `loom demo` in it and read the screen as a person would.
# Idempotent; without root and sudo it says so and those tests are skipped.
set -euo pipefail
command -v tmux >/dev/null 2>&1 && exit 0
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "tmux-setup: no tmux and no root: apt-get install tmux" >&2
    exit 0
  fi
fi
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends tmux
