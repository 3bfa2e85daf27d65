"""Step 2 of parsing, the argument scan: the tokens after the verb sorted into node
references, quoted strings, options and flags (``VerbArgs``), filler words dropped, counts read
(``3 continuations``), misspelt option and flag names corrected; and the readers with which
the builders take one node, a number or a choice out of ``VerbArgs``.

``slot_at`` runs the same scan with a probe token to tell whose value is being typed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from loom.commands.canonical import quote
from loom.commands.catalogue import (
    COUNT_NOUNS,
    NUMBER_WORDS,
    TOKEN_NOUNS,
    TOOLS_BY_NAME,
    Option,
    Tool,
)
from loom.commands.grammar.fuzzy import fuzzy
from loom.commands.grammar.lexer import FLOAT, HEAD, INT, REF_TOKEN, SHORT_ID, TAIL, Tok, norm_ref
from loom.commands.grammar.request_keys import as_extra, as_strings
from loom.commands.grammar.results import Fail, VerbArgs, seed_forms, usage, use
from loom.commands.grammar.vocabulary import Spec
from loom.commands.lexicon import takes_nodes


def _next_value(toks: list[Tok], i: int, filler: frozenset[str]) -> int | None:
    """Index of the next plain token (skipping filler), or None if an option comes first."""
    while i < len(toks):
        key, value, quoted, _, _ = toks[i]
        if key == REF_TOKEN:
            return i
        if key is not None:
            return None
        if quoted or value.lower() not in filler:
            return i
        i += 1
    return None


def scan(toks: list[Tok], start: int, spec: Spec, rest: str) -> VerbArgs | Fail:
    """Sort the argument tokens into references, strings, options and flags."""
    tool = spec.tool
    options, flags, filler = tool.option_words, tool.flag_words, spec.filler
    a = VerbArgs(rest=rest)
    unknown: list[str] = []
    i, n = start, len(toks)
    while i < n:
        key, value, quoted, _, _ = toks[i]
        i += 1
        if key == REF_TOKEN:
            a.refs.append(value)
            continue
        if key is not None:
            canon = options.get(key)
            if canon is None:
                ref = norm_ref(key)
                if ref is not None and (quoted or not value):
                    a.refs.append(ref)  # "a7x2: …" — a colon after a reference
                    if quoted:
                        a.strings.append(value)
                    continue
                canon, near, _ = fuzzy(key, options)
                if canon is None and key in ("doc", "document"):
                    return Fail(
                        f"{tool.name} works on nodes; documents are read",
                        hint=f"did you mean → read doc:{quote(value)}?", candidates=("read",),
                    )
                if canon is None:
                    return Fail(
                        f'unknown option "{key}:" for {tool.name}',
                        hint=_options_hint(tool, near), unsure=True,
                    )
            if not value and not quoted:
                j = _next_value(toks, i, filler)
                if j is None:
                    return Fail(f"missing value after {key}:", hint=usage(tool))
                _, value, quoted, _, _ = toks[j]
                i = j + 1
            if canon in a.opts:
                return Fail(f"{canon}: given twice", hint=usage(tool))
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
                    return Fail(f"{name}: given twice", hint=usage(tool))
                a.opts[name] = number
                continue
        ref = norm_ref(lw)
        if ref is not None:
            a.refs.append(ref)
            continue
        unknown.append(value)
    if not flags:
        a.unknown = unknown  # a verb without flags: its builder says what is wrong
        return a
    for word in unknown:
        if SHORT_ID.fullmatch(word.lower()) and takes_nodes(tool.name):
            # a short id is not an unknown option: say what an id needs
            return Fail(f'"{word}" is too short for an id: an id needs at least 3 '
                        "characters", hint=f"use its first 3 or more, e.g. → {tool.name} "
                        "a7x2 (→ tree shows the ids)")
        flag, near, _ = fuzzy(word, flags)
        if flag is None:
            return Fail(
                f'unknown option "{word}" for {tool.name}',
                hint=_options_hint(tool, near), unsure=True,
            )
        a.flags.append(flag)
    return a


def _count(
    toks: list[Tok], i: int, lw: str, filler: frozenset[str]
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
    forms = seed_forms(tool)
    if near:
        return f"did you mean {near[0]}? " + use(*forms)
    return use(*forms)


def limit_refs(a: VerbArgs, spec: Spec, most: int) -> Fail | None:
    """More references than the verb takes: extras may be misspelt flags, else an error."""
    while len(a.refs) > most:
        extra = a.refs[-1]
        flag, _, _ = fuzzy(extra, spec.tool.flag_words)
        if flag is None:
            verb = spec.tool.name
            if most == 0:
                return Fail(f'unexpected "{extra}" for {verb}', hint=usage(spec.tool))
            return Fail(
                f"{verb} takes one node, got {', '.join(a.refs)}",
                hint="one per line: " + "; ".join(f"→ {verb} {r}" for r in a.refs),
            )
        a.refs.pop()
        a.flags.append(flag)
    return None


def one(values: list[str], what: str, spec: Spec) -> str | Fail | None:
    """The one ``what`` among ``values`` (None without one), or an error for several."""
    uniq = list(dict.fromkeys(values))
    if len(uniq) > 1:
        return Fail(f"choose one {what} for {spec.tool.name}: {', '.join(uniq)}",
                    hint=usage(spec.tool))
    return uniq[0] if uniq else None


def as_int(value: str, name: str) -> int | Fail:
    """The option ``name``'s value as a whole number (digits or a number word)."""
    v = value.strip()
    if v in NUMBER_WORDS:
        return NUMBER_WORDS[v]
    if INT.fullmatch(v) and len(v) < 100:
        return int(v)
    return Fail(f'{name} must be a whole number, got "{value}"', hint=f"e.g. {name}:3")


def as_float(value: str, name: str) -> float | Fail:
    """The option ``name``'s value as a finite number."""
    if FLOAT.fullmatch(value.strip()):
        number = float(value)
        if math.isfinite(number):
            return number
    return Fail(f'{name} must be a number, got "{value}"', hint=f"e.g. {name}:0.8")


def as_read(value: str, option: Option) -> object:
    """``value`` read as ``option`` says its values read (a number, or the text)."""
    if option.reads == "int":
        return as_int(value, option.name)
    if option.reads == "float":
        return as_float(value, option.name)
    if option.reads == "stop":
        if not value:
            return Fail(f"{option.name}: needs the text to stop at",
                        hint=f'use {option.name}:"\\n" (quoted; \\n is a line break)')
        return [value]
    if option.reads == "bias":
        return _as_bias(value, option.name)
    if option.reads == "strings":
        return as_strings(value, option.name)
    if option.reads == "extra":
        return as_extra(value, option.name)
    return value


def _as_bias(value: str, name: str) -> dict[str, float] | Fail:
    """``"50256:-100, 13:2.5"`` → ``{"50256": -100.0, "13": 2.5}``."""
    hint = f'use {name}:"50256:-100,13:2.5" (token id:bias, bias from -100 to 100)'
    biases: dict[str, float] = {}
    for pair in (p.strip() for p in value.split(",")):
        token, _, bias = pair.partition(":")
        try:
            number = float(bias)
        except ValueError:
            return Fail(f"{name}: {pair!r} is not token id:bias", hint=hint)
        if not token.strip().isdigit() or not math.isfinite(number):
            return Fail(f"{name}: {pair!r} is not token id:bias", hint=hint)
        if not -100 <= number <= 100:
            return Fail(f"{name}: the bias {bias.strip()} is outside -100 to 100", hint=hint)
        biases[str(int(token))] = number
    return biases


def as_choice(value: str, choices: Mapping[str, str], name: str) -> str | Fail:
    """The option ``name``'s value as one of ``choices`` (fuzzy matched)."""
    got = choices.get(value.lower())
    if got is None:
        got, _, _ = fuzzy(value, choices)
    if got is None:
        listed = "|".join(dict.fromkeys(choices.values()))
        return Fail(f'{name} must be one of {listed}, got "{value}"', hint=f"e.g. {name}:"
                    + next(iter(choices.values())), unsure=True)
    return got


def ref_opt(a: VerbArgs, key: str, spec: Spec) -> str | Fail | None:
    """The option ``key`` as a node reference."""
    value = a.opts.get(key)
    if value is None:
        return None
    ref = norm_ref(value)
    if ref is None:
        return Fail(f'{key}: expects a node id, got "{value}"', hint=usage(spec.tool))
    return ref


def target_node(a: VerbArgs, spec: Spec, key: str = "node", *, most: int = 1) -> str | Fail | None:
    """The single node the verb acts on, from ``key:`` or the bare references."""
    fail = limit_refs(a, spec, most)
    if fail is not None:
        return fail
    opt = ref_opt(a, key, spec)
    if isinstance(opt, Fail):
        return opt
    if opt is not None:
        if a.refs and a.refs[0] != opt:
            return Fail(f"two nodes given: {opt}, {a.refs[0]}", hint=usage(spec.tool))
        return opt
    return a.refs[0] if a.refs else None


def strings_as_refs(a: VerbArgs) -> None:
    """``view "a7x2"``: a quoted node id where the verb takes no text."""
    while a.strings and (ref := norm_ref(a.strings[0])) is not None:
        a.refs.append(ref)
        a.strings.pop(0)


def unquoted_hint(a: VerbArgs, verb: str, node: str) -> str:
    """The hint for content typed without quotes: the same line with them."""
    words = a.rest.split()
    for k, word in enumerate(words):
        if norm_ref(word.rstrip(TAIL).lstrip(HEAD).rstrip(":")) == node:
            words = words[k + 1:]
            break
    text = " ".join(words).strip(" \"'")
    if text:
        return f"put the content in quotes: → {verb} {node} {quote(text)}"
    return use(TOOLS_BY_NAME[verb].forms[0])
