"""Small formats: dates, commit ids, coverage gauges."""
from __future__ import annotations

from rich.text import Text


def short_date(iso: str | None) -> str:
    """``2031-05-20T10:00:00+00:00`` as ``2031-05-20 10:00``."""
    return (iso or "")[:16].replace("T", " ")


def short_sha(sha: str | None) -> str:
    return (sha or "")[:7]


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
