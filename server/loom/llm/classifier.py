"""The optional model classifier behind the parser (seed 000: "pattern matching with
fallback to small classifier model").

Asked only when patterns and fuzzy matching are unsure. The model answers in the Loom
Protocol, like the seed's classifier example (``intent`` / ``confidence`` / ``reasoning``
/ ``extractedEntities``); the answer becomes a command line that the grammar parses
again, so a classifier can never produce a command the grammar would not accept.

It lives in ``llm/`` because it calls a model: the grammar only knows the ``Classifier``
callable type, and the composition root (``loom.app``) wires this one in.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from loom.commands import syntax
from loom.commands.catalogue import CATALOGUE
from loom.commands.grammar import parse
from loom.llm.base import ChatMessage
from loom.llm.config import resolve_profile
from loom.llm.registry import make_provider
from loom.model.sampling import Sampling
from loom.protocol import loads_lenient

log = logging.getLogger(__name__)
MIN_CONFIDENCE = 0.7

PROMPT = """You map a request to one command of a writing tool. Commands:
{commands}

Request: {text}
Likely commands: {candidates}

Answer in exactly this form (no other text):
intent: <one command name, or UNKNOWN>
confidence: <0.0 to 1.0>
reasoning: <a few words>
extractedEntities:
  node: <node id if any>
  content: <quoted text if any>
  n: <count if any>"""


def _commands() -> str:
    return "\n".join(f"- {name}: {tool.description.split(' — ', 1)[-1]}"
                     for name, tool in CATALOGUE.items())


def answer_to_line(answer: dict[str, Any]) -> str | None:
    """A classifier's Loom-Protocol answer as a command line, or None when unsure."""
    intent = str(answer.get("intent", "")).strip().lower()
    try:
        confidence = float(answer.get("confidence", 0))
    except (TypeError, ValueError):
        return None
    if intent not in CATALOGUE or confidence < MIN_CONFIDENCE:
        return None
    entities = answer.get("extractedEntities") or {}
    if not isinstance(entities, dict):
        entities = {}
    parts = [f"→ {intent}"]
    node = entities.get("node")
    if node not in (None, "", "none", "null"):
        parts.append(("from " if intent == "continue" else "to " if intent == "switch" else "")
                     + str(node))
    content = entities.get("content")
    if content not in (None, "", "none", "null"):
        escaped = str(content).strip().strip('"').replace('"', '\\"')
        parts.append(f'"{escaped}"')
    n = entities.get("n")
    if isinstance(n, int) or (isinstance(n, str) and n.isdigit()):
        parts.append(f"n:{n}")
    return " ".join(parts)


class ModelClassifier:
    """A callable for ``parse(line, classifier=…)`` backed by a chat provider."""

    def __init__(self, ask: Callable[[str], str]) -> None:
        self.ask = ask

    def __call__(self, text: str, candidates: list[str]) -> syntax.Command | None:
        reply = self.ask(PROMPT.format(commands=_commands(), text=text,
                                       candidates=", ".join(candidates[:6])))
        try:
            value, _notes = loads_lenient(reply.strip())
        except ValueError:
            return None
        if not isinstance(value, dict):
            return None
        line = answer_to_line(value)
        if line is None:
            return None
        parsed = parse(line)  # no classifier here: a guess must stand on its own
        return None if isinstance(parsed, syntax.ParseError) else parsed


def model_classifier(profile_name: str | None = None) -> ModelClassifier:
    """A classifier using the summary model profile (fast and cheap by default)."""
    profile = resolve_profile("summary", profile_name)

    def ask(prompt: str) -> str:
        async def run() -> str:
            provider = make_provider(profile)
            result = await provider.chat([ChatMessage(role="user", content=prompt)],
                                         Sampling(tokens=80, temperature=0.0))
            return result.completions[0].text if result.completions else ""

        try:
            return asyncio.run(run())
        except Exception as err:  # the parser must work without a model
            log.info("classifier unavailable: %s", err)
            return ""

    return ModelClassifier(ask)
