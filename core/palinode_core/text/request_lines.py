"""Logical lines for request detection: a line's shape (quote, list, speaker
label, fence), and hard-wrapped lines and block quotes joined back into one
line, each in time linear in the text (see detect.py)."""

from __future__ import annotations

import re

# Bounded windows: a frame is a few words before "forget"; a preference is a phrase.
_BEFORE, _AFTER, _HEAD = 200, 400, 120

_QUOTE_MARK_RE = re.compile(r"[ \t]{0,3}(?:>[ \t]?)+")
_LIST_RE = re.compile(r"[ \t]{0,8}(?:[-*+]|\d{1,3}[.)])[ \t]+(?:\[[ xX]\][ \t]+)?")
_STAMP_RE = re.compile(
    r"[ \t]{0,4}(?:\[[^\]\n]{1,24}\][ \t]{0,4})?"
    r"(?:\d{1,2}:\d{2}(?::\d{2})?(?:[ \t]?[aApP][mM])?[ \t]{1,4}(?:[-–][ \t]{1,4})?)?"
)
_SPEAKER_RE = re.compile(
    r"(?:\*\*|__)?(?P<name>[A-Za-z][\w'-]{0,24}(?: [A-Z][\w'-]{0,24})?)"
    r"(?:\*\*|__)?[ \t]{0,2}:(?:\*\*|__)?[ \t]{1,8}"
)
_ASSISTANTS = frozenset(
    ["assistant", "ai", "bot", "system", "claude", "chatgpt", "gpt", "copilot", "gemini", "model", "agent", "palinode"]
)
# Labels of a note, not speakers: what follows them is the note's text.
_NOT_SPEAKERS = frozenset(
    [
        "todo",
        "note",
        "notes",
        "reminder",
        "goal",
        "goals",
        "tip",
        "idea",
        "task",
        "summary",
        "context",
        "example",
        "q",
        "a",
        "question",
        "answer",
        "fact",
        "preference",
        "update",
        "warning",
        "nb",
        "ps",
        "lyrics",
        "title",
        "quote",
    ]
)
_ENDS_UNIT = tuple(".!?:;")
_CONTINUES = frozenset(
    [
        "i",
        "a",
        "an",
        "the",
        "my",
        "me",
        "to",
        "of",
        "in",
        "on",
        "at",
        "for",
        "about",
        "and",
        "or",
        "but",
        "with",
        "from",
        "where",
        "what",
        "who",
        "when",
        "by",
        "is",
        "was",
        "am",
        "are",
        "be",
        "been",
        "have",
        "has",
        "had",
        "that",
        "this",
        "your",
        "our",
        "his",
        "her",
        "their",
        "as",
        "into",
        "than",
        "if",
        "because",
        "while",
        "so",
        "very",
        "not",
        "no",
    ]
)


Shape = tuple[str, str, bool, bool]


def _line_shape(line: str) -> Shape:
    """(kind, content, starts a unit, quoted); kind: text, blank, heading, table, assistant."""
    stripped = line.strip()
    if not stripped:
        return "blank", "", True, False
    if stripped[0] == "#" and stripped.lstrip("#")[:1] in (" ", "\t", ""):
        return "heading", "", True, False
    if stripped[0] == "|":
        return "table", "", True, False
    content, unit, quoted = line, False, False
    m = _QUOTE_MARK_RE.match(content)
    if m and m.end():
        content, quoted = content[m.end() :], True
    for rx in (_LIST_RE, _STAMP_RE):
        m = rx.match(content)
        if m and m.group().strip():
            content, unit = content[m.end() :], True
    m = _SPEAKER_RE.match(content)
    if m and m.group("name").lower() not in _NOT_SPEAKERS:
        if m.group("name").lower() in _ASSISTANTS:
            return "assistant", "", True, quoted
        content, unit = content[m.end() :], True
    return "text", content.strip(), unit, quoted


def _joins(prev: str, prev_quoted: bool, shape: Shape) -> bool:
    """Whether a hard-wrapped ``prev`` line continues onto the line of ``shape``."""
    kind, content, unit, quoted = shape
    if kind != "text" or unit or quoted != prev_quoted or not prev or not content:
        return False
    end = prev.rstrip("*_\"'”’)")
    if not end or end.endswith(_ENDS_UNIT):
        return False
    if content[0].islower() or content[0].isdigit():
        return True
    last = end.rsplit(None, 1)[-1].lower()
    return last in _CONTINUES


def _logical_line(text: str, s: int, e: int) -> tuple[str, int, int] | None:
    """The forget token's hard-wrapped line joined into one, the token's index in it
    and where the token's own line starts in it; None when the token sits in a
    heading, table, assistant turn, block quote or code."""
    lo, hi = max(0, s - _BEFORE), min(len(text), e + _AFTER)
    ls = text.rfind("\n", lo, s) + 1 or lo
    le = text.find("\n", e, hi)
    le = hi if le == -1 else le
    line = text[ls:le]
    whole_start = (ls > 0 and text[ls - 1] == "\n") or ls == 0
    if whole_start:
        prev_end = ls - 1
        p_lo = max(0, prev_end - _BEFORE)
        prev = text[(text.rfind("\n", p_lo, prev_end) + 1 or p_lo) : prev_end] if prev_end > 0 else ""
        indent = len(line) - len(line.lstrip(" \t"))
        if (indent >= 4 or line[:1] == "\t") and not prev.strip():
            return None  # an indented code block
        shape = _line_shape(line)
        kind, content = shape[:2]
        if kind != "text" or shape[3]:
            return None  # a block quote quotes someone else's text (issue 22)
        # Where the content starts: the line's prefix is structure, not text.
        offset = len(line.rstrip()) - len(content) if content else len(line)
    else:
        content, offset, shape = line, 0, ("text", line, True, False)
    parts, pos = [content], (s - ls) - offset
    # Earlier lines of the same wrapped paragraph.
    first, start, budget = shape, ls, _BEFORE
    while whole_start and not first[2] and start > 0 and budget > 0:
        p_end = start - 1
        p_start = text.rfind("\n", max(0, p_end - budget), p_end) + 1
        if p_start == 0 and p_end - budget > 0:
            break
        p_line = text[p_start:p_end]
        p_shape = _line_shape(p_line)
        if p_shape[0] != "text" or not _joins(p_shape[1], p_shape[3], (*first[:2], False, first[3])):
            break
        parts.insert(0, p_shape[1])
        pos += len(p_shape[1]) + 1
        first, start, budget = p_shape, p_start, budget - len(p_line) - 1
    # Later lines.
    end, budget = le, _AFTER - (le - e)
    while end < len(text) and budget > 0 and text[end] == "\n":
        n_end = text.find("\n", end + 1, end + 1 + budget)
        n_end = min(len(text), end + 1 + budget) if n_end == -1 else n_end
        n_shape = _line_shape(text[end + 1 : n_end])
        if not _joins(parts[-1], shape[3], n_shape):
            break
        parts.append(n_shape[1])
        budget -= n_end - end
        end = n_end
    return " ".join(parts), pos, pos - ((s - ls) - offset)


# --- sentences --------------------------------------------------------------------
# The last character of a terminator run: a pattern that starts with a character set
# lets the engine skip ahead, and no run is rescanned from each of its dots.
