"""A small deterministic stemmer: enough to match "collect / collecting /
collector / collection" and plurals against one another, never a dictionary.
Both sides of every comparison go through it, so a stem need not be a word."""

from __future__ import annotations

import re
from functools import lru_cache

from .words import STOPWORDS

_WORD_RE = re.compile(r"[A-Za-z]+")
# Words that carry no preference of their own (beyond Palinode's stopwords).
EXTRA_STOP = frozenset(
    [
        "also",
        "really",
        "very",
        "much",
        "some",
        "any",
        "every",
        "each",
        "just",
        "still",
        "always",
        "often",
        "usually",
        "never",
        "mostly",
        "most",
        "more",
        "will",
        "would",
        "could",
        "should",
        "can",
        "may",
        "might",
        "must",
        "shall",
        "not",
        "no",
        "yes",
        "than",
        "then",
        "there",
        "here",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "why",
        "how",
        "all",
        "both",
        "few",
        "other",
        "such",
        "only",
        "own",
        "same",
        "too",
        "into",
        "over",
        "under",
        "after",
        "before",
        "again",
        "once",
        "during",
        "while",
        "because",
        "until",
        "against",
        "between",
        "through",
        "above",
        "below",
        "off",
        "out",
        "up",
        "down",
        "like",
        "likes",
        "liked",
        "love",
        "loves",
        "loved",
        "enjoy",
        "enjoys",
        "enjoyed",
        "prefer",
        "prefers",
        "preferred",
        "fact",
        "said",
        "say",
        "thing",
        "things",
        "stuff",
        "habit",
        "habits",
        "lot",
        "lots",
        "one",
        "two",
        "new",
        "old",
        "get",
        "gets",
        "got",
        "make",
        "makes",
        "made",
        "day",
        "days",
        "week",
        "weeks",
        "time",
        "times",
        "year",
        "years",
        "being",
        "having",
        "doing",
        "him",
        "her",
        "his",
        "hers",
        "them",
        "we",
        "us",
        "ours",
        "mine",
        "user",
        "assistant",
        "remember",
        "know",
    ]
)
_SUFFIXES = (
    ("ations", ""),
    ("ation", ""),
    ("ions", ""),
    ("ion", ""),
    ("ings", ""),
    ("ing", ""),
    ("ers", ""),
    ("ors", ""),
    ("er", ""),
    ("or", ""),
    ("ies", "y"),
    ("ied", "y"),
    ("ses", "s"),
    ("xes", "x"),
    ("ches", "ch"),
    ("shes", "sh"),
    ("ed", ""),
    ("es", "e"),
    ("s", ""),
)
_VOWELS = set("aeiouy")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    w = word.lower()
    if len(w) <= 3 or w.endswith(("ss", "us", "is")):
        return w
    for suffix, repl in _SUFFIXES:
        if not w.endswith(suffix):
            continue
        base = w[: len(w) - len(suffix)] + repl
        # agentive/verbal endings only when a real stem with a vowel is left
        if len(base) < (4 if suffix in ("er", "or", "ers", "ors") else 3) or not _VOWELS & set(base):
            continue
        w = base
        break
    if len(w) >= 4 and w[-1] == w[-2] and w[-1] not in "lsz":
        w = w[:-1]  # swimm -> swim, runn -> run
    if len(w) >= 4 and w.endswith("e"):
        w = w[:-1]  # bake/baking -> bak
    return w


def stems(text: str) -> set[str]:
    """The content stems of ``text``: words longer than 2 letters, neither
    Palinode's stopwords nor filler, stemmed."""
    return {
        stem(w)
        for w in map(str.lower, _WORD_RE.findall(text))
        if len(w) > 2 and w not in STOPWORDS and w not in EXTRA_STOP
    }


def counted_stems(text: str) -> set[str]:
    """The stems lexical evidence counts (forget/evidence.py): of every word
    longer than 2 letters, filler included ("time" stems as "timing" does)."""
    return {stem(w) for w in map(str.lower, _WORD_RE.findall(text)) if len(w) > 2}  # map: 5.9M words at 10k


def stem_tokens(text: str) -> list[tuple[str, str, int]]:
    """(word as written, its stem, offset) for every letter run in ``text``."""
    return [(m.group(), stem(m.group()), m.start()) for m in _WORD_RE.finditer(text)]
