"""Review as of a point of history: no plan can be made then (planning
searches the store as it is now), so the Review screen shows the request's
record as of that point instead, from its audit report (``Session.report``):
who filed it, how it was resolved, every target with its route, coverage and
decision, and the commit that carried it out."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from ..render import ROUTE_STYLE, STATE_STYLE, colour_diff, coverage_gauge, plain, route_word, short_date, short_sha

DECISION_MARK: dict[str, tuple[str, str]] = {
    "approved": ("✓", "bold green"),
    "automatic": ("•", "bold yellow"),
    "rejected": ("✗", "bold red"),
    "deferred": ("?", "yellow"),
    "failed": ("!", "bold red"),
}
DIFF_LINES = 60  # of the target's operation diff, in the detail pane


# Why a request is partial, and how to finish it (issue 23, item 8).
PARTIAL_WHY = "partial: part of it was undone, or struck by hand outside an apply"


def record_header(row: dict[str, Any], live: bool = False) -> Text:
    """Three lines: the request, who filed it, how it was resolved (the banner says which point
    this is). ``live``: a decided request now, whose record is shown before any new plan."""
    header = Text()
    header.append("pref ", style="dim")
    header.append(plain(row["pref"], "bold"))
    header.append(f"   r:{row['rid']}   ", style="dim")
    header.append(plain(row["state"], STATE_STYLE.get(row["state"], "")))
    if live:
        why = f"   {PARTIAL_WHY};" if row["state"] == "partial" else "   its record: nothing remains to plan;"
        header.append(why + " p plans again", style="italic yellow")
    else:
        header.append("   recorded, not planned", style="italic yellow")
    header.append("\n")
    filed = row.get("filed") or {}
    header.append(plain(row["path"], "dim"))
    if filed:
        header.append("  filed ", style="dim")
        header.append(plain(f"{short_date(filed.get('date'))} by {filed.get('author')}"))
    resolver = row.get("resolver") or {}
    knobs = resolver.get("knobs") or {}
    header.append("\n")
    header.append_text(plain(resolver.get("by") or "not resolved yet", "cyan"))
    header.append(
        f" · {len(row.get('decisions') or ())} decision(s) · {len(row.get('operations') or ())} "
        f"operation(s) · {len(row.get('undos') or ())} undone",
        style="dim",
    )
    if knobs:
        header.append(
            plain(
                f" · floor {knobs.get('min_target_coverage')} max {knobs.get('max_targets')} "
                f"shared {knobs.get('min_shared_words')}",
                "dim",
            )
        )
    header.no_wrap, header.overflow = True, "ellipsis"  # three lines at any width
    return header


def _floor(row: dict[str, Any]) -> float:
    knobs = (row.get("resolver") or {}).get("knobs") or {}
    floor = knobs.get("min_target_coverage")
    return float(floor) if isinstance(floor, (int, float)) else 0.0


def record_cells(row: dict[str, Any], target: dict[str, Any]) -> tuple[Text, ...]:
    """A recorded target in the candidates table's own columns (CANDIDATE_COLUMNS: ok, by, route, path,
    note, coverage, shared); "by" is the rank the resolver gave it, when recorded."""
    decision = target.get("decision") or ""
    symbol, style = DECISION_MARK.get(decision, (" ", ""))
    route = target.get("route") or ""
    rank = (target.get("evidence") or {}).get("rank")
    coverage = target.get("coverage")
    note = decision + (f" · {short_sha(target['commit'])}" if target.get("commit") else "")
    if target.get("flags"):
        note += f" · {len(target['flags'])} flag(s)"
    return (
        Text(symbol, style=style),
        Text("" if rank is None else f"#{rank}", style="dim"),
        plain(route_word(route), ROUTE_STYLE.get(route, "")),
        plain(target["path"]),
        plain(note, "dim"),
        coverage_gauge(coverage if isinstance(coverage, (int, float)) else None, _floor(row), width=8),
        plain(", ".join((target.get("evidence") or {}).get("shared_words") or ())),
    )


def record_detail(row: dict[str, Any], target: dict[str, Any]) -> Text:
    evidence = target.get("evidence") or {}
    text = Text()
    text.append(plain(target["path"], "bold"))
    text.append(plain(f"  {target.get('decision') or 'no decision'}", "dim"))
    if target.get("decided_by"):
        text.append(plain(f" by {target['decided_by']}", "dim"))
    text.append("\n")
    if evidence.get("reason"):
        text.append(plain(evidence["reason"]))
        text.append("\n")
    for sentence in evidence.get("struck") or ():
        text.append("  struck: ", style="magenta")
        text.append(plain(sentence, "strike"))
        text.append("\n")
    if evidence.get("history_line"):
        text.append("history: ", style="bold")
        text.append(plain(evidence["history_line"]))
        text.append("\n")
    for flag in target.get("flags") or ():
        text.append("flagged: ", style="bold yellow")
        text.append(plain(flag))
        text.append("\n")
    operation = next((o for o in row.get("operations") or () if o.get("commit") == target.get("commit")), None)
    if operation is not None:
        text.append("commit ", style="bold")
        text.append(plain(f"{short_sha(operation['commit'])} {short_date(operation.get('date'))} "))
        text.append_text(plain(operation.get("subject")))
        text.append("\n")
        text.append_text(colour_diff(str(operation.get("diff") or "").splitlines()[:DIFF_LINES]))
    return text
