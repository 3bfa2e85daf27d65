"""The command line's model commands: ``loom model setup|status|stop`` (the local model's
portable server and weights, and its shared process) and ``loom doctor``."""

from __future__ import annotations

import argparse
import sys
import time


def _print(text: str, err: bool = False) -> None:
    stream = sys.stderr if err else sys.stdout
    stream.write(text + "\n")
    stream.flush()


def cmd_model(args: argparse.Namespace) -> int:
    return {"setup": _setup, "status": _status, "stop": _stop}[args.action](args)


def _setup(args: argparse.Namespace) -> int:
    from loom.llm.service.setup import SetupError, setup
    from loom.llm.tokenizer import load_tokenizer

    started = time.monotonic()
    try:
        setup(rebuild=args.rebuild, log=_print)
    except SetupError as err:
        _print(f"✗ SETUP: {err.message}\n  hint: {err.hint}", err=True)
        return 1
    if load_tokenizer() is not None:
        _print("tokenizer: ready (exact token counts)")
    _print(f"✓ the local model is set up ({time.monotonic() - started:.0f} s)")
    return 0


def _status(args: argparse.Namespace) -> int:
    from loom.llm.base import ModelError
    from loom.llm.config import LOCAL_MODEL
    from loom.llm.service import client as service

    try:
        spec = service.spec_for(LOCAL_MODEL)
    except ModelError as err:
        _print(err.render(), err=True)
        return 1
    record = service.running(spec)
    if record is None:
        _print("the local model process is not running (the next request starts it)")
    else:
        _print(f"the local model process is running: pid {record.server_pid}, "
               f"{record.base_url}, up {time.time() - record.ready_at:.0f} s")
    alone = service.running(service.spec_for(LOCAL_MODEL, 1))
    if alone is not None:
        _print(f"the process for seeded requests is running: pid {alone.server_pid}, "
               f"{alone.base_url}, up {time.time() - alone.ready_at:.0f} s")
    return 0


def _stop(args: argparse.Namespace) -> int:
    from loom.llm.service import client as service

    count = service.stop_all()
    _print(f"✓ stopped {count} model process{'es' if count != 1 else ''}")
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from loom.llm import doctor

    report = doctor.run(generate=not args.quick)
    if args.json:
        _print(report.model_dump_json(indent=2) if args.pretty else report.model_dump_json())
    else:
        _print(report.render())
    return 0 if report.ok else 1


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    s = sub.add_parser("model", help="the local model: setup (build its portable server, "
                       "fetch its weights), status, stop")
    s.add_argument("action", choices=("setup", "status", "stop"))
    s.add_argument("--rebuild", action="store_true", help="setup: build the server again")
    s.set_defaults(fn=cmd_model)
    s = sub.add_parser("doctor", help="which model serves each purpose; whether the local "
                       "model starts here, and how fast it is")
    s.add_argument("--quick", action="store_true", help="do not start the model")
    s.add_argument("--json", action="store_true", help="the checks as JSON")
    s.add_argument("--pretty", action="store_true", help=argparse.SUPPRESS)
    s.set_defaults(fn=cmd_doctor)



