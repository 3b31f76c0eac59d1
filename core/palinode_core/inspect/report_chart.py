"""Charts for the HTML report, as inline SVG: no script, no external resource,
nothing from the store but escaped text in <title> and <text>. A request's life
on one time axis (filed, reviewed, applied, undone, delivered), and, for a report
over several requests, forgetting over time across them (running totals)."""

from __future__ import annotations

import html
from datetime import UTC, datetime
from typing import Any

from ..text.sanitize import printable

WIDTH, LEFT, RIGHT = 720, 92, 16
COLOURS = {
    "filed": "#1f5fa8",
    "reviewed": "#6a3fa0",
    "applied": "#1d7a33",
    "undone": "#a85a00",
    "delivered": "#b00020",
    "window": "#f3e3c3",
}


def _esc(value: Any) -> str:
    return html.escape(printable(str(value)), quote=True)


def _when(value: Any) -> datetime | None:
    """An ISO time as UTC; None for anything else (a chart skips what it cannot place)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def _day(when: datetime) -> str:
    return when.strftime("%Y-%m-%d %H:%M")


def _axis(times: list[datetime]) -> tuple[datetime, float]:
    start, end = min(times), max(times)
    return start, max((end - start).total_seconds(), 3600.0)  # one hour at least: a single instant still has room


def _x(when: datetime, start: datetime, span: float) -> float:
    return round(LEFT + (when - start).total_seconds() / span * (WIDTH - LEFT - RIGHT), 1)


def request_events(req: dict[str, Any]) -> list[tuple[str, datetime, str]]:
    """(lane, time, what) for every dated event of one request of the report."""
    events: list[tuple[str, datetime, str]] = []

    def add(lane: str, value: Any, what: str) -> None:
        when = _when(value)
        if when is not None:
            events.append((lane, when, what))

    if req.get("filed"):
        add("filed", req["filed"]["date"], f"filed by {req['filed']['author']}")
    for d in req.get("decisions") or []:
        add("reviewed", d.get("at"), f"{d.get('action')} by {d.get('by') or 'unknown'}")
    for op in req.get("operations") or []:
        add("applied", op.get("date"), f"{op.get('op') or 'operation'} {op.get('path') or ''} by {op.get('actor')}")
    for undo in req.get("undos") or []:
        add("undone", undo.get("date"), str(undo.get("subject") or undo.get("kind") or "undo"))
    found = req.get("deliveries") or {}
    for key, label in (("exposure", "delivered while the request waited"), ("leaks", "delivered after the apply")):
        for row in found.get(key) or []:
            add("delivered", row.get("timestamp"), f"{label}: {row.get('path') or ''}")
    return events


def request_life(req: dict[str, Any]) -> str:
    """One lane per kind of event, on one time axis; the exposure window shaded."""
    events = request_events(req)
    if not events:
        return ""
    window = (req.get("deliveries") or {}).get("window") or {}
    opened, closed = _when(window.get("from")), _when(window.get("to"))
    times = [t for _, t, _ in events] + [t for t in (opened, closed) if t is not None]
    start, span = _axis(times)
    lanes = ["filed", "reviewed", "applied", "undone", "delivered"]
    height = 26 * len(lanes) + 30
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img" '
        f'aria-label="the life of request {_esc(req["path"])}: {len(events)} dated events">'
    ]
    if opened is not None:
        end = closed or max(times)
        x0, x1 = _x(opened, start, span), _x(end, start, span)
        parts.append(
            f'<rect x="{x0}" y="4" width="{max(x1 - x0, 1.0)}" height="{26 * len(lanes)}" fill="{COLOURS["window"]}">'
            f"<title>exposure window: filed {_day(opened)}, "
            f"{'applied ' + _day(closed) if closed else 'not applied'}</title></rect>"
        )
    for row, lane in enumerate(lanes):
        y = 17 + 26 * row
        parts.append(
            f'<text x="4" y="{y + 4}" font-size="12" fill="#333">{lane}</text>'
            f'<line x1="{LEFT}" y1="{y}" x2="{WIDTH - RIGHT}" y2="{y}" stroke="#ccc" stroke-width="1"/>'
        )
        for kind, when, what in events:
            if kind == lane:
                parts.append(
                    f'<circle cx="{_x(when, start, span)}" cy="{y}" r="5" fill="{COLOURS[lane]}">'
                    f"<title>{_esc(_day(when))} UTC: {_esc(what)}</title></circle>"
                )
    base = 26 * len(lanes) + 20
    parts.append(
        f'<text x="{LEFT}" y="{base}" font-size="11" fill="#555">{_day(start)} UTC</text>'
        f'<text x="{WIDTH - RIGHT}" y="{base}" font-size="11" fill="#555" text-anchor="end">'
        f"{_day(max(times))} UTC</text></svg>"
    )
    return "".join(parts)


def forgetting_over_time(requests: list[dict[str, Any]]) -> str:
    """Running totals across the report's requests: filed, applied (a request's first operation),
    memories archived, mentions struck, operations undone."""
    series: dict[str, list[datetime]] = {"filed": [], "applied": [], "archived": [], "struck": [], "undone": []}
    for req in requests:
        for lane, when, _what in request_events(req):
            if lane == "filed":
                series["filed"].append(when)
            elif lane == "undone":
                series["undone"].append(when)
        ops = [(op, _when(op.get("date"))) for op in req.get("operations") or []]
        dated = [(op, when) for op, when in ops if when is not None]
        if dated:
            series["applied"].append(min(when for _, when in dated))
        for op, when in dated:
            if op.get("op") == "retract":
                series["struck"].append(when)
            elif op.get("op") in ("supersede", "archive"):
                series["archived"].append(when)
    times = sorted(t for values in series.values() for t in values)
    if not times:
        return ""
    start, span = _axis(times)
    top = max(len(values) for values in series.values())
    plot_top, plot_bottom = 10, 170
    colours = {
        "filed": COLOURS["filed"],
        "applied": COLOURS["applied"],
        "archived": "#555",
        "struck": COLOURS["delivered"],
        "undone": COLOURS["undone"],
    }

    def y(count: int) -> float:
        return round(plot_bottom - count / top * (plot_bottom - plot_top), 1)

    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} 230" width="{WIDTH}" height="230" role="img" '
        f'aria-label="forgetting over time across {len(requests)} requests">',
        f'<line x1="{LEFT}" y1="{plot_bottom}" x2="{WIDTH - RIGHT}" y2="{plot_bottom}" stroke="#999" stroke-width="1"/>',
        f'<line x1="{LEFT}" y1="{plot_top}" x2="{LEFT}" y2="{plot_bottom}" stroke="#999" stroke-width="1"/>',
        f'<text x="{LEFT - 6}" y="{plot_top + 4}" font-size="11" fill="#555" text-anchor="end">{top}</text>',
        f'<text x="{LEFT - 6}" y="{plot_bottom + 4}" font-size="11" fill="#555" text-anchor="end">0</text>',
    ]
    for i, (name, values) in enumerate(series.items()):
        if not values:
            continue
        points: list[tuple[float, float]] = [(LEFT, plot_bottom)]
        for count, when in enumerate(sorted(values), 1):
            x = _x(when, start, span)
            points += [(x, y(count - 1)), (x, y(count))]  # a step: the total rises at each event
        points.append((WIDTH - RIGHT, y(len(values))))
        parts.append(
            f'<polyline points="{" ".join(f"{px},{py}" for px, py in points)}" fill="none" '
            f'stroke="{colours[name]}" stroke-width="2"><title>{name}: {len(values)}</title></polyline>'
        )
        parts.append(
            f'<text x="{LEFT + 110 * i}" y="{plot_bottom + 42}" font-size="12" fill="{colours[name]}">'
            f"{name} ({len(values)})</text>"
        )
    parts.append(
        f'<text x="{LEFT}" y="{plot_bottom + 18}" font-size="11" fill="#555">{_day(start)} UTC</text>'
        f'<text x="{WIDTH - RIGHT}" y="{plot_bottom + 18}" font-size="11" fill="#555" text-anchor="end">'
        f"{_day(times[-1])} UTC</text></svg>"
    )
    return "".join(parts)
