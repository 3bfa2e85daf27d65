"""``loom doctor``: which model serves each purpose, and whether the local model runs here.

One check list, shown three ways: the CLI prints it, the language server answers
``loom/doctor`` with it (VS Code's **Loom: Doctor**), and Neovim's ``:checkhealth loom``
reports it. Each check is a status (ok, warn, error, info), a line, and a hint.
"""

from __future__ import annotations

import asyncio
import os
import platform
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from loom.llm.base import ModelError
from loom.llm.config import LOCAL_MODEL, Purpose, agent_model_caveat, resolve_profile
from loom.llm.service import client as service
from loom.llm.service import crash
from loom.llm.service.setup import (
    X86_NEEDS,
    build_info,
    bundled_gguf,
    find_server,
    install_hint,
    missing_local_extra,
)
from loom.model.sampling import Sampling

Status = Literal["ok", "warn", "error", "info"]
MARK = {"ok": "✓", "warn": "!", "error": "✗", "info": "·"}
PURPOSES: tuple[Purpose, ...] = ("subject", "summary", "collaborator")


class Check(BaseModel):
    section: str
    status: Status
    text: str
    hint: str | None = None


class Report(BaseModel):
    checks: list[Check]

    @property
    def ok(self) -> bool:
        return all(c.status != "error" for c in self.checks)

    def render(self) -> str:
        lines: list[str] = []
        section = None
        for check in self.checks:
            if check.section != section:
                section = check.section
                lines.append(("\n" if lines else "") + section)
            lines.append(f"  {MARK[check.status]} {check.text}")
            if check.hint:
                lines.append(f"    hint: {check.hint}")
        return "\n".join(lines)


def run(*, generate: bool = True) -> Report:
    """Every check; with ``generate`` the local model is started and times a generation."""
    checks = purposes()
    checks += cpu()
    checks += local_setup()
    if generate and not any(c.status == "error" for c in checks if c.section == LOCAL):
        checks += local_run()
    checks += tokenizer()
    return Report(checks=checks)


MODELS = "Models"
CPU = "CPU"
LOCAL = "Local model"


def purposes() -> list[Check]:
    out = []
    for purpose in PURPOSES:
        try:
            profile = resolve_profile(purpose)
        except ModelError as err:
            out.append(Check(section=MODELS, status="error", text=f"{purpose}: {err.message}",
                             hint=err.hint))
            continue
        where = profile.base_url or ("this machine" if profile.provider == "local" else "")
        text = (f"{purpose}: {profile.name} ({profile.provider}: "
                f"{Path(profile.model).name}{', ' + where if where else ''})")
        caveat = agent_model_caveat(profile) if purpose == "collaborator" else None
        if caveat is not None:  # it runs, and its agent work is noise: not a green line
            out.append(Check(section=MODELS, status="warn",
                             text=f"{text}: far too small for agent work (the "
                                  "collaborator's turns, the exploration's judge)",
                             hint=caveat[1]))
            continue
        out.append(Check(section=MODELS, status="info", text=text))
    return out


def cpu() -> list[Check]:
    flags = crash.cpu_flags()
    name = _cpu_name() or platform.processor() or platform.machine()
    out = [Check(section=CPU, status="info", text=f"{name} ({platform.machine()})")]
    if not flags:
        return out
    shown = [f for f in (*X86_NEEDS, "avx512f", "avx512_vnni", "amx_tile", "amx_int8",
                         "amx_bf16") if f in flags]
    out.append(Check(section=CPU, status="info", text="features: " + (" ".join(shown) or
                                                                      "none of note")))
    missing = crash.missing_features(flags)
    if missing:
        out.append(Check(section=CPU, status="error",
                         text=f"the portable build needs {', '.join(missing)}: not listed here",
                         hint="set LOOM_LLAMA_SERVER to a llama-server built for this CPU, "
                              "or use a hosted model"))
    elif any(f.startswith("amx") for f in flags):
        out.append(Check(section=CPU, status="info",
                         text="reports AMX: Loom's build holds no AMX instructions (some VMs "
                              "report AMX and cannot run it)"))
    return out


def local_setup() -> list[Check]:
    missing = missing_local_extra()
    if missing:  # named first: `loom model setup` would only refuse
        out = [Check(section=LOCAL, status="error",
                     text=f"the 'local' extra is not installed (no module "
                          f"{', '.join(missing)})",
                     hint=f"{install_hint('local')}, then run `loom model setup`")]
        setup_hint = "after installing the 'local' extra (above): loom model setup"
    else:
        out, setup_hint = [], service.SETUP_HINT
    server = find_server()
    if server is None:
        out.append(Check(section=LOCAL, status="error", text="server: not set up",
                         hint=setup_hint))
    else:
        info = build_info(server)
        if info:
            amx = info.get("amx_instructions")
            detail = (f"built {info.get('built_at')} from {info.get('source')}, portable "
                      f"({'AMX instructions: ' + str(amx) if amx is not None else 'unchecked'})")
            status: Status = "ok" if not amx else "error"
            out.append(Check(section=LOCAL, status=status, text=f"server: {server}",
                             hint=None if status == "ok" else "rebuild: loom model setup "
                             "--rebuild"))
            out.append(Check(section=LOCAL, status="info", text=detail))
        else:
            out.append(Check(section=LOCAL, status="ok",
                             text=f"server: {server} (LOOM_LLAMA_SERVER: not built by Loom)"))
    model = bundled_gguf()
    if model is None:
        out.append(Check(section=LOCAL, status="error", text="model: SmolLM2 is not set up",
                         hint=setup_hint))
    else:
        size = model.stat().st_size / 1e6
        out.append(Check(section=LOCAL, status="ok", text=f"model: {model} ({size:.0f} MB)"))
    return out


def local_run() -> list[Check]:
    """Start (or find) the model process and time a short generation."""
    out = []
    try:
        spec = service.spec_for(LOCAL_MODEL)
    except ModelError as err:
        return [Check(section=LOCAL, status="error", text=err.message, hint=err.hint)]
    record = service.running(spec)
    if record is not None:
        out.append(Check(section=LOCAL, status="ok",
                         text=f"model process: running (pid {record.server_pid}, port "
                              f"{record.port}, up {time.time() - record.ready_at:.0f} s)"))
    else:
        started = time.perf_counter()
        try:
            record = service.ensure_running(spec)
        except ModelError as err:
            return [*out, Check(section=LOCAL, status="error", text=err.message, hint=err.hint)]
        out.append(Check(section=LOCAL, status="ok",
                         text=f"model process: started in {time.perf_counter() - started:.2f} s "
                              f"(pid {record.server_pid}; stops after {spec.idle_s:g} s idle)"))
    out.append(Check(section=LOCAL, status="info",
                     text=f"decoding with {spec.threads} thread{'s' if spec.threads != 1 else ''}"
                          f" of {os.cpu_count()} cores, {spec.parallel} continuations at once "
                          "(LOOM_MODEL_THREADS)"))
    try:
        first, total, tokens = asyncio.run(_time_generation())
    except ModelError as err:
        return [*out, Check(section=LOCAL, status="error",
                            text=f"generation failed: {err.message}", hint=err.hint)]
    rate = f", {tokens / total:.0f} tokens/s" if total > 0 else ""
    out.append(Check(section=LOCAL, status="ok",
                     text=f"generation: {tokens} tokens in {total * 1000:.0f} ms, first after "
                          f"{first * 1000:.0f} ms{rate}"))
    rss = _rss_mb(record.server_pid)
    if rss is not None:
        out.append(Check(section=LOCAL, status="info", text=f"model process memory: {rss:.0f} MB"))
    return out


async def _time_generation() -> tuple[float, float, int]:
    from loom.llm.config import BUILTIN_PROFILES
    from loom.llm.registry import make_provider

    provider = make_provider(BUILTIN_PROFILES["local"])
    first: list[float] = []
    started = time.perf_counter()

    def on_delta(_i: int, _piece: str) -> None:
        if not first:
            first.append(time.perf_counter() - started)

    try:
        result = await provider.complete("The lighthouse keeper climbed the stairs",
                                         Sampling(tokens=16, temperature=0.0), on_delta=on_delta)
    finally:
        await provider.aclose()  # type: ignore[attr-defined]
    total = time.perf_counter() - started
    tokens = result.usage.completion_tokens or 0
    return (first[0] if first else total), total, tokens


def tokenizer() -> list[Check]:
    from loom.llm.tokenizer import load_tokenizer

    try:
        tok = load_tokenizer()
    except Exception as exc:  # a broken cache file: say so, counts fall back
        return [Check(section=LOCAL, status="warn", text=f"tokenizer: {exc}",
                      hint="token counts are estimated; run `loom model setup`")]
    if tok is None:
        return [Check(section=LOCAL, status="warn",
                      text="tokenizer: not available, token counts are estimates",
                      hint=f"{install_hint('local')}, then run `loom model setup`")]
    return [Check(section=LOCAL, status="ok", text="tokenizer: exact counts (SmolLM2 vocabulary)")]


def this_process(label: str) -> Check:
    """The memory of the process that runs the checks (the language server, say)."""
    pid = os.getpid()
    rss = _rss_mb(pid)
    shown = f"{rss:.0f} MB" if rss is not None else "unknown"
    return Check(section=LOCAL, status="info", text=f"{label} memory: {shown} (pid {pid})")


def _cpu_name() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return None
