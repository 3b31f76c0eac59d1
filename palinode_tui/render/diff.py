"""The one diff colourer: git's output and our own before/after previews are
coloured by the same rule."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from rich.text import Text

from .text import plain


def _style(line: str) -> str:
    if line.startswith("+"):
        return "green"
    if line.startswith("-"):
        return "red"
    if line.startswith("@@"):
        return "cyan"
    return "dim"


def colour_diff(lines: Iterable[str]) -> Text:
    """Unified-diff lines (with or without their newlines) as coloured text."""
    text = Text()
    for line in lines:
        line = line.rstrip("\n")
        text.append_text(plain(line, _style(line)))
        text.append("\n")
    return text


def unified_diff(old: str, new: str, name: str) -> Text:
    return colour_diff(
        difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), fromfile=f"a/{name}", tofile=f"b/{name}", n=2
        )
    )
