"""``loom shell``: an interactive prompt that shows the ambient line, with history."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import platformdirs

from loom.app import App
from loom.commands.lexicon import CANONICAL_ARROW, is_closer, is_command_line, split_line
from loom.store.schema import Tree


def _setup_history() -> None:
    try:
        import readline
    except ImportError:  # pragma: no cover - not on every platform
        return
    path = Path(platformdirs.user_state_dir("loom")) / "shell_history"
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        readline.read_history_file(path)
    readline.set_history_length(2000)
    import atexit

    atexit.register(lambda: _save(readline, path))


def _save(readline, path: Path) -> None:  # type: ignore[no-untyped-def]
    with contextlib.suppress(OSError):
        readline.write_history_file(path)


def run_shell(app: App, tree: Tree) -> int:
    interactive = sys.stdin.isatty()
    if interactive:
        _setup_history()
        print(f'Loom shell — tree "{tree.title}". Type → help, or quit with Ctrl-D.')
    actor = app.actor(tree)
    status = 0
    while True:
        prompt = f"{app.ambient(actor)}\n→ " if interactive else ""
        try:
            line = input(prompt)
        except EOFError:
            if interactive:
                print()
            return status
        except KeyboardInterrupt:
            print()
            continue
        text = line.strip()
        if not text:
            continue
        if text in ("quit", "exit", ":q"):
            return status
        if (split_line(text).body.strip() if is_command_line(text) else text) == "status":
            # where you are, with seed 000's extended context: permissions, who else is
            # active (the prompt's ambient line has no room for them)
            print(app.ambient(actor, extended=True) + ("\n" if interactive else ""))
            continue
        if not is_command_line(text):
            text = f"{CANONICAL_ARROW} {text}"
        if text.split()[-1] == "think" or split_line(text).body.strip() == "think":
            body = []
            while True:
                try:
                    more = input("… " if interactive else "")
                except EOFError:
                    break
                body.append(more)
                if is_closer(more):
                    break
            text = "\n".join([text, *body])
        result = app.executor.execute(text, actor)
        print(result.text)
        if not result.ok:
            status = 1
        if interactive:
            print()
    return os.EX_OK  # pragma: no cover
