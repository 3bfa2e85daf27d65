"""The arrow-command parser: one line in, a ``Command`` or a ``ParseError`` out.

``parse`` never raises and never touches the store: node references stay the strings
that were typed (lowercased, brackets and possessives removed). It works in three steps:

1. **Lexing.** The leading arrow (any of the lexicon's: ``→ -> --> => ⇒ ⟶ ➜``) is
   optional. Quoted values may use
   ``"…"`` (with ``\\"``, ``\\\\``, ``\\n`` escapes), ``“…”``, ``‘…’``, ``'…'`` or ``«…»``;
   an apostrophe inside a word (``let's``, the prime of ``a7x2'``) is not a quote. Words
   lose surrounding brackets and trailing punctuation; ``key:value``, ``key=value`` and
   ``key: value`` are options; ``§id`` is ``section:id``.
2. **Patterns.** Politeness (``please``, ``could you``, ``let's``…) is skipped, the verb
   is found from the catalogue's phrases (``show me`` → view, ``go to`` → switch,
   ``add a note`` → annotate), then each verb reads its arguments: node references,
   quoted strings, options and flags, with filler words (``me``, ``the``, ``node``,
   ``at``…) ignored. Filler words are therefore never node references.
3. **Fuzzy matching** (rapidfuzz, optimal string alignment) of an unknown verb, flag or
   option name, accepted only when one candidate is clearly best. Otherwise the line is a
   ``ParseError`` naming the closest forms, and an optional classifier may still be asked.

Range limits (``n`` ≤ 10) are the executor's job: the parser only checks that numbers are
numbers. A missing required argument is an error whose hint is the catalogue's syntax.

``slot_at(line, col)`` asks the same lexer and argument scan what is being typed at a
column (the verb, a node reference, a flag, an option or its value, a document…), which
is what completion offers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Literal

from rapidfuzz import process
from rapidfuzz.distance import OSA

from loom.commands.ast import (
    VERBS,
    Annotate,
    Bookmark,
    Command,
    Continue,
    Delete,
    Drop,
    Edit,
    Help,
    Link,
    LinkTarget,
    List,
    Memory,
    ParseError,
    Pin,
    Prune,
    Rate,
    Read,
    Recall,
    Rename,
    Respond,
    Search,
    Split,
    Stash,
    Switch,
    Tag,
    Think,
    Tree,
    Unbookmark,
    Undelete,
    Unprune,
    Untag,
    View,
    Write,
)
from loom.commands.canonical import doc_ref_text, quote, to_text
from loom.commands.catalogue import (
    ALL_TOOLS,
    CATEGORIES,
    COUNT_NOUNS,
    EDGE_TYPES,
    FILLER,
    HELP_ALL,
    NUMBER_WORDS,
    PHRASE_FILLER,
    POLITE,
    RESERVED,
    TOKEN_NOUNS,
    TOOLS,
    TOOLS_BY_NAME,
    VERB_FILLER,
    VIEW_SHAPES,
    Tool,
    synonym_table,
)
from loom.commands.lexicon import (
    ARROW_CHARS,
    CLOSERS,
    ValueKind,
    flags,
    option_key,
    options,
    split_line,
    takes_nodes,
    value_kind,
)

#: ``(text, candidate verbs) -> Command | None``: a model asked when patterns and fuzzy
#: matching are not confident. The parser works fully without one.
Classifier = Callable[[str, list[str]], "Command | None"]

COMMAND_TYPES: tuple[type, ...] = (
    View, List, Tree, Switch, Continue, Split, Respond, Annotate, Link, Edit, Read, Write,
    Pin, Stash, Recall, Drop, Memory, Help, Think, Bookmark, Unbookmark, Tag, Untag, Rate,
    Prune, Unprune, Delete, Undelete, Rename, Search,
)

# ---------------------------------------------------------------------------- lexing

_TOKEN = re.compile(
    r"""\s*(?P<tok>
        (?:(?P<key>[A-Za-z][\w-]*(?::[A-Za-z][\w-]*)*)[ \t]*[:=][ \t]*)?
        (?: "(?P<dq>(?:[^"\\]|\\.)*)"
          | “(?P<cq>(?:[^”\\]|\\.)*)”
          | «(?P<gq>[^»]*)»
          | '(?P<sq>(?:[^'\\]|\\.|'(?=\w))*)'(?!\w)
          | ‘(?P<csq>(?:[^’\\]|\\.|’(?=\w))*)’(?!\w)
        )
      | (?P<word>[^\s"“«]+)
    )""",
    re.S | re.X,
)
_ESCAPE = re.compile(r"\\(.)", re.S)
_ESCAPED = {
    "n": "\n", "r": "\r", "t": "\t", "\\": "\\", '"': '"', "'": "'", "”": "”", "’": "’",
}
_KV = re.compile(r"([A-Za-z][\w-]*)[:=](.*)", re.S)
_TAIL = ".,;!?…”»)]}>`*"
_HEAD = "([{<`*#"
_PUNCT_ONLY = "-—–:=↔|/&+~*" + ARROW_CHARS
_REF = re.compile(r"(?:[0-9a-hjkmnp-tv-z]{3,}|\d+(?:\.\d+)*|ann-\d+|root)'*")
_SHORT_ID = re.compile(r"(?=.*\d)[0-9a-hjkmnp-tv-z]{1,2}")  # an id cut too short: "1v"
_ID = re.compile(r"[\w.’'-]+")  # what may stand in brackets as a node id
_INT = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?", re.I)
_RANGE = re.compile(r"(\d+)\s*(?:-|–|\.\.|:)\s*(\d+)")
_THINK = re.compile(
    r"(?:(?:please|kindly|ok(?:ay)?|now|so|just|let'?s|let\s+me|i'?ll|i\s+will"
    r"|i'?d\s+like\s+to|i\s+want\s+to)[\s,]+)*"
    r"(?:think|thinking|reflect|ponder|thoughts?)(?![\w'’-]):?[ \t]?(?P<rest>.*)",
    re.I | re.S,
)

# A token: (option key or None, value, quoted?, start, end) — plain tuples are fastest.
_Tok = tuple[str | None, str, bool, int, int]


def _unescape(value: str) -> str:
    if "\\" not in value:
        return value
    # An unknown escape (``C:\path``) keeps its backslash.
    return _ESCAPE.sub(lambda m: _ESCAPED.get(m.group(1), m.group(0)), value)


def _tokenize(body: str) -> list[_Tok] | _Fail:
    """Split ``body`` (stripped) into words, quoted strings and options."""
    toks: list[_Tok] = []
    pos, end = 0, len(body)
    match_at = _TOKEN.match
    while pos < end:
        m = match_at(body, pos)
        if m is None:
            return _unterminated(body, pos)
        pos = m.end()
        _, key, dq, cq, gq, sq, csq, word = m.groups()
        if word is None:
            if dq is not None:
                value = _unescape(dq)
            elif cq is not None:
                value = _unescape(cq)
            elif gq is not None:
                value = gq
            else:
                value = _unescape(sq if sq is not None else csq)
            toks.append((key.lower() if key else None, value, True, m.start("tok"), pos))
            continue
        if word[0] in "'‘":
            return _unterminated(body, m.start("word"))
        start = m.start("word")
        core = word.rstrip(".,;:!?…")
        if len(core) > 2 and core[0] == "[" and core[-1] == "]" and _ID.fullmatch(core[1:-1]):
            toks.append((_REF_TOKEN, core[1:-1].lower().replace("’", "'"), False, start, pos))
            continue
        w = word.rstrip(_TAIL).lstrip(_HEAD).rstrip(_TAIL)
        if not w or not w.strip(_PUNCT_ONLY):
            continue
        if w[0] == "§" and len(w) > 1:
            toks.append(("section", w[1:], False, start, pos))
            continue
        kv = _KV.fullmatch(w)
        if kv is not None:
            toks.append((kv.group(1).lower(), kv.group(2), False, start, pos))
        elif w := w.rstrip(":"):
            toks.append((None, w, False, start, pos))
    return toks


def _unterminated(body: str, pos: int) -> _Fail:
    fragment = " ".join(body[pos:].split())
    return _Fail(
        f"unterminated quote: {fragment[:30]}{'…' if len(fragment) > 30 else ''}",
        hint='close the quote; write a quote inside quoted text as \\"',
    )


# ----------------------------------------------------------------------- vocabulary

_CONTENT_VERBS = frozenset({"respond", "annotate", "edit"})
#: Reader verbs whose builder reads the words no rule took (tags, ratings, search words).
_FREE_WORDS = frozenset({"tag", "untag", "rate", "search"})
_REF_TOKEN = "#ref"  # the key of a ``[id]`` token: a node reference, whatever it spells


def _phrase_key(phrase: str) -> tuple[str, ...]:
    words = phrase.split()
    return (words[0], *(w for w in words[1:] if w not in PHRASE_FILLER))


_PHRASES: dict[tuple[str, ...], str] = {
    _phrase_key(p): verb for p, verb in synonym_table().items()
}
#: Fuzzy verb targets: the verbs, and synonyms long enough not to attract noise.
_VERB_CHOICES: dict[str, str] = {
    p: v for p, v in synonym_table().items() if p in VERBS or (len(p) >= 6 and " " not in p)
}

#: The hint for a verb nothing is close to: what there is, rather than a far-fetched guess.
TOOL_GROUPS = "the tools: " + " · ".join(
    f"{category}: {', '.join(t.name for t in TOOLS if t.category == category)}"
    for category in CATEGORIES
)

_CONFIDENT = 0.75  # one edit in four letters
_MARGIN = 0.1  # the runner-up must be this much worse
_NEAR = 0.5  # close enough to count as a candidate (an ambiguity needs two confident ones)
_SUGGEST = 0.7  # close enough to be named in a hint: one edit in four letters, two in seven


@dataclass(frozen=True, slots=True)
class _Spec:
    tool: Tool
    filler: frozenset[str]
    counts: bool


_SPECS: dict[str, _Spec] = {
    t.name: _Spec(t, FILLER | VERB_FILLER.get(t.name, frozenset()), t.name == "continue")
    for t in ALL_TOOLS
}


# ---------------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class _Fail:
    """A ParseError in the making; ``unsure`` marks a confidence failure."""

    message: str
    hint: str | None = None
    candidates: tuple[str, ...] = ()
    unsure: bool = False

    def error(self) -> ParseError:
        return ParseError(message=self.message, hint=self.hint, candidates=self.candidates)


@dataclass(slots=True)
class _Args:
    refs: list[str] = field(default_factory=list)
    strings: list[str] = field(default_factory=list)
    opts: dict[str, str] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)
    rest: str = ""  # the text after the verb
    unknown: list[str] = field(default_factory=list)  # words no rule took (flagless verbs)


def _show(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return '"' + (text if len(text) <= limit else text[: limit - 1] + "…") + '"'


def _use(*forms: str) -> str:
    return "use " + " or ".join(forms)


def _seed_forms(tool: Tool) -> tuple[str, ...]:
    """The tool's command lines as seed 000 lists them (hints stay short)."""
    return tuple(s for s in tool.syntax if s.startswith("→"))


def _usage(tool: Tool) -> str:
    return _use(*_seed_forms(tool))


def _norm_ref(word: str) -> str | None:
    """``word`` as a node reference (lowercase, prime kept), or None."""
    w = word.lower().replace("’", "'").lstrip("#")
    if _REF.fullmatch(w):
        return w
    if w.endswith("'s") and _REF.fullmatch(w[:-2]):
        return w[:-2]
    return None


def _rank(word: str, choices: Mapping[str, str]) -> list[tuple[str, float]]:
    """Canonical values near ``word``, best first, with their scores."""
    best: dict[str, float] = {}
    for choice, score, _ in process.extract(
        word.lower(), list(choices), scorer=OSA.normalized_similarity, limit=6,
        score_cutoff=_NEAR,
    ):
        value = choices[choice]
        best[value] = max(best.get(value, 0.0), score)
    return sorted(best.items(), key=lambda kv: -kv[1])


def _fuzzy(word: str, choices: Mapping[str, str]) -> tuple[str | None, tuple[str, ...], bool]:
    """The one choice ``word`` clearly means (or None), the near candidates (only those
    similar enough to be worth suggesting), and whether several candidates were confident
    (an ambiguity, not a miss). An accepted correction is noted for :func:`parse_noting`."""
    ranked = _rank(word, choices) if choices else []
    if not ranked:
        return None, (), False
    top = ranked[0][1]
    if top < _CONFIDENT:
        return None, tuple(v for v, score in ranked[:2] if score >= _SUGGEST), False
    close = tuple(v for v, score in ranked if score > top - _MARGIN)
    if len(close) == 1:
        if word.lower() not in choices:
            _note_correction()
        return close[0], close, False
    return None, close, True


#: Set while :func:`parse_noting` runs: whether a typo was corrected on the way.
_CORRECTED: ContextVar[list[bool] | None] = ContextVar("_CORRECTED", default=None)


def _note_correction() -> None:
    seen = _CORRECTED.get()
    if seen is not None:
        seen.append(True)


# ------------------------------------------------------------------ verb finding


def _skip_polite(toks: list[_Tok]) -> int:
    """Index of the first token after the politeness (``please``, ``go ahead and``)."""
    i, n = 0, len(toks)
    while i < n and toks[i][0] is None and not toks[i][2]:
        lw = toks[i][1].lower()
        if lw == "go" and i + 1 < n and toks[i + 1][1].lower() == "ahead":
            i += 2
        elif lw in POLITE:
            i += 1
        else:
            break
    return i


def _find_verb(toks: list[_Tok]) -> tuple[str, int] | _Fail:
    """The verb and the index of the first argument token."""
    i, n = _skip_polite(toks), len(toks)
    words: list[str] = []
    idxs: list[int] = []
    j = i
    while j < n and len(words) < 3 and toks[j][0] is None and not toks[j][2]:
        lw = toks[j][1].lower()
        if not words or lw not in PHRASE_FILLER:
            words.append(lw)
            idxs.append(j)
        j += 1
    for size in range(len(words), 0, -1):
        verb = _PHRASES.get(tuple(words[:size]))
        if verb is not None:
            return verb, idxs[size - 1] + 1
    if not words and i < n and toks[i][0] == _REF_TOKEN:
        return _Fail(
            f"no command before [{toks[i][1]}]",
            hint=_did_you_mean(("view", "switch"), toks, i),
            candidates=("view", "switch"), unsure=True,
        )
    if not words:
        if i == n:
            return _Fail("no command, only politeness", hint="→ help lists the tools")
        return _Fail(f"unknown command {_show(toks[i][1])}", hint=TOOL_GROUPS,
                     unsure=True)
    verb, near, ambiguous = _fuzzy(words[0], _VERB_CHOICES)
    if verb is not None:
        return verb, idxs[0] + 1
    if ambiguous:
        return _Fail(
            f'ambiguous command "{toks[idxs[0]][1]}": {" or ".join(near[:3])}?',
            hint=_did_you_mean(near[:3], toks, idxs[0] + 1),
            candidates=near[:3], unsure=True,
        )
    if words[0] not in RESERVED and _norm_ref(words[0]) is not None and (
        len(toks) == i + 1 or any(c.isdigit() for c in words[0])
    ):
        return _Fail(
            f"no command before {_show(toks[i][1])}",
            hint=_did_you_mean(("view", "switch"), toks, i),
            candidates=("view", "switch"), unsure=True,
        )
    return _Fail(
        f"unknown command {_show(toks[idxs[0]][1])}",
        hint=_did_you_mean(near, toks, idxs[0] + 1) if near else TOOL_GROUPS,
        candidates=near, unsure=True,
    )


def _did_you_mean(verbs: tuple[str, ...], toks: list[_Tok], start: int) -> str:
    forms: list[str] = []
    for verb in verbs:
        got = _build(verb, toks, start, "")
        forms.append(to_text(got) if not isinstance(got, _Fail) else TOOLS_BY_NAME[verb].forms[0])
    if len(forms) == 1:
        return f"did you mean {forms[0]}?"
    return "did you mean " + ", ".join(forms[:-1]) + f" or {forms[-1]}?"


# ---------------------------------------------------------------- argument scan


def _next_value(toks: list[_Tok], i: int, filler: frozenset[str]) -> int | None:
    """Index of the next plain token (skipping filler), or None if an option comes first."""
    while i < len(toks):
        key, value, quoted, _, _ = toks[i]
        if key == _REF_TOKEN:
            return i
        if key is not None:
            return None
        if quoted or value.lower() not in filler:
            return i
        i += 1
    return None


def _scan(toks: list[_Tok], start: int, spec: _Spec, rest: str) -> _Args | _Fail:
    """Sort the argument tokens into references, strings, options and flags."""
    tool = spec.tool
    options, flags, filler = tool.options, tool.flags, spec.filler
    a = _Args(rest=rest)
    unknown: list[str] = []
    i, n = start, len(toks)
    while i < n:
        key, value, quoted, _, _ = toks[i]
        i += 1
        if key == _REF_TOKEN:
            a.refs.append(value)
            continue
        if key is not None:
            canon = options.get(key)
            if canon is None:
                ref = _norm_ref(key)
                if ref is not None and (quoted or not value):
                    a.refs.append(ref)  # "a7x2: …" — a colon after a reference
                    if quoted:
                        a.strings.append(value)
                    continue
                canon, near, _ = _fuzzy(key, options)
                if canon is None and key in ("doc", "document"):
                    return _Fail(
                        f"{tool.name} works on nodes; documents are read",
                        hint=f"did you mean → read doc:{quote(value)}?", candidates=("read",),
                    )
                if canon is None:
                    return _Fail(
                        f'unknown option "{key}:" for {tool.name}',
                        hint=_options_hint(tool, near), unsure=True,
                    )
            if not value and not quoted:
                j = _next_value(toks, i, filler)
                if j is None:
                    return _Fail(f"missing value after {key}:", hint=_usage(tool))
                _, value, quoted, _, _ = toks[j]
                i = j + 1
            if canon in a.opts:
                return _Fail(f"{canon}: given twice", hint=_usage(tool))
            a.opts[canon] = value
            continue
        if quoted:
            a.strings.append(value)
            continue
        lw = value.lower()
        canon = options.get(lw)
        if canon is not None and canon not in a.opts:
            j = _next_value(toks, i, filler)
            if j is not None:
                a.opts[canon] = toks[j][1]
                i = j + 1
                continue
        flag = flags.get(lw)
        if flag is not None:
            a.flags.append(flag)
            continue
        if lw in filler:
            continue
        if spec.counts:
            got = _count(toks, i, lw, filler)
            if got is not None:
                name, number, i = got
                if name in a.opts:
                    return _Fail(f"{name}: given twice", hint=_usage(tool))
                a.opts[name] = number
                continue
        ref = _norm_ref(lw)
        if ref is not None:
            a.refs.append(ref)
            continue
        unknown.append(value)
    if not flags:
        a.unknown = unknown  # a verb without flags: its builder says what is wrong
        return a
    for word in unknown:
        if _SHORT_ID.fullmatch(word.lower()) and takes_nodes(tool.name):
            # (issue 26: "→ view 1v" said "unknown option")
            return _Fail(f'"{word}" is too short for an id: an id needs at least 3 '
                         "characters", hint=f"use its first 3 or more, e.g. → {tool.name} "
                         "a7x2 (→ tree shows the ids)")
        flag, near, _ = _fuzzy(word, flags)
        if flag is None:
            return _Fail(
                f'unknown option "{word}" for {tool.name}',
                hint=_options_hint(tool, near), unsure=True,
            )
        a.flags.append(flag)
    return a


def _count(
    toks: list[_Tok], i: int, lw: str, filler: frozenset[str]
) -> tuple[str, str, int] | None:
    """``3 continuations`` / ``40 tokens``: (option, number, next index) or None."""
    number = NUMBER_WORDS.get(lw, lw if lw.isdigit() else None)
    if number is None:
        return None
    j = _next_value(toks, i, filler)
    if j is None or toks[j][2]:
        return None
    noun = toks[j][1].lower()
    if noun in COUNT_NOUNS:
        return "n", str(number), j + 1
    if noun in TOKEN_NOUNS:
        return "tokens", str(number), j + 1
    return None


def _options_hint(tool: Tool, near: tuple[str, ...]) -> str:
    forms = _seed_forms(tool)
    if near:
        return f"did you mean {near[0]}? " + _use(*forms)
    return _use(*forms)


def _limit_refs(a: _Args, spec: _Spec, most: int) -> _Fail | None:
    """More references than the verb takes: extras may be misspelt flags, else an error."""
    while len(a.refs) > most:
        extra = a.refs[-1]
        flag, _, _ = _fuzzy(extra, spec.tool.flags)
        if flag is None:
            verb = spec.tool.name
            if most == 0:
                return _Fail(f'unexpected "{extra}" for {verb}', hint=_usage(spec.tool))
            return _Fail(
                f"{verb} takes one node, got {', '.join(a.refs)}",
                hint="one per line: " + "; ".join(f"→ {verb} {r}" for r in a.refs),
            )
        a.refs.pop()
        a.flags.append(flag)
    return None


def _one(values: list[str], what: str, spec: _Spec) -> str | _Fail | None:
    uniq = list(dict.fromkeys(values))
    if len(uniq) > 1:
        return _Fail(f"choose one {what} for {spec.tool.name}: {', '.join(uniq)}",
                     hint=_usage(spec.tool))
    return uniq[0] if uniq else None


def _int(value: str, name: str) -> int | _Fail:
    v = value.strip()
    if v in NUMBER_WORDS:
        return NUMBER_WORDS[v]
    if _INT.fullmatch(v) and len(v) < 100:
        return int(v)
    return _Fail(f'{name} must be a whole number, got "{value}"', hint=f"e.g. {name}:3")


def _float(value: str, name: str) -> float | _Fail:
    if _FLOAT.fullmatch(value.strip()):
        number = float(value)
        if math.isfinite(number):
            return number
    return _Fail(f'{name} must be a number, got "{value}"', hint=f"e.g. {name}:0.8")


def _choice(value: str, choices: Mapping[str, str], name: str) -> str | _Fail:
    got = choices.get(value.lower())
    if got is None:
        got, _, _ = _fuzzy(value, choices)
    if got is None:
        listed = "|".join(dict.fromkeys(choices.values()))
        return _Fail(f'{name} must be one of {listed}, got "{value}"', hint=f"e.g. {name}:"
                     + next(iter(choices.values())), unsure=True)
    return got


def _ref_opt(a: _Args, key: str, spec: _Spec) -> str | _Fail | None:
    """The option ``key`` as a node reference."""
    value = a.opts.get(key)
    if value is None:
        return None
    ref = _norm_ref(value)
    if ref is None:
        return _Fail(f'{key}: expects a node id, got "{value}"', hint=_usage(spec.tool))
    return ref


def _node(a: _Args, spec: _Spec, key: str = "node", *, most: int = 1) -> str | _Fail | None:
    """The single node the verb acts on, from ``key:`` or the bare references."""
    fail = _limit_refs(a, spec, most)
    if fail is not None:
        return fail
    opt = _ref_opt(a, key, spec)
    if isinstance(opt, _Fail):
        return opt
    if opt is not None:
        if a.refs and a.refs[0] != opt:
            return _Fail(f"two nodes given: {opt}, {a.refs[0]}", hint=_usage(spec.tool))
        return opt
    return a.refs[0] if a.refs else None


def _strings_as_refs(a: _Args) -> None:
    """``view "a7x2"``: a quoted node id where the verb takes no text."""
    while a.strings and (ref := _norm_ref(a.strings[0])) is not None:
        a.refs.append(ref)
        a.strings.pop(0)


def _unquoted_hint(a: _Args, verb: str, node: str) -> str:
    words = a.rest.split()
    for k, word in enumerate(words):
        if _norm_ref(word.rstrip(_TAIL).lstrip(_HEAD).rstrip(":")) == node:
            words = words[k + 1:]
            break
    text = " ".join(words).strip(" \"'")
    if text:
        return f"put the content in quotes: → {verb} {node} {quote(text)}"
    return _use(TOOLS_BY_NAME[verb].forms[0])


# ------------------------------------------------------------------------ builders


def _no_doc(a: _Args, spec: _Spec) -> _Fail | None:
    if "doc" in a.opts:
        return _Fail(f"{spec.tool.name} works on nodes; documents are read",
                     hint=f"did you mean → read doc:{quote(a.opts['doc'])}?", candidates=("read",))
    return None


def _build_view(a: _Args, spec: _Spec) -> Command | _Fail:
    if (fail := _no_doc(a, spec)) is not None:
        return fail
    _strings_as_refs(a)
    if a.strings:
        return _Fail(f"view takes no text, got {_show(a.strings[0])}", hint=_usage(spec.tool))
    node = _node(a, spec)
    if isinstance(node, _Fail):
        return node
    branch = _ref_opt(a, "branch", spec)
    if isinstance(branch, _Fail):
        return branch
    details = [f for f in a.flags if not f.startswith("as:")]
    shapes = [f[3:] for f in a.flags if f.startswith("as:")]
    if "as" in a.opts:
        shape = _choice(a.opts["as"], VIEW_SHAPES, "as")
        if isinstance(shape, _Fail):
            return shape
        shapes.append(shape)
    detail = _one(details, "detail", spec)
    as_ = _one(shapes, "as:", spec)
    if isinstance(detail, _Fail):
        return detail
    if isinstance(as_, _Fail):
        return as_
    return View(node=node, branch=branch, detail=detail or "summary", as_=as_)


def _build_list(a: _Args, spec: _Spec) -> Command | _Fail:
    _strings_as_refs(a)
    node = _node(a, spec)
    if isinstance(node, _Fail):
        return node
    what = _one(a.flags, "list", spec)
    if isinstance(what, _Fail):
        return what
    if what == "documents":
        if node is not None:
            return _Fail("documents are not connected to a node",
                         hint="→ list documents (or → read) lists them all")
        return Read()
    return List(node=node, what=what or "continuations")


def _build_tree(a: _Args, spec: _Spec) -> Command | _Fail:
    _strings_as_refs(a)
    start = _node(a, spec, "from")
    if isinstance(start, _Fail):
        return start
    depth = _int(a.opts["depth"], "depth") if "depth" in a.opts else None
    if isinstance(depth, _Fail):
        return depth
    return Tree(from_=start, depth=depth, summary="summary" in a.flags,
                text="with-text" in a.flags)


def _build_switch(a: _Args, spec: _Spec) -> Command | _Fail:
    _strings_as_refs(a)
    node = _node(a, spec)
    if isinstance(node, _Fail):
        return node
    if node is None:
        return _Fail("switch needs a node", hint=_use(*spec.tool.syntax))
    return Switch(node=node, tree=a.opts.get("tree"))


def _build_continue(a: _Args, spec: _Spec) -> Command | _Fail:
    _strings_as_refs(a)
    if "from" not in a.opts and len(a.refs) == 1 and a.refs[0].isdigit():
        ref = a.refs[0]
        return _Fail(f'"{ref}" could be a node or a count',
                     hint=f"did you mean → continue from {ref} or → continue n:{ref}?")
    start = _node(a, spec, "from")
    if isinstance(start, _Fail):
        return start
    values: dict[str, int | float | None] = {}
    for name in ("n", "tokens"):
        got = _int(a.opts[name], name) if name in a.opts else None
        if isinstance(got, _Fail):
            return got
        values[name] = got
    temp = _float(a.opts["temperature"], "temperature") if "temperature" in a.opts else None
    if isinstance(temp, _Fail):
        return temp
    return Continue(from_=start, n=values["n"], tokens=values["tokens"], temperature=temp)


def _build_split(a: _Args, spec: _Spec) -> Command | _Fail:
    """``split a7x2 at:57 [alt:"…"]``; a bare number after the node is the offset, a
    quoted string the alternative."""
    if "at" not in a.opts and len(a.refs) == 2 and a.refs[1].isdigit():
        a.opts["at"] = a.refs.pop()
    node = _node(a, spec)
    if isinstance(node, _Fail):
        return node
    if node is None:
        return _Fail("split needs a node", hint=_use(*spec.tool.syntax))
    if "at" not in a.opts:
        return _Fail("split needs an offset", hint=_use(spec.tool.syntax[0]))
    at = _int(a.opts["at"], "at")
    if isinstance(at, _Fail):
        return at
    alts = ([a.opts["alt"]] if "alt" in a.opts else []) + a.strings
    if len(alts) > 1:
        return _Fail("split takes one alternative", hint=_use(spec.tool.syntax[1]))
    return Split(node=node, at=at, alt=alts[0] if alts else None)


def _node_and_content(a: _Args, spec: _Spec) -> tuple[str, str] | _Fail:
    verb = spec.tool.name
    if not a.refs and "node" not in a.opts and len(a.strings) == 2:
        _strings_as_refs(a)
    if not a.strings and a.refs:
        return _Fail(f"{verb} needs the content in quotes",
                     hint=_unquoted_hint(a, verb, a.refs[0]))
    if a.unknown:
        return _Fail(f'unexpected "{a.unknown[0]}" for {verb}', hint=_use(spec.tool.syntax[0]))
    node = _node(a, spec)
    if isinstance(node, _Fail):
        return node
    if node is None:
        return _Fail(f"{verb} needs a node", hint=_use(spec.tool.syntax[0]))
    if not a.strings:
        return _Fail(f"{verb} needs the content in quotes", hint=_unquoted_hint(a, verb, node))
    if len(a.strings) > 1:
        return _Fail(f"{verb} takes one quoted content, got {len(a.strings)}",
                     hint=_use(spec.tool.syntax[0]))
    return node, a.strings[0]


def _build_respond(a: _Args, spec: _Spec) -> Command | _Fail:
    got = _node_and_content(a, spec)
    if isinstance(got, _Fail):
        return got
    edge = _choice(a.opts["as"], EDGE_TYPES, "as") if "as" in a.opts else "continuation"
    if isinstance(edge, _Fail):
        return edge
    return Respond(node=got[0], content=got[1], as_=edge)


def _build_annotate(a: _Args, spec: _Spec) -> Command | _Fail:
    got = _node_and_content(a, spec)
    return got if isinstance(got, _Fail) else Annotate(node=got[0], content=got[1])


def _build_edit(a: _Args, spec: _Spec) -> Command | _Fail:
    got = _node_and_content(a, spec)
    return got if isinstance(got, _Fail) else Edit(node=got[0], content=got[1])


def _build_link(a: _Args, spec: _Spec) -> Command | _Fail:
    if len(a.strings) > 1:
        _strings_as_refs(a)
    fail = _limit_refs(a, spec, 2)
    if fail is not None:
        return fail
    if not a.refs:
        return _Fail("link needs a source node", hint=_use(*spec.tool.syntax))
    source, others = a.refs[0], a.refs[1:]
    node_opt = _ref_opt(a, "node", spec)
    if isinstance(node_opt, _Fail):
        return node_opt
    section = a.opts.get("section")
    if "doc" in a.opts:
        if others or node_opt:
            return _Fail("link to one target at a time", hint=_usage(spec.tool))
        target = LinkTarget(kind="doc", doc=a.opts["doc"], section=section)
    elif "tree" in a.opts:
        if len(others) + (node_opt is not None) > 1:
            return _Fail("link to one target at a time", hint=_usage(spec.tool))
        target = LinkTarget(kind="tree", tree=a.opts["tree"], node=node_opt or
                            (others[0] if others else None))
    elif node_opt is not None or others:
        if node_opt is not None and others:
            return _Fail("link to one target at a time", hint=_usage(spec.tool))
        target = LinkTarget(kind="node", node=node_opt or others[0])
    else:
        return _Fail("link needs a target", hint=_use(*spec.tool.forms))
    if section is not None and target.kind != "doc":
        return _Fail("section: belongs to a doc:\"…\" target", hint=_usage(spec.tool))
    note = a.opts.get("note")
    if a.strings:
        if note is not None or len(a.strings) > 1:
            return _Fail("link takes one note", hint=_use(spec.tool.syntax[1]))
        note = a.strings[0]
    return Link(node=source, target=target, note=note)


def _build_read(a: _Args, spec: _Spec) -> Command | _Fail:
    doc = a.opts.get("doc")
    if doc is None and len(a.strings) == 1:
        doc = a.strings.pop()
    if doc is None:
        if a.refs:
            return _Fail("read works on documents; nodes are viewed",
                         hint=f"did you mean → view {a.refs[0]}?", candidates=("view",))
        if a.flags or a.opts:
            return _Fail("read needs a document", hint=_use(spec.tool.syntax[0]))
        return Read()  # → read alone: the documents there are
    if a.strings or a.refs:
        extra = a.strings[0] if a.strings else a.refs[0]
        return _Fail(f"unexpected {_show(extra)} for read", hint=_usage(spec.tool))
    lines = None
    if "lines" in a.opts:
        m = _RANGE.fullmatch(a.opts["lines"].strip())
        if m is None and _INT.fullmatch(a.opts["lines"].strip()):
            lines = (int(a.opts["lines"]), int(a.opts["lines"]))
        elif m is None:
            return _Fail(f'lines: expects start-end, got "{a.opts["lines"]}"',
                         hint=_use(spec.tool.syntax[2]))
        else:
            lines = (int(m.group(1)), int(m.group(2)))
    return Read(doc=doc, summary="summary" in a.flags, lines=lines, section=a.opts.get("section"))


def _build_write(a: _Args, spec: _Spec) -> Command | _Fail:
    doc = a.opts.get("doc")
    if doc is None:
        return _Fail("write needs a document", hint=_use(*spec.tool.syntax))
    modes: list[tuple[str, str | None, str | None]] = []
    if "at" in a.opts:
        modes.append(("at", a.opts["at"], None))
    if "replace" in a.opts:
        modes.append(("replace", None, a.opts["replace"]))
    elif "replace" in a.flags:
        if "section" not in a.opts:
            return _Fail("replace needs a section", hint=_use(spec.tool.syntax[2]))
        modes.append(("replace", None, a.opts["section"]))
    if "append" in a.flags:
        modes.append(("append", None, None))
    if len(modes) > 1:
        return _Fail("choose one of append, at:, replace:", hint=_use(*spec.tool.syntax))
    if not a.strings:
        return _Fail("write needs the content in quotes", hint=_use(*spec.tool.syntax))
    if len(a.strings) > 1 or a.refs:
        return _Fail("write takes one quoted content", hint=_use(*spec.tool.syntax))
    mode, at, section = modes[0] if modes else ("append", None, None)
    return Write(doc=doc, mode=mode, at=at, section=section, content=a.strings[0])  # type: ignore[arg-type]


def _build_pin(a: _Args, spec: _Spec) -> Command | _Fail:
    node = _node(a, spec)
    if isinstance(node, _Fail):
        return node
    doc = a.opts.get("doc")
    if a.strings:
        return _Fail("pin a node or a doc:\"name\"", hint=_use(*spec.tool.syntax))
    if (node is None) == (doc is None):
        return _Fail("pin one node or one document", hint=_use(*spec.tool.syntax))
    section = a.opts.get("section")
    if section is not None and doc is None:
        return _Fail("section: belongs to a document", hint=_use(spec.tool.syntax[2]))
    return Pin(node=node, doc=doc, section=section)


def _build_stash(a: _Args, spec: _Spec) -> Command | _Fail:
    strings = list(a.strings)
    label = a.opts.get("label")
    if label is None:
        if not strings:
            return _Fail("stash needs a quoted label", hint=_use(*spec.tool.syntax))
        label = strings.pop(0)
    content_of = _ref_opt(a, "content-of", spec)
    if isinstance(content_of, _Fail):
        return content_of
    summary_of = None
    if "summary-of" in a.opts:
        summary_of = _path_range(a.opts["summary-of"])
        if summary_of is None:
            got = a.opts["summary-of"]
            return _Fail(f'summary-of: expects a range like r001-a7x2, got "{got}"',
                         hint=_use(spec.tool.syntax[2]))
    sources = len(strings) + (content_of is not None) + (summary_of is not None)
    if sources == 0 and not a.refs:
        return _Fail("stash needs something to keep: quoted content, content-of: or "
                     "summary-of:", hint=_use(*spec.tool.syntax))
    if sources != 1 or a.refs:
        return _Fail("stash one thing: quoted content, content-of: or summary-of:",
                     hint=_use(*spec.tool.syntax))
    return Stash(label=label, content=strings[0] if strings else None,
                 content_of=content_of, summary_of=summary_of)


def _path_range(value: str) -> tuple[str, str] | None:
    v = value.strip()
    for k, ch in enumerate(v):
        if ch == "-":
            first, last = _norm_ref(v[:k]), _norm_ref(v[k + 1:])
            if first is not None and last is not None:
                return first, last
    return None


def _build_recall(toks: list[_Tok], start: int) -> Command | _Fail:
    """``recall "label"``; an unquoted label is the rest of the line, filler trimmed."""
    spec = _SPECS["recall"]
    args = toks[start:]
    for key, value, quoted, _, _ in args:
        if quoted or (key is not None and spec.tool.options.get(key) == "label"):
            return Recall(label=value)
    words = [value for key, value, _, _, _ in args if key is None]
    while words and words[0].lower() in spec.filler:
        words.pop(0)
    while words and words[-1].lower() in spec.filler:
        words.pop()
    if not words:
        return _Fail("recall needs a stash label", hint=_use(*spec.tool.syntax))
    return Recall(label=" ".join(words))


def _build_drop(a: _Args, spec: _Spec) -> Command | _Fail:
    if "lines" in a.opts:
        return _Fail("drop takes a pin or a stash; context lines are pruned automatically",
                     hint=_use(*spec.tool.syntax))
    pins: list[str] = []
    if "pin" in a.opts:
        ref = _norm_ref(a.opts["pin"])
        pins.append(ref if ref is not None else a.opts["pin"])
    if "doc" in a.opts:
        pins.append(doc_ref_text(a.opts["doc"], a.opts.get("section")))
    fail = _limit_refs(a, spec, 1)
    if fail is not None:
        return fail
    pins += a.refs
    stashes = [a.opts["stash"]] if "stash" in a.opts else []
    stashes += a.strings
    if len(pins) > 1 or len(stashes) > 1:
        return _Fail("drop one pin and/or one stash per line", hint=_use(*spec.tool.syntax))
    if not pins and not stashes:
        return _Fail("drop needs a pin or a stash", hint=_use(*spec.tool.syntax))
    return Drop(pin=pins[0] if pins else None, stash=stashes[0] if stashes else None)


def _build_memory(a: _Args, spec: _Spec) -> Command | _Fail:
    fail = _limit_refs(a, spec, 0)
    if fail is not None:
        return fail
    what = _one(a.flags, "of trace, stashed, errors", spec)
    if isinstance(what, _Fail):
        return what
    return Memory(what=what or "state")  # type: ignore[arg-type]


# ------------------------------------------------------------ the reader's verbs


def _one_node(a: _Args, spec: _Spec) -> str | _Fail | None:
    _strings_as_refs(a)
    if a.strings:
        return _Fail(f"{spec.tool.name} takes no text, got {_show(a.strings[0])}",
                     hint=_usage(spec.tool))
    return _node(a, spec)


def _build_bookmark(a: _Args, spec: _Spec) -> Command | _Fail:
    if len(a.strings) > 1:
        return _Fail("bookmark takes one quoted label", hint=_usage(spec.tool))
    label = a.strings.pop() if a.strings else None
    node = _node(a, spec)
    return node if isinstance(node, _Fail) else Bookmark(node=node, label=label)


def _build_unbookmark(a: _Args, spec: _Spec) -> Command | _Fail:
    node = _one_node(a, spec)
    return node if isinstance(node, _Fail) else Unbookmark(node=node)


def _tags_and_node(a: _Args, spec: _Spec) -> tuple[str | None, tuple[str, ...]] | _Fail:
    """``tag a7x2 "dream" draft #mood``: the node first, then tags (quoted or bare)."""
    if "node" in a.opts:
        node: str | None = _norm_ref(a.opts["node"])
        words = list(a.refs)
    else:
        node = a.refs[0] if a.refs else None
        words = a.refs[1:]
    tags = [t for t in (*a.strings, *words, *(w.lstrip("#") for w in a.unknown)) if t.strip()]
    if spec.tool.name == "tag" and not tags:
        return _Fail("tag needs a tag", hint=_usage(spec.tool))
    return node, tuple(tags)


def _build_tag(a: _Args, spec: _Spec) -> Command | _Fail:
    got = _tags_and_node(a, spec)
    return got if isinstance(got, _Fail) else Tag(node=got[0], tags=got[1])


def _build_untag(a: _Args, spec: _Spec) -> Command | _Fail:
    got = _tags_and_node(a, spec)
    return got if isinstance(got, _Fail) else Untag(node=got[0], tags=got[1])


_RATINGS = {"good": 1, "up": 1, "+": 1, "like": 1, "bad": -1, "down": -1, "-": -1,
            "dislike": -1, "clear": 0, "none": 0}


def _build_rate(a: _Args, spec: _Spec) -> Command | _Fail:
    rating: int | None = None
    node: str | None = None
    for word in (*a.refs, *a.unknown, *a.strings):
        w = word.lower()
        if rating is None and _INT.fullmatch(w) and (node is not None or w[0] in "+-"
                                                     or len(a.refs) + len(a.unknown) > 1):
            rating = max(-1, min(1, int(w)))
        elif rating is None and w in _RATINGS:
            rating = _RATINGS[w]
        elif node is None and _norm_ref(w) is not None:
            node = _norm_ref(w)
        else:
            return _Fail(f'unexpected "{word}" for rate', hint=_usage(spec.tool))
    if rating is None:
        return _Fail("rate needs +1, -1 or 0", hint=_usage(spec.tool))
    return Rate(node=node, rating=rating)


def _needs_node(a: _Args, spec: _Spec) -> str | _Fail:
    node = _one_node(a, spec)
    if node is None:
        return _Fail(f"{spec.tool.name} needs a node", hint=_usage(spec.tool))
    return node


def _build_prune(a: _Args, spec: _Spec) -> Command | _Fail:
    node = _needs_node(a, spec)
    return node if isinstance(node, _Fail) else Prune(node=node)


def _build_unprune(a: _Args, spec: _Spec) -> Command | _Fail:
    node = _needs_node(a, spec)
    return node if isinstance(node, _Fail) else Unprune(node=node)


def _node_or_tree(a: _Args, spec: _Spec) -> tuple[str | None, str | None] | _Fail:
    tree = a.opts.get("tree")
    if tree is not None:
        if a.refs or a.strings:
            return _Fail(f"{spec.tool.name} takes a node or a tree, not both",
                         hint=_usage(spec.tool))
        return None, tree
    node = _needs_node(a, spec)
    return node if isinstance(node, _Fail) else (node, None)


def _build_delete(a: _Args, spec: _Spec) -> Command | _Fail:
    got = _node_or_tree(a, spec)
    return got if isinstance(got, _Fail) else Delete(node=got[0], tree=got[1])


def _build_undelete(a: _Args, spec: _Spec) -> Command | _Fail:
    got = _node_or_tree(a, spec)
    return got if isinstance(got, _Fail) else Undelete(node=got[0], tree=got[1])


def _build_rename(a: _Args, spec: _Spec) -> Command | _Fail:
    if len(a.strings) != 1:
        return _Fail("rename takes the new title in quotes", hint=_usage(spec.tool))
    if a.refs or a.unknown:
        return _Fail(f'unexpected "{(a.refs or a.unknown)[0]}" for rename',
                     hint=_usage(spec.tool))
    return Rename(title=a.strings[0], tree=a.opts.get("tree"))


def _build_search(a: _Args, spec: _Spec) -> Command | _Fail:
    words = [*a.strings, *a.refs, *a.unknown]
    if not words:
        return _Fail("search needs words to look for", hint=_usage(spec.tool))
    query = " ".join(a.strings) if a.strings else " ".join(words)
    if a.strings and (a.refs or a.unknown):  # quoted words and bare ones: all of them
        query = " ".join(f'"{w}"' if " " in w else w for w in words)
    return Search(query=query, tree=a.opts.get("tree"))


_BUILDERS: dict[str, Callable[[_Args, _Spec], Command | _Fail]] = {
    "bookmark": _build_bookmark, "unbookmark": _build_unbookmark, "tag": _build_tag,
    "untag": _build_untag, "rate": _build_rate, "prune": _build_prune,
    "unprune": _build_unprune, "delete": _build_delete, "undelete": _build_undelete,
    "rename": _build_rename, "search": _build_search,
    "view": _build_view, "list": _build_list, "tree": _build_tree, "switch": _build_switch,
    "continue": _build_continue, "split": _build_split, "respond": _build_respond,
    "annotate": _build_annotate,
    "link": _build_link, "edit": _build_edit, "read": _build_read, "write": _build_write,
    "pin": _build_pin, "stash": _build_stash, "drop": _build_drop,
    "memory": _build_memory,
}


def _build_help(toks: list[_Tok], start: int) -> Command | _Fail:
    spec = _SPECS["help"]
    words = [t[1].lower() for t in toks[start:] if t[1].lower() not in spec.filler]
    if not words:
        return Help()
    if len(words) > 1 and tuple(words[:2]) in _PHRASES:
        return Help(tool=_PHRASES[tuple(words[:2])])
    word = words[0]
    if word in HELP_ALL:
        return Help()
    tool = _PHRASES.get((word,))
    if tool is None:
        tool, near, _ = _fuzzy(word, _VERB_CHOICES)
        if tool is None:
            hint = f"did you mean → help {near[0]}?" if near else TOOL_GROUPS
            return _Fail(f"no tool called {_show(word)}", hint=hint, candidates=near,
                         unsure=True)
    return Help(tool=tool)


def _think_content(rest: str) -> str:
    """One-line ``think text`` or the block ``think\\n…\\n←`` (closing line optional)."""
    if "\n" not in rest:
        return rest.strip()
    lines = rest.split("\n")
    first = lines.pop(0)
    if lines and lines[-1].strip() in CLOSERS:
        lines.pop()
    if first.strip():
        lines.insert(0, first.strip())
    return "\n".join(lines)


def _build(verb: str, toks: list[_Tok], start: int, body: str) -> Command | _Fail:
    if verb == "help":
        return _build_help(toks, start)
    if verb == "recall":
        return _build_recall(toks, start)
    if verb == "think":
        return Think(content=_think_content(body[toks[start - 1][4]:] if start else body))
    spec = _SPECS[verb]
    rest = body[toks[start][3]:] if start < len(toks) else ""
    args = _scan(toks, start, spec, rest)
    if isinstance(args, _Fail):
        return args
    if args.unknown and verb not in _CONTENT_VERBS and verb not in _FREE_WORDS:
        return _Fail(f'unexpected "{args.unknown[0]}" for {verb}',
                     hint=_usage(spec.tool), unsure=True)
    return _BUILDERS[verb](args, spec)


# ---------------------------------------------------------------------------- entry


def _parse(line: str) -> tuple[Command | _Fail, str]:
    after = split_line(line).body
    think = _THINK.fullmatch(after.lstrip())
    if think is not None:
        return Think(content=_think_content(think.group("rest"))), after
    body = after.strip()
    if not body:
        return _Fail("empty command", hint="→ help lists the tools"), body
    toks = _tokenize(body)
    if isinstance(toks, _Fail):
        return toks, body
    if not toks:
        return _Fail(f"couldn't parse {_show(body)}", hint="→ help lists the tools"), body
    found = _find_verb(toks)
    if isinstance(found, _Fail):
        return found, body
    return _build(found[0], toks, found[1], body), body


def parse(line: str, classifier: Classifier | None = None) -> Command | ParseError:
    """Parse one arrow command (the arrow is optional). Never raises.

    ``classifier(text, candidates)`` is asked only when patterns and fuzzy matching are
    not confident (an unknown or ambiguous verb, an unknown option); a Command it returns
    is used, anything else (or an exception) leaves the ParseError.
    """
    return parse_noting(line, classifier)[0]


def parse_noting(line: str, classifier: Classifier | None = None
                 ) -> tuple[Command | ParseError, bool]:
    """:func:`parse`, and whether the command was *read as* something the line does not
    spell: a typo corrected by fuzzy matching (``→ contineu n:3``) or the classifier's
    guess. Whoever runs it says so (``(read as → continue n:3)``), so neither a human nor
    a model learns a wrong spelling. Synonyms and filler words are not corrections."""
    if not isinstance(line, str):
        return ParseError(message=f"expected text, got {type(line).__name__}"), False
    seen: list[bool] = []
    token = _CORRECTED.set(seen)
    try:
        result, body = _parse(line)
    except Exception as exc:  # the contract is "never raises"; tests assert this is unused
        return ParseError(message=f"internal parser error ({type(exc).__name__}) on {_show(line)}",
                          hint="please report this line"), False
    finally:
        _CORRECTED.reset(token)
    if not isinstance(result, _Fail):
        return result, bool(seen)
    if result.unsure and classifier is not None:
        try:
            guess = classifier(body, list(result.candidates or VERBS))
        except Exception:  # a failing classifier must not break parsing
            guess = None
        if isinstance(guess, COMMAND_TYPES):
            return guess, True  # type: ignore[return-value]
    return result.error(), False


# -------------------------------------------------------------- completion slots

#: What may be typed in a slot: a verb, a tool name (``help``'s argument), a node
#: reference, a flag, an option name, an option's value, a document, a tree, a stash
#: label, a section, or free text in quotes.
SlotKind = Literal[
    "verb", "tool", "node", "flag", "option", "value", "doc", "tree", "stash", "section",
    "text",
]


@dataclass(frozen=True, slots=True)
class Slot:
    """What is being typed at a column of a command line.

    ``start``/``end`` are the line offsets of the whole token being typed (what a
    completion replaces); ``typed`` is its value up to the column. ``head`` is what a
    completion keeps in front of a value (``doc:``, ``from:``, ``summary-of:a7x2-``);
    ``quote`` is the opening quote typed (or ``[`` for a bracketed reference). For a verb
    right after the arrow the range starts at the arrow (``with_arrow``), so a completion
    can write the canonical ``→``.
    """

    kinds: tuple[SlotKind, ...]
    start: int
    end: int
    typed: str
    verb: str | None = None
    key: str | None = None  # the canonical option whose value is typed
    head: str = ""
    quote: str = ""
    with_arrow: bool = False


@dataclass(frozen=True, slots=True)
class _Span:
    """A token of the line as typed: its extent, its key and where its value starts."""

    start: int
    end: int
    key: str | None = None
    key_end: int = -1  # the end of the key's name (before ``:``), -1 without one
    value_start: int = 0
    quote: str = ""
    value_end: int = -1  # where the value ends (before a closing quote or ``]``)


_QUOTE_GROUPS = ("dq", "cq", "gq", "sq", "csq")
_SPACE = re.compile(r"\s*")
_OPEN_KEY = re.compile(r"([A-Za-z][\w-]*(?::[A-Za-z][\w-]*)*)[ \t]*[:=][ \t]*")  # as _TOKEN
_PROBE = "\x00"  # a word nobody types: where the argument scan puts it tells the slot


def _spans(text: str) -> list[_Span]:
    """The tokens of ``text`` as the lexer cuts them; an unterminated quote is one last
    token running to the end (the user is typing inside it)."""
    spans: list[_Span] = []
    pos, n = 0, len(text)
    while True:
        pos = _SPACE.match(text, pos).end()  # type: ignore[union-attr]
        if pos >= n:
            return spans
        m = _TOKEN.match(text, pos)
        word = m.group("word") if m is not None else None
        if m is None or (word is not None and word[0] in "'‘"):
            spans.append(_open_quote(text, pos, spans))
            return spans
        start, end = m.start("tok"), m.end()
        if word is None:
            group = next(g for g in _QUOTE_GROUPS if m.group(g) is not None)
            vs = m.start(group)
            key = m.group("key")
            spans.append(_Span(start, end, key, m.end("key") if key else -1, vs, text[vs - 1],
                               m.end(group)))
        else:
            spans.append(_word_span(word, start, end))
        pos = end


def _open_quote(text: str, pos: int, spans: list[_Span]) -> _Span:
    prev = spans[-1] if spans else None
    key = _OPEN_KEY.fullmatch(text, prev.start, pos) if prev is not None else None
    if prev is not None and key is not None:
        spans.pop()  # ``doc:"char``: the key was lexed as a word of its own
        return _Span(prev.start, len(text), key.group(1), key.end(1), pos + 1, text[pos],
                     len(text))
    return _Span(pos, len(text), None, -1, pos + 1, text[pos], len(text))


def _word_span(word: str, start: int, end: int) -> _Span:
    if word[0] == "§":
        return _Span(start, end, "section", -1, start + 1, "", end)
    head = len(word) - len(word.lstrip(_HEAD + "["))
    kv = _KV.fullmatch(word[head:])
    if kv is not None:
        key_end = start + head + len(kv.group(1))
        return _Span(start, end, kv.group(1), key_end, key_end + 1, "", end)
    bracket = "[" in word[:head]
    return _Span(start, end, None, -1, start + head, "[" if bracket else "",
                 end - 1 if bracket and word.endswith("]") else end)


# The meaning of a quoted string (not an option's value) for each verb, as the builders
# read it; ``read``'s first string is its document.
_QUOTED: Mapping[str, ValueKind] = {
    "view": "node", "list": "node", "tree": "node", "switch": "node", "continue": "node",
    "pin": "node", "respond": "text", "annotate": "text", "edit": "text", "link": "text",
    "write": "text", "stash": "text", "read": "text", "recall": "stash", "drop": "stash",
    "bookmark": "text", "tag": "text", "untag": "text", "rename": "text", "search": "text",
    "split": "text",
}


def _pending_option(toks: list[_Tok], first: int, verb: str, quoted: bool) -> str | None:
    """The option whose value the next token is (``continue from |``), by asking the
    argument scan where a probe token ends up."""
    spec = _SPECS[verb]
    if not spec.tool.options:
        return None
    got = _scan([*toks, (None, _PROBE, quoted, 0, 0)], first, spec, "")
    if isinstance(got, _Fail):
        return None
    return next((k for k, v in got.opts.items() if v == _PROBE), None)


def _slot_kinds(kind: ValueKind) -> tuple[SlotKind, ...]:
    return ("node",) if kind in ("node", "range") else (kind,)


def slot_at(line: str, col: int) -> Slot | None:
    """What is being typed at offset ``col`` of ``line``, or None where nothing can be
    (inside the indentation or the arrow, after an unknown verb, in an unknown option).

    The line is cut by the grammar's own lexer and its verb found as ``parse`` finds it
    (politeness skipped, synonyms and near-misses accepted); the arguments before the
    cursor go through the same scan as when parsing, so ``continue from |`` is the value
    of ``from`` just as ``continue from a7x2`` parses.
    """
    parts = split_line(line)
    base = parts.body_start
    col = max(0, min(col, len(line)))
    if col < base:
        return None
    text, rel = line[base:], col - base
    cur = next((s for s in _spans(text) if s.start <= rel <= s.end), None)
    if cur is None:
        cur = _Span(rel, rel, None, -1, rel, "", rel)
    prefix = text[: cur.start].rstrip()
    toks = _tokenize(prefix) if prefix else []
    if isinstance(toks, _Fail):
        return None
    typed = text[cur.value_start: max(min(rel, cur.value_end), cur.value_start)]
    here = Slot((), base + cur.start, base + cur.end, typed, quote=cur.quote)
    if _skip_polite(toks) == len(toks):
        if cur.key is not None or cur.quote:
            return None
        at_arrow = bool(parts.arrow) and not prefix
        return replace(here, kinds=("verb",), with_arrow=at_arrow,
                       start=len(parts.indent) if at_arrow else here.start)
    found = _find_verb(toks)
    if isinstance(found, _Fail):
        return None
    verb, first = found
    here = replace(here, verb=verb)
    if verb == "think":
        return replace(here, kinds=("text",))
    if verb == "help":
        return replace(here, kinds=("tool",))
    if cur.key is not None:
        if cur.key_end > cur.start and rel <= cur.key_end:  # still typing the option's name
            return Slot(("option",), base + cur.start, base + cur.value_start - len(cur.quote),
                        text[cur.start:rel], verb=verb)
        key = option_key(verb, cur.key)
        if key is None:
            return None
        kind = value_kind(verb, key)
        head = text[cur.start: cur.value_start - len(cur.quote)]
        if kind == "range" and "-" in typed:  # ``summary-of:A-B``: complete B, keep A
            cut = typed.rindex("-") + 1
            head, typed = head + typed[:cut], typed[cut:]
        return replace(here, kinds=_slot_kinds(kind), key=key, head=head, typed=typed)
    if verb == "recall":
        return replace(here, kinds=("stash",), key="label")
    pending = _pending_option(toks, first, verb, bool(cur.quote))
    if pending is not None:
        return replace(here, kinds=_slot_kinds(value_kind(verb, pending)), key=pending)
    if cur.quote and cur.quote != "[":
        kind = _QUOTED.get(verb)
        if verb == "read" and not any(t[2] or t[0] == "doc" for t in toks[first:]):
            kind = "doc"
        return replace(here, kinds=_slot_kinds(kind)) if kind is not None else None
    kinds: list[SlotKind] = []
    if takes_nodes(verb):
        kinds.append("node")
    if flags(verb):
        kinds.append("flag")
    if options(verb):
        kinds.append("option")
    return replace(here, kinds=tuple(kinds)) if kinds else None
