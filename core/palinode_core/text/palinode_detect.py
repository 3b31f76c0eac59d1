"""Palinode 0.23's own forget-request detector, replayed exactly (MIT): what it
would extract where ours declines, so a request it applied stays auditable."""

from __future__ import annotations

import re

_QUOTES = "\"'\u201c\u201d\u2018\u2019"

# Palinode 0.23's own detector, verbatim (consolidation/forget.py, MIT): what it
# applied, even where ours declines (a correction, "Wiki want you to forget …").
# Used only to list requests Palinode already applied, never to apply one.
_PAL_REQUEST_RE = re.compile(
    r"""(?:
        (?:please|kindly)\s+forget
      | (?:can|could|would)\s+you\s+(?:please\s+)?forget
      | i(?:'d|\s+would)?\s+(?:like|want|need)\s+you\s+to\s+forget
      | ^\s*forget
    )\s+(?P<obj>[^\n]+)""",
    re.IGNORECASE | re.VERBOSE | re.MULTILINE,
)
_PAL_FIRST_PERSON_RE = re.compile(
    r"^(?:that\s+)?(?:the\s+)?(?:details?\s+(?:about|of)\s+)?(?:about\s+)?(?:my|me|i)\b", re.IGNORECASE
)
# Palinode's own tail strip (its regex, kept apart from ours so replay stays exact)
_PAL_TAIL_RE = re.compile(r"\s*(?:from\s+(?:your|the)\s+memory)?\s*[.!?]*\s*$", re.IGNORECASE)
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
        obj = _PAL_TAIL_RE.sub("", obj)
        obj = obj.strip().strip(_QUOTES)
        if obj:
            return obj
    return None
