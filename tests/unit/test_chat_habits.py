"""A chat model's reply cut to start where the text stops: 50 scripted replies with the
habits chat models have (preambles, ellipses, restating the end of the text), whole and
streamed in pieces of every size."""

from __future__ import annotations

import random

import pytest

from loom.llm.chat_habits import StartCutter, continuation

PROMPTS = [
    "The lighthouse keeper climbed the stairs. At the top, the lamp was dark.",
    "She had not visited since her mother's death, and the walnut trees had dropped "
    "their leaves across the path.",
    "Marie counted the shutters twice. Seven of them were closed.",
    "The letter arrived on a Tuesday, which was strange, because nobody wrote anymore.",
    "In the kitchen, the kettle was still warm",
]
# What each prompt is continued with (a base model's continuation, as it would join).
CONTINUATIONS = [
    "He struck a match and waited for the wick to catch.",
    "Nobody had swept them away.",
    "She went inside without knocking.",
    "Inside was a key and nothing else.",
    "and someone had set out two cups.",
]
HABITS = [
    "Sure, here's the continuation:\n\n{c}",
    "Certainly! Here is how the story continues:\n{c}",
    "Here's the next part of the story:\n\n{c}",
    "Continuing the text:\n{c}",
    "{last} {c}",
    "...{c}",
    "Of course.\n\n{last} {c}",
    "Sure! {c}",
    "{words} {c}",
    "(continued)\n{c}",
]


def _last_sentence(prompt: str) -> str:
    cut = max(prompt.rstrip(".").rfind(". "), -1)
    return prompt[cut + 2:] if cut >= 0 else prompt


def _cases() -> list[tuple[str, str, str]]:
    out = []
    for prompt, cont in zip(PROMPTS, CONTINUATIONS, strict=True):
        last = _last_sentence(prompt)
        words = " ".join(prompt.split()[-4:])
        for habit in HABITS:
            out.append((prompt, habit.format(c=cont, last=last, words=words), cont))
    return out


CASES = _cases()
PREAMBLE_WORDS = ("sure", "certainly", "here", "continu", "of course", "(continued", "...")


def _streamed(prompt: str, reply: str, seed: int) -> str:
    rng = random.Random(seed)
    out: list[str] = []
    cutter = StartCutter(prompt, out.append)
    i = 0
    while i < len(reply):
        step = rng.randint(1, 7)
        cutter.feed(reply[i:i + step])
        i += step
    cutter.flush()
    return "".join(out)


def test_fifty_scripted_replies_start_where_the_text_stops() -> None:
    assert len(CASES) == 50
    preambles = restated = 0
    for k, (prompt, reply, cont) in enumerate(CASES):
        got = continuation(prompt, reply)
        assert got == _streamed(prompt, reply, k), (reply, got)
        start = got.strip().lower()
        preambles += start.startswith(PREAMBLE_WORDS)
        restated += start.startswith(_last_sentence(prompt).lower()[:20])
        joined = prompt + got
        assert joined.endswith(cont), (reply, got)
        assert " " + cont in joined or prompt.endswith(" "), (reply, got)
    assert (preambles, restated) == (0, 0)


@pytest.mark.parametrize(("prompt", "reply", "expected"), [
    # a base model's own openings are left alone
    ("The door opened.", "Sure enough, the stairs creaked.", " Sure enough, the stairs creaked."),
    ("He said", ", okay, so we go.", ", okay, so we go."),
    ("The door opened. ", "Okay, so she was home.", "Okay, so she was home."),
    ("The sea was", " grey and wide.", " grey and wide."),
    ("Here it is", ": the last page.", ": the last page."),
    # a short overlap is no restatement
    ("The cat sat.", "The cat was old.", " The cat was old."),
])
def test_a_reply_without_habits_is_kept(prompt: str, reply: str, expected: str) -> None:
    assert continuation(prompt, reply) == expected
    assert _streamed(prompt, reply, 3) == expected


def test_a_short_reply_is_released_when_the_stream_ends() -> None:
    assert continuation("The sea was", "Sure") == " Sure"
    assert continuation("The sea was", "") == ""
