"""The one choke point between store text and the terminal. Every string
that came from the store (file names, frontmatter, prefs, commit subjects,
authors, ledger notes) reaches the screen through ``safe`` or ``plain``: it is
never parsed as markup, and acting characters (ESC, CSI, OSC, C1, bidi
overrides, zero-width) are shown as visible escapes."""

from __future__ import annotations

import re
from typing import Literal

from rich.text import Text

from palinode_core.api import Memory, printable, struck_spans

MemoryStatus = Literal["active", "archived", "struck", "history", "unparseable"]

STATUS_STYLE: dict[str, str] = {
    "active": "green",
    "archived": "yellow",
    "struck": "magenta",
    "history": "blue",
    "unparseable": "red",
}


def safe(value: object) -> str:
    """Any value as a terminal-safe string (for toasts, titles, input values)."""
    return printable("" if value is None else str(value))


# A command the core quotes for a terminal (`palinode-audit recover --complete`), shown as words in a toast
_QUOTED_COMMAND = re.compile(r"`((?:palinode-audit|palinode-tui|git|pip|pipx|make)\b[^`\n]{0,200})`")


def spoken(message: str) -> str:
    """A message for a toast or a dialog: the core's quoted commands without their Markdown backticks
    (any other backtick, a file name's say, is kept as it is)."""
    return _QUOTED_COMMAND.sub(r"\1", message)


def plain(value: object, style: str = "") -> Text:
    """Any value as literal text: ``[bold]`` stays ``[bold]``."""
    return Text(safe(value), style=style)


def body_text(body: str) -> Text:
    """A memory body with Palinode's struck spans as real strikethrough and
    their ``[RETRACTED date r:id]`` marker dimmed."""
    out = Text()
    cursor = 0
    for span in struck_spans(body):
        _append_lines(out, body[cursor : span.start])
        out.append(printable(span.text), style="strike")
        out.append(printable(body[span.start + 2 + len(span.text) : span.end]).replace("~~", "", 1), style="dim")
        cursor = span.end
    _append_lines(out, body[cursor:])
    return out


def _append_lines(out: Text, chunk: str) -> None:
    for line in chunk.splitlines(keepends=True):
        stripped = line.lstrip()
        style = "bold" if stripped.startswith("#") else ""
        out.append(printable(line), style=style)


def memory_status(memory: Memory) -> MemoryStatus:
    if memory.is_history:
        return "history"
    if memory.archived:
        return "archived"
    if memory.struck:
        return "struck"
    return "active"
