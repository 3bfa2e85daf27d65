"""Forks language servers that have already imported Loom, for the crash tests.

A server spends most of its start importing (``lsprotocol.types`` alone is a third of a
second here). The crash test starts fifty of them, so it runs this process once: it imports
the server, then for each line ``IN OUT`` read on its stdin forks a child that puts the
named pipes ``IN`` and ``OUT`` on its fd 0 and 1 and runs ``loom serve`` exactly as the
command does, and answers the child's pid. Nothing has opened a database, an event loop or
a thread before the fork (pygls makes its loop and thread pool in ``start_io``).

Run as ``python -m tests.lsp.zygote``.
"""

from __future__ import annotations

import io
import os
import signal
import sys

from loom.lsp.server import serve


def _child(fifo_in: str, fifo_out: str) -> None:
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for path, fd, flags in ((fifo_in, 0, os.O_RDONLY), (fifo_out, 1, os.O_WRONLY)):
        opened = os.open(path, flags)
        os.dup2(opened, fd)
        os.close(opened)
    # fresh objects on the new fds: the parent's may hold buffered control lines
    sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "rb", closefd=False)))
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "wb", closefd=False)))
    sys.exit(serve())


def main() -> None:
    # The kernel reaps killed children at once: a zombie's pid would still look alive to
    # the next server deciding whether the dead one's uncommitted text is free to take.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    while line := sys.stdin.readline():
        fifo_in, fifo_out = line.split()
        pid = os.fork()
        if pid == 0:
            _child(fifo_in, fifo_out)
        sys.stdout.write(f"{pid}\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
