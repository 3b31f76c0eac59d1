"""Palinode 0.23's own forget-request detector, replayed exactly (MIT): what it
would extract where ours declines, so a request it applied stays auditable."""

from __future__ import annotations

import re

_QUOTES = "\"'\u201c\u201d\u2018\u2019"

# Palinode 0.23's own detector (consolidation/forget.py, MIT): what it applied, even
# where ours declines (a correction, "Wiki want you to forget …"). Used only to list
# requests Palinode already applied, never to apply one. Its results exactly, in
# linear time: its `^\s*forget` (MULTILINE) rescanned a run of blank lines from every
# line start (quadratic), and its tail strip was cubic in a run of spaces (a
# 621-byte memory took 129 s); both are rewritten below to match the same strings.
_PAL_REQUEST_RE = re.compile(
    r"""(?:
        (?:please|kindly)\s+forget
      | (?:can|could|would)\s+you\s+(?:please\s+)?forget
      | i(?:'d|\s+would)?\s+(?:like|want|need)\s+you\s+to\s+forget
      | ^[^\S\n]*forget
    )\s+(?P<obj>[^\n]+)""",
    re.IGNORECASE | re.VERBOSE | re.MULTILINE,
)
_PAL_FIRST_PERSON_RE = re.compile(
    r"^(?:that\s+)?(?:the\s+)?(?:details?\s+(?:about|of)\s+)?(?:about\s+)?(?:my|me|i)\b", re.IGNORECASE
)
# Palinode's tail strip was re.sub(r"\s*(?:from\s+(?:your|the)\s+memory)?\s*[.!?]*\s*$", "", obj,
# flags=re.I): it removes the longest suffix of that shape, found here from the right.
_PAL_FROM_MEMORY_RE = re.compile(r"from\s+(?:your|the)\s+memory\Z", re.IGNORECASE)
_PAL_FROM_RE = re.compile("from", re.IGNORECASE)
_PAL_MEMORY_END_RE = re.compile(r"memory\Z", re.IGNORECASE)
_PAL_LEAD_RE = re.compile(r"^(?:that\s+)?(?:the\s+)?(?:details?\s+(?:about|of)\s+)?(?:about\s+)?", re.IGNORECASE)


def detect_palinode_request(text: str) -> str | None:
    """The preference Palinode 0.23 would extract from ``text``, or None."""
    if not text or "forget" not in text.lower():
        return None
    for match in _PAL_REQUEST_RE.finditer(text):
        obj = match.group("obj").strip()
        if not _PAL_FIRST_PERSON_RE.match(obj):
            continue
        obj = re.split(r"(?<=[.!?])\s", obj, maxsplit=1)[0]
        obj = _PAL_LEAD_RE.sub("", obj)
        obj = _strip_tail(obj)
        obj = obj.strip().strip(_QUOTES)
        if obj:
            return obj
    return None


def _strip_tail(obj: str) -> str:
    """``obj`` without its longest suffix of whitespace, an optional "from
    your/the memory", whitespace, ``.!?`` and whitespace, in that order."""
    end = len(obj)
    while end and obj[end - 1].isspace():
        end -= 1
    while end and obj[end - 1] in ".!?":
        end -= 1
    while end and obj[end - 1].isspace():
        end -= 1
    if _PAL_MEMORY_END_RE.match(obj, max(0, end - 6), end):
        # at most one "from" starts the phrase that ends here; each try stops at the next word
        for word in _PAL_FROM_RE.finditer(obj, 0, end):
            if _PAL_FROM_MEMORY_RE.match(obj, word.start(), end):
                end = word.start()
                while end and obj[end - 1].isspace():
                    end -= 1
                break
    return obj[:end]
