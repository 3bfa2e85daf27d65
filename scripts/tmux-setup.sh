#!/usr/bin/env bash
# Install tmux when missing (Debian's package): the terminal journeys (tests/e2e/
# test_demo_terminal.py) run `loom demo` in it and read the screen as a person would.
# Idempotent; without root and sudo it says so and those tests are skipped.
set -euo pipefail
command -v tmux >/dev/null 2>&1 && exit 0
exec bash "$(dirname "$0")/apt-install.sh" tmux
