"""A model process that died or hung, in words: the ``✗ MODEL_ERROR`` message and hint."""

from __future__ import annotations

import signal
from pathlib import Path

from loom.llm.base import ModelError
from loom.llm.service.record import ExitRecord
from loom.llm.service.setup import X86_NEEDS

AGAIN = "the next request starts a fresh model process"


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> set[str]:
    """The CPU's feature flags as the kernel lists them (empty where unknown)."""
    try:
        for line in cpuinfo.read_text(encoding="ascii", errors="replace").splitlines():
            if line.startswith(("flags", "Features")):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def missing_features(flags: set[str] | None = None) -> list[str]:
    """What a portable x86-64 build needs and this CPU does not list."""
    flags = cpu_flags() if flags is None else flags
    if not flags or ("avx" not in flags and "sse2" not in flags):  # not x86, or unknown
        return []
    return [f for f in X86_NEEDS if f not in flags]


def signal_name(returncode: int | None) -> str | None:
    if returncode is None or returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def died(exit: ExitRecord, *, starting: bool = False) -> ModelError:
    """The error for a model process that ended while it was wanted."""
    what = "could not start" if starting else "died"
    sig = signal_name(exit.returncode)
    last = _last_words(exit.output_tail)
    if sig == "SIGILL":
        missing = missing_features()
        needs = f"it needs {', '.join(missing)}, which this CPU does not list" if missing \
            else "an instruction the build holds is one this CPU reports but cannot run"
        return ModelError(
            "server",
            f"the local model process {what}: illegal instruction (SIGILL)",
            f"this CPU cannot run the model server's build ({needs}); rebuild it with "
            "`loom model setup --rebuild`, or set LOOM_LLAMA_SERVER to a llama-server "
            "that runs here, or use a hosted model",
        )
    if sig == "SIGKILL":
        return ModelError(
            "server",
            f"the local model process was killed (SIGKILL) while it {_doing(starting)}",
            f"out of memory, or stopped by hand; {AGAIN} (`loom doctor` shows its memory)",
        )
    if sig is not None:
        detail = f": {last}" if last else ""
        return ModelError(
            "server",
            f"the local model process {what} with {sig}{detail}",
            f"{AGAIN}; if it keeps happening, run `loom doctor` and read its log",
        )
    status = "" if exit.returncode is None else f" with status {exit.returncode}"
    detail = f": {last}" if last else ""
    return ModelError(
        "server" if not starting else "unavailable",
        f"the local model process {'exited' if not starting else 'could not start'}"
        f"{status}{detail}",
        f"{AGAIN}; `loom doctor` checks the model and its server",
    )


def hung(waited_s: float) -> ModelError:
    return ModelError(
        "timeout",
        f"the local model process stopped answering (nothing for {waited_s:g} s); "
        "Loom stopped it",
        AGAIN,
    )


def _doing(starting: bool) -> str:
    return "was starting" if starting else "was generating"


def _last_words(tail: list[str]) -> str:
    """The server's last error-looking line, shortened."""
    for line in reversed(tail):
        low = line.lower()
        if any(w in low for w in ("error", "failed", "unable", "invalid", "cannot")):
            return line.strip()[:200]
    return ""
