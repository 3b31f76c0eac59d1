"""Where a sentence ends in request text: terminal punctuation that is not an
abbreviation's dot (Dr., St., U.S., e.g., a.m., weekdays, initialisms)."""

from __future__ import annotations

import re

from .request_lines import _HEAD

_TERM_RE = re.compile(r"[.!?](?![.!?])(?=[\"'”’)\]*_]{0,3}(?:\s|$))")
_TOKEN_BEFORE_RE = re.compile(r"[A-Za-z.]{1,12}$")
_ABBREV = frozenset(
    [
        "dr",
        "mr",
        "mrs",
        "ms",
        "mx",
        "prof",
        "st",
        "jr",
        "sr",
        "mt",
        "rd",
        "ave",
        "blvd",
        "ln",
        "vs",
        "etc",
        "e.g",
        "i.e",
        "eg",
        "ie",
        "a.m",
        "p.m",
        "ph.d",
        "u.s",
        "u.k",
        "no",
        "inc",
        "ltd",
        "co",
        "corp",
        "approx",
        "dept",
        "fig",
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
        "est",
        "gov",
        "univ",
        "hon",
        "rev",
        "gen",
        "capt",
        "col",
        "sgt",
        "lt",
        "mon",
        "tue",
        "tues",
        "wed",
        "thu",
        "thur",
        "thurs",
        "fri",
        "sat",
        "sun",
    ]
)
_NEVER_ENDS = frozenset(
    ["e.g", "i.e", "eg", "ie", "dr", "mr", "mrs", "ms", "mx", "prof", "rev", "hon", "capt", "col", "sgt", "lt", "gen"]
)
_STARTERS = frozenset(
    [
        "thanks",
        "thank",
        "please",
        "also",
        "and",
        "but",
        "so",
        "i",
        "i'm",
        "it",
        "it's",
        "the",
        "that",
        "this",
        "we",
        "you",
        "my",
        "cheers",
        "ok",
        "okay",
        "oh",
        "then",
        "now",
        "can",
        "could",
        "would",
        "will",
        "do",
        "don't",
        "remember",
        "also",
        "anyway",
        "sorry",
    ]
)
_INITIALISM_RE = re.compile(r"(?:[a-z]{1,2}\.)+[a-z]{1,2}")


def _is_end(s: str, m: re.Match) -> bool:
    """Whether terminator ``m`` ends a sentence (an abbreviation's dot mostly does not)."""
    if m.group() != "." or (m.start() and s[m.start() - 1] in ".!?"):
        return True
    tok = _TOKEN_BEFORE_RE.search(s, max(0, m.start() - 12), m.start())
    word = tok.group().lstrip(".").lower() if tok else ""
    if not word or not (
        word in _ABBREV
        or (len(word) == 1 and word.isalpha() and word != "i" and s[m.start() - 1].isupper())
        or _INITIALISM_RE.fullmatch(word)
    ):
        return True
    if word in _NEVER_ENDS:
        return False
    nxt = s[m.end() : m.end() + 24].split(None, 1)
    word = nxt[0].strip("\"'”’*_,") if nxt else ""
    return not word or (word[0].isupper() and word.lower() in _STARTERS)


def _sentence(s: str, pos: int) -> tuple[int, int]:
    """Bounds of the sentence of ``s`` that holds index ``pos``."""
    start = max(0, pos - _HEAD)  # a frame and its reporting verb sit close to "forget"
    for m in reversed(list(_TERM_RE.finditer(s, start, pos))):
        if _is_end(s, m):
            start = m.end()
            break
    for m in _TERM_RE.finditer(s, pos):
        if _is_end(s, m):
            end = m.start()
            while end > pos and s[end - 1] in ".!?":
                end -= 1  # the run's first character (bounded: s is a window)
            return start, end
    return start, len(s)


# --- the frame before "forget" -------------------------------------------------------
