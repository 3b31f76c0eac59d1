"""Deterministic detection of an explicit first-person forget request (spec §4.2,
with its known misses fixed). Kept apart from forget.py so the store can record
each memory's request, if any, when it parses the file."""
from __future__ import annotations

import re

# Palinode's request forms, each followed by the object. Differences from 0.23:
# a word boundary before the marker word ("Wiki want you to forget" no longer
# fires) and the curly apostrophe in "I’d".
_REQUEST_RE = re.compile(
    r"""(?:
        \b(?:please|kindly)\s+forget
      | \b(?:can|could|would)\s+you\s+(?:please\s+)?forget
      | \bi(?:['\u2019]d|\s+would)?\s+(?:like|want|need)\s+you\s+to\s+forget
      | ^\s*forget
    )\s+(?P<obj>[^\n]+)""",
    re.IGNORECASE | re.VERBOSE | re.MULTILINE,
)
_QUOTES = "\"'\u201c\u201d\u2018\u2019"
# "everything / all (stored) details about my …" is a lead, like "the details about".
_LEAD = (r"(?:that\s+)?(?:the\s+)?"
         r"(?:(?:everything|all)\s+(?:(?:stored|saved|you\s+know|you\s+have)\s+)?(?:(?:the\s+)?"
         r"(?:details?|info(?:rmation)?|notes?|memories)\s+)?(?:(?:about|of|on|regarding)\s+)?)?"
         r"(?:details?\s+(?:about|of)\s+)?(?:about\s+)?")
_FIRST_PERSON_RE = re.compile(rf"^{_LEAD}(?:my|me|i)\b", re.IGNORECASE)
_LEAD_RE = re.compile(rf"^{_LEAD}", re.IGNORECASE)
_TAIL_RE = re.compile(r"\s*(?:from\s+(?:your|the)\s+memory)?\s*[.!?]*\s*$", re.IGNORECASE)
# A conversational correction is about the conversation, not a stored memory.
_CORRECTION_RE = re.compile(
    r"^(?:about\s+)?(?:(?:my|the|that)\s+)?(?:last|previous|earlier|prior|above|other)\s+"
    r"(?:message|msg|reply|question|comment|sentence|text|answer|request|prompt|email|note|typo)s?\b"
    r"|^(?:my|the|that)\s+(?:typo|mistake|misspelling)s?\b"
    r"|^(?:what\s+)?i\s+(?:just\s+)?(?:said|asked|wrote|typed|meant|mentioned\s+(?:earlier|before|above))\b"
    r"|^(?:about\s+)?(?:it|this|that)\s*(?:$|[,.!?;])",
    re.IGNORECASE,
)


def detect_forget_request(text: str) -> str | None:
    """The preference a first-person forget request names, or None."""
    if not text or "forget" not in text.lower():
        return None
    for match in _REQUEST_RE.finditer(text):
        obj = match.group("obj").strip().lstrip(_QUOTES).strip()
        if not _FIRST_PERSON_RE.match(obj) or _CORRECTION_RE.match(obj):
            continue
        pref = re.split(r"(?<=[.!?])\s", obj, maxsplit=1)[0]
        if re.search(r",\s*i\s+meant\b", pref, re.IGNORECASE):
            continue  # "forget my message, I meant Tuesday"
        pref = _LEAD_RE.sub("", pref, count=1)
        pref = _TAIL_RE.sub("", pref).strip().strip(_QUOTES).strip()
        if pref:
            return pref
    return None


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
    r"^(?:that\s+)?(?:the\s+)?(?:details?\s+(?:about|of)\s+)?(?:about\s+)?(?:my|me|i)\b", re.IGNORECASE)
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
        obj = _TAIL_RE.sub("", obj)
        obj = obj.strip().strip(_QUOTES)
        if obj:
            return obj
    return None
