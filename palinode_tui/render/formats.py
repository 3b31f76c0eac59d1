"""Small formats: dates, commit ids, coverage gauges."""

from __future__ import annotations

from rich.text import Text


def short_date(iso: str | None) -> str:
    """``2025-05-20T10:00:00+00:00`` as ``2025-05-20 10:00``."""
    return (iso or "")[:16].replace("T", " ")


def short_sha(sha: str | None) -> str:
    return (sha or "")[:7]


def coverage_gauge(coverage: float | None, floor: float | None, width: int = 10) -> Text:
    """A small bar with the floor marked: filled past the floor means archive.
    Without a floor (a route the floor does not govern) the bar is only a measure."""
    if coverage is None:
        return Text("—", style="dim")
    filled = min(width, round(coverage * width))
    mark = -1 if floor is None else min(width - 1, max(0, round(floor * width)))
    past = floor is not None and coverage >= floor
    bar = Text()
    for i in range(width):
        char = "█" if i < filled else "░"
        style = ("cyan" if floor is None else "yellow" if past else "magenta") if i < filled else "dim"
        if i == mark:
            style += " underline"
        bar.append(char, style=style)
    bar.append(f" {coverage:.4f}", style="bold" if past else "")
    return bar
