"""Turning core values into Rich ``Text``. Memory text is data: it is never
parsed as markup, and acting characters (ESC, CSI, OSC, bidi overrides) are
shown as visible escapes before anything reaches the screen."""
from __future__ import annotations

from rich.text import Text

from palinode_core.storage.memory import Memory
from palinode_core.text.markdown import struck_spans
from palinode_core.text.sanitize import printable

STATUS_STYLE = {"active": "green", "archived": "yellow", "struck": "magenta", "history": "blue",
                "unparseable": "red"}
ROUTE_STYLE = {"archive": "bold yellow", "strike": "bold magenta", "unforgotten": "bold red",
               "skipped": "dim", "not_taken": "dim italic"}
STATE_STYLE = {"pending": "bold cyan", "applied": "green", "partial": "yellow", "withdrawn": "dim",
               "dismissed": "dim italic"}


def plain(value: object, style: str = "") -> Text:
    """Any value as literal text: ``[bold]`` stays ``[bold]``."""
    return Text(printable("" if value is None else str(value)), style=style)


def body_text(body: str) -> Text:
    """A memory body with Palinode's struck spans as real strikethrough and
    their ``[RETRACTED date r:id]`` marker dimmed."""
    out = Text()
    cursor = 0
    for span in struck_spans(body):
        _append_lines(out, body[cursor:span.start])
        out.append(printable(span.text), style="strike")
        out.append(printable(body[span.start + 2 + len(span.text):span.end]).replace("~~", "", 1), style="dim")
        cursor = span.end
    _append_lines(out, body[cursor:])
    return out


def _append_lines(out: Text, chunk: str) -> None:
    for line in chunk.splitlines(keepends=True):
        stripped = line.lstrip()
        style = "bold" if stripped.startswith("#") else ""
        out.append(printable(line), style=style)


def coverage_gauge(coverage: float | None, floor: float, width: int = 10) -> Text:
    """A small bar with the floor marked: filled past the floor means archive."""
    if coverage is None:
        return Text("—", style="dim")
    filled = min(width, round(coverage * width))
    mark = min(width - 1, max(0, round(floor * width)))
    bar = Text()
    for i in range(width):
        char = "█" if i < filled else "░"
        style = ("yellow" if coverage >= floor else "magenta") if i < filled else "dim"
        if i == mark:
            style += " underline"
        bar.append(char, style=style)
    bar.append(f" {coverage:.4f}", style="bold" if coverage >= floor else "")
    return bar


def memory_status(memory: Memory) -> str:
    if memory.is_history:
        return "history"
    if memory.archived:
        return "archived"
    if memory.struck:
        return "struck"
    return "active"
