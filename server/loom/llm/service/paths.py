"""Where the model service keeps things: built binaries and weights in the user's cache
directory, live records in the user's runtime directory (private to the user)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def cache_dir() -> Path:
    """Built ``llama-server`` binaries and fetched weights (``LOOM_CACHE_DIR`` overrides)."""
    if os.environ.get("LOOM_CACHE_DIR"):
        return Path(os.environ["LOOM_CACHE_DIR"]).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("loom"))


def runtime_dir() -> Path:
    """Records of running model services (``LOOM_RUNTIME_DIR`` overrides), created 0700:
    a record holds the key the service asks of its clients."""
    explicit = os.environ.get("LOOM_RUNTIME_DIR")
    if explicit:
        path = Path(explicit).expanduser()
    elif os.environ.get("XDG_RUNTIME_DIR") and Path(os.environ["XDG_RUNTIME_DIR"]).is_dir():
        path = Path(os.environ["XDG_RUNTIME_DIR"]) / "loom"
    else:
        path = Path(tempfile.gettempdir()) / f"loom-{os.getuid()}"
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = path.stat()
    if info.st_uid != os.getuid():  # a shared /tmp: someone else made it first
        raise PermissionError(f"{path} belongs to another user; set LOOM_RUNTIME_DIR")
    if info.st_mode & 0o077:
        path.chmod(0o700)
    return path
