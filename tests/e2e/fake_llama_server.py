"""A stand-in for llama.cpp's ``llama-server``, for the model service's tests: started by
Loom's supervisor with the real server's arguments (``LOOM_LLAMA_SERVER`` names a wrapper
of this module), it answers ``/health``, ``/slots`` and the OpenAI endpoints like
:class:`tests.e2e.fake_provider.FakeProvider`, and records each request's prompt in
``$FAKE_LLAMA_LOG`` (one JSON line each). No model, no native code.

``FAKE_LLAMA_EXIT=N`` makes it exit with status N at start (after printing an error),
``FAKE_LLAMA_TEXT`` sets what it streams back.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time

from tests.e2e.fake_provider import (
    DEFAULT_TEXT,
    OPENAI_CHAT,
    OPENAI_COMPLETIONS,
    FakeProvider,
    RecordedRequest,
    Reply,
    auto_openai,
    json_reply,
)


def wrapper_script(path: str, python: str, repo: str) -> str:
    """A ``llama-server`` executable that runs this module."""
    return (f"#!/bin/sh\ncd {repo} && exec {python} -m tests.e2e.fake_llama_server \"$@\"\n")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--api-key-file")
    parser.add_argument("--version", action="store_true")
    args, _rest = parser.parse_known_args()
    if args.version:
        print("version: fake")
        return 0
    code = int(os.environ.get("FAKE_LLAMA_EXIT", "0") or 0)
    if code:
        print("error: failed to load model (fake)", flush=True)
        return code
    key = None
    if args.api_key_file:
        with open(args.api_key_file, encoding="ascii") as f:
            key = f.read().strip()
    log = os.environ.get("FAKE_LLAMA_LOG")
    auto = auto_openai(os.environ.get("FAKE_LLAMA_TEXT") or DEFAULT_TEXT)
    lock = threading.Lock()

    def respond(request: RecordedRequest) -> Reply:
        if key and request.headers.get("authorization") != f"Bearer {key}":
            return json_reply({"error": {"message": "Invalid API Key"}}, 401)
        if log:
            with lock, open(log, "a", encoding="utf-8") as out:
                out.write(json.dumps({"path": request.path, "body": request.json}) + "\n")
        return auto(request)

    fake = FakeProvider(port=args.port)
    fake.set_default("/health", json_reply({"status": "ok"}))
    fake.set_default("/slots", json_reply([{"id": 0, "is_processing": False}]))
    fake.set_default(OPENAI_COMPLETIONS, respond)
    fake.set_default(OPENAI_CHAT, respond)
    fake.start()
    print(f"main: server is listening on http://127.0.0.1:{args.port}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())
