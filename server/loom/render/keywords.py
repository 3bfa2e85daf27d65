"""Offline keyphrase extraction: the ``Main themes:`` of ``→ tree summary`` when no model
has summarized the tree.

A small RAKE-style extractor: a text is cut into candidate phrases at punctuation and
stopwords, each word is scored by how often it occurs, and a phrase by how often it
occurs and how frequent its words are, with a mild preference for two-word phrases
(``childhood trauma`` says more than ``childhood``). The chosen phrases share no word, so
three themes are three different things. Character names (words only ever written with a
capital inside a sentence) are people, not themes, and are left out. Deterministic: equal
scores keep the order of first appearance. No model, no network, no data files.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

MAX_PHRASE_WORDS = 3
MIN_WORD_CHARS = 3

STOPWORDS = frozenset("""
a about above across after afterwards again against all almost alone along already also
although always am among amongst an and another any anyhow anyone anything anyway anywhere
are around as at back be became because become becomes becoming been before beforehand
behind being below beside besides between beyond both but by can cannot could did do does
doing done down during each either else elsewhere enough even ever every everyone
everything everywhere except few first for former formerly from further get gets getting
give given go goes going gone got had has have having he hence her here hereafter hereby
herein hers herself him himself his how however i if in indeed into is it its itself just
keep kept last latter least less let like made make makes many may me meanwhile might mine
more moreover most mostly much must my myself namely neither never nevertheless next no
nobody none noone nor not nothing now nowhere of off often on once one only onto or other
others otherwise our ours ourselves out over own per perhaps please put quite rather re
really said same say says see seem seemed seeming seems several she should since so some
somehow someone something sometime sometimes somewhere still such take taken than that the
their theirs them themselves then thence there thereafter thereby therefore therein these
they thing things this those though through throughout thus to together too toward towards
two under until up upon us very via was way we well were what whatever when whence
whenever where whereafter whereas whereby wherein whereupon wherever whether which while
whither who whoever whole whom whose why will with within without would yet you your yours
yourself yourselves ago also already asked back came come comes coming could didn doesn
don felt found gave isn know knew looked looks maybe shall shan took told tell wasn
weren won wouldn couldn shouldn hadn hasn haven ll ve re let's that's it's what's
there's here's ok okay yes oh ah um actually also instead
""".split())

_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*[A-Za-z]|[A-Za-z]")
# Phrase breaks: sentence and clause punctuation, quotes, dashes, brackets, line breaks.
_BREAK = re.compile(r"[.,;:!?…\"“”‘()\[\]{}<>/|—–\n]+|\s[-']\s|'\s|\s'")
_SENTENCE_START = re.compile(r"(?:^|[.!?…]\s+|\n\s*)[\"“‘'(]*$")
_MARKUP = re.compile(r"[#*_`~>]+|︱|›")


# Common verbs and vague words: rarely what a text is about.
WEAK = frozenset("""
stood went saw thought began seemed turned walked watched stopped started tried wanted
needed felt heard held left leave leaving brought moved opened closed reached pulled
pushed called asked answered nodded smiled looked sat stand walk watch turn look want
need try feel hear hold open close reach pull push call answer nod smile sit begin
start stop become seem think thinking going lot kind sort part bit
zero three four five six seven eight nine ten eleven twelve twenty thirty forty fifty
hundred thousand past minutes minute hours hour seconds second time times day days
""".split())
_CONTRACTION = re.compile(r"(?:n't|'d|'ll|'re|'ve|'m)$")


def _normal(word: str) -> str:
    w = word.lower().replace("’", "'")
    if w.endswith("'s"):
        w = w[:-2]
    return w.strip("'-")


def _weight(word: str) -> float:
    """Past-tense and adverb forms say less about a text's subject than nouns do."""
    if word in WEAK:
        return 0.3
    if word.endswith(("ed", "ly")) and len(word) > 4:
        return 0.5
    return 1.0


def _names(texts: Iterable[str]) -> set[str]:
    """Words that only ever appear capitalized, at least once inside a sentence."""
    capital_inside: set[str] = set()
    lower: set[str] = set()
    for text in texts:
        for m in _WORD.finditer(text):
            word = m.group(0)
            key = _normal(word)
            if word[0].islower():
                lower.add(key)
            elif not _SENTENCE_START.search(text[max(0, m.start() - 4):m.start()]) and \
                    not word.isupper():
                capital_inside.add(key)
    return capital_inside - lower


_Phrase = tuple[tuple[str, ...], str]  # (normalized words, the words as first written)


def _phrases(text: str, skip: set[str]) -> list[_Phrase]:
    """Candidate phrases of ``text``: runs of content words between breaks and stopwords,
    long runs cut into word pairs."""
    out: list[_Phrase] = []
    for chunk in _BREAK.split(_MARKUP.sub(" ", text)):
        run: list[tuple[str, str]] = []
        for m in _WORD.finditer(chunk):
            surface = m.group(0).lower().replace("’", "'")
            w = _normal(surface)
            if (w in STOPWORDS or w in skip or len(w) < MIN_WORD_CHARS
                    or _CONTRACTION.search(surface)):
                out += _windows(run)
                run = []
            else:
                run.append((w, surface))
        out += _windows(run)
    return out


def _windows(run: list[tuple[str, str]]) -> list[_Phrase]:
    if not run:
        return []
    size = len(run) if len(run) <= MAX_PHRASE_WORDS else 2
    return [(tuple(w for w, _ in run[i:i + size]), " ".join(s for _, s in run[i:i + size]))
            for i in range(len(run) - size + 1)]


def themes(texts: Iterable[str], k: int = 3) -> list[str]:
    """Up to ``k`` key phrases of ``texts`` (lowercase), most characteristic first."""
    texts = [t for t in texts if t and t.strip()]
    if not texts:
        return []
    skip = _names(texts)
    found: list[_Phrase] = []
    for text in texts:
        found += _phrases(text, skip)
    word_freq: Counter[str] = Counter()
    phrase_freq: Counter[tuple[str, ...]] = Counter()
    first: dict[tuple[str, ...], int] = {}
    shown: dict[tuple[str, ...], str] = {}
    for i, (words, surface) in enumerate(found):
        shapes = surface.split()
        for w in words:
            word_freq[w] += 1
        # a phrase also counts where it occurs inside a longer one
        for size in range(1, len(words) + 1):
            for j in range(len(words) - size + 1):
                sub = words[j:j + size]
                phrase_freq[sub] += 1
                first.setdefault(sub, i)
                shown.setdefault(sub, " ".join(shapes[j:j + size]))

    def score(p: tuple[str, ...]) -> float:
        mean = sum(word_freq[w] * _weight(w) for w in p) / len(p)
        shape = {1: 1.0, 2: 2.0, 3: 1.5}[len(p)]
        return phrase_freq[p] * mean * shape

    ranked = sorted(first, key=lambda p: (-score(p), first[p]))
    chosen: list[tuple[str, ...]] = []
    used: set[str] = set()
    for p in ranked:
        if used.intersection(p):
            continue
        chosen.append(p)
        used.update(p)
        if len(chosen) == k:
            break
    return [shown[p] for p in chosen]
