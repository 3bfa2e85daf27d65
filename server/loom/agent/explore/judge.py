"""The judge: what the collaborator's model is asked about a new branch, and how its reply
is read (a score 0-10 and a one-line reason; anything else is no score)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from loom.llm.base import ChatMessage

#: The text before the branch the judge is shown (the end of it: the branch follows it).
CONTEXT_CHARS = 3_000
REASON_CHARS = 160

SYSTEM = (
    "You judge branches of a text that is being written as a tree of alternatives. You are "
    "shown the text so far and one continuation of it. Score the continuation from 0 "
    "(worthless) to 10 (the branch to follow) against the rubric. Reply with one line "
    "only: the score as N/10, a dash, and one short reason. Example: 7/10 — vivid, and it "
    "raises a question worth answering")


@dataclass(frozen=True)
class Verdict:
    """A judge's score (0-10) and its one-line reason."""

    score: int
    reason: str
    #: the number the judge wrote when it was out of range and clamped (``11/10``)
    said: float | None = None


def messages(rubric: str, before: str, branch: str) -> list[ChatMessage]:
    """The judge's request: the rubric, the end of the text before the branch, the branch."""
    tail = before[-CONTEXT_CHARS:]
    if len(before) > CONTEXT_CHARS:
        tail = "…" + tail
    # one worked example first: small models follow a shown reply far better than a rule
    return [ChatMessage(role="system", content=SYSTEM),
            ChatMessage(role="user", content=_ask(_EXAMPLE_RUBRIC, _EXAMPLE_TEXT,
                                                  _EXAMPLE_BRANCH)),
            ChatMessage(role="assistant", content=_EXAMPLE_REPLY),
            ChatMessage(role="user", content=_ask(rubric, tail, branch))]


_EXAMPLE_RUBRIC = "surprising, and true to the characters"
_EXAMPLE_TEXT = "The keeper climbed the stairs at dusk, counting them."
_EXAMPLE_BRANCH = " At the top he found the lamp already lit."
_EXAMPLE_REPLY = "7/10 — a quiet surprise that raises a question worth answering"


def _ask(rubric: str, text: str, branch: str) -> str:
    return (f"Rubric: {rubric}\n\n"
            f"The text so far:\n<<<\n{text}\n>>>\n\n"
            f"The continuation to judge:\n<<<\n{branch}\n>>>\n\n"
            "Reply with one line: N/10 — reason")


#: Asked once more of a judge whose reply held no score (small models drift into prose).
AGAIN = ("That reply held no score. Reply with one line only: the score from 0 to 10 as "
         "N/10, a dash, and one short reason. Example: 6/10 — clear, but it goes nowhere new")


def again(sent: list[ChatMessage], reply: str) -> list[ChatMessage]:
    """The request asked again after a reply without a score: the reply, then the rule."""
    return [*sent, ChatMessage(role="assistant", content=reply or "(nothing)"),
            ChatMessage(role="user", content=AGAIN)]


# "7/10", "7 / 10", "7 out of 10"; else a line that begins with the number ("Score: 7 - …")
_OUT_OF_TEN = re.compile(r"(?<![\w.])(\d{1,2}(?:\.\d+)?)\s*(?:/\s*10|out of 10)(?![\d])",
                         re.IGNORECASE)
_LEADING = re.compile(r"^[\s*_#>\-]*(?:score\s*[:=]?\s*)?(\d{1,2}(?:\.\d+)?)(?![\d/.])"
                      r"(?=\s|$|[—–\-:,;.)])", re.IGNORECASE)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_EDGES = " \t—–-:;,.()*_\"'"
_LABEL = re.compile(r"^(?:score|rating|verdict)\b", re.IGNORECASE)


def parse(reply: str) -> Verdict | None:
    """The score and reason in a judge's reply, or None when it holds no score 0-10. A
    score written out of ten above ten (``11/10``, an enthusiastic small model) counts as
    10, and the verdict keeps what was written; a bare number above 10 is no score."""
    text = _THINK.sub("", reply).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for k, line in enumerate(lines):
        out_of_ten = _OUT_OF_TEN.search(line)
        match = out_of_ten or _LEADING.match(line)
        if match is None:
            continue
        value = float(match.group(1))
        said = None
        if value > 10 and out_of_ten is not None:
            said, value = value, 10.0
        if not 0 <= value <= 10:
            return None
        before = _LABEL.sub("", line[:match.start()].strip(_EDGES)).strip(_EDGES)
        rest = line[match.end():].strip(_EDGES) or before  # the reason after, else before
        if not rest and k + 1 < len(lines):  # "7/10" on a line, the reason on the next
            rest = lines[k + 1].strip(_EDGES)
        reason = " ".join(rest.split())
        if len(reason) > REASON_CHARS:
            reason = reason[:REASON_CHARS - 1].rstrip() + "…"
        return Verdict(round(value), reason, said)
    return None
