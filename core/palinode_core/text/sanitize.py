"""Memory text is data. Before it reaches a terminal, every character that
could act (C0/C1 controls including ESC and CSI, DEL, bidi overrides,
zero-width characters, the Unicode line and paragraph separators) is shown
as a visible escape instead."""

from __future__ import annotations

import json
import re
from typing import Any

# a lone surrogate too: it cannot be written to a terminal, and would fail the whole write
_UNSAFE_RE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffb\ud800-\udfff]"
)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every acting character made visible (newlines and tabs kept)."""
    return _UNSAFE_RE.sub(_escape, text)


def has_unsafe(text: str) -> bool:
    return bool(_UNSAFE_RE.search(text))


def safe_json(data: Any) -> str:
    """JSON whose text is terminal-safe: controls, C1 and bidi characters are
    written as ``\\uXXXX`` escapes, which any JSON reader turns back into data."""
    text = json.dumps(data, indent=2, ensure_ascii=False, default=str)
    return _UNSAFE_RE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
