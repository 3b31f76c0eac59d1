"""Deliveries: what Palinode delivered of one forget request's preference,
from its retrieval log joined with git history (palinode_core.inspect.deliveries):
before the request, in the exposure window (filed, not yet applied), after the
apply (a leak), or struck or archived. The highlighted delivery shows the
sentence delivered and the delivered version's diff against today; Enter
shows the delivered version itself, Enter again the diff."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Header, Static

from ..render import body_text, colour_diff, plain, short_sha
from ..widgets import AsOfBanner, KeyedTable, ListFilter
from .base import ModeScreen, footer

CLASS_STYLE = {
    "leak": "bold red",
    "exposure_window": "yellow",
    "before_request": "",
    "delivered_retracted": "dim",
    "withdrawn": "dim",
    "dismissed": "dim",
}
CLASS_WORDS = {
    "leak": "leak",
    "exposure_window": "in window",
    "before_request": "before",
    "delivered_retracted": "retracted",
    "withdrawn": "withdrawn",
    "dismissed": "dismissed",
}
MAX_ROWS = 2000  # listed; the counts in the title are complete


def delivery_record(session: Any, request: str) -> tuple[list[dict[str, Any]], dict[str, Any], list[str]]:
    """(this request's classified deliveries, its summary, what to say about the log): one pass."""
    audit = session.deliveries(request=request, show_queries=True)  # the person at this terminal asked
    rows: list[dict[str, Any]] = []
    for record in audit.rows(unrelated=False):  # every row is read, so the summary counts them all
        if len(rows) < MAX_ROWS:
            rows.append(record)
    return rows, audit.summary().get(request, {}), audit.log.notes() + audit.log.problems[:3]


class DeliveriesScreen(ModeScreen):
    SCOPE = "deliveries"

    def __init__(self, request: str) -> None:
        super().__init__()
        self.request = request
        self.rows: dict[str, dict[str, Any]] = {}
        self.showing_version = False
        self.shown_text = ""  # what the lower pane shows, as git wrote it (tests read it)

    def compose(self) -> ComposeResult:
        yield Header()
        yield AsOfBanner()
        yield Static(id="deliveries-title")
        yield ListFilter("deliveries")
        yield KeyedTable(id="deliveries", classes="pane")
        yield Static(id="delivery-head")
        with VerticalScroll(id="delivery-box", classes="pane"):
            yield Static(id="delivery-body")
        yield footer()

    def on_mount(self) -> None:
        self.query_one("#deliveries", KeyedTable).add_columns(
            "time", "class", "memory", "version", "session", "mode", "query"
        )
        super().on_mount()
        self.query_one("#deliveries", KeyedTable).focus()

    def store_updated(self, changed: object) -> None:
        session, request = self.app.session, self.request
        self.app.run_blocking(
            lambda: delivery_record(session, request),
            self._fill,
            "read the retrieval log",
            "deliveries",
            exclusive=True,
            on_error=self._unreadable,
        )

    def _unreadable(self, reason: str) -> None:
        self.rows = {}
        self.query_one("#deliveries", KeyedTable).refill(())
        self.query_one("#deliveries-title", Static).update(plain(reason, "yellow"))

    def _fill(self, record: tuple[list[dict[str, Any]], dict[str, Any], list[str]]) -> None:
        rows, summary, notes = record
        self.rows = {f"{r['log']}:{r['line']}:{r['entry']}": r for r in rows}
        self.query_one("#deliveries-title", Static).update(title(self.request, summary, notes))
        table = self.query_one("#deliveries", KeyedTable)
        table.refill(
            (
                key,
                [
                    plain(local_time(r["timestamp"])),
                    plain(CLASS_WORDS[r["class"]], CLASS_STYLE[r["class"]]),
                    plain(r["path"] or r["file_path"]),
                    plain(f"{r['revision_match']} {short_sha(r['commit'] or '')}".strip(), "dim"),
                    plain(r["session_id"] or ""),
                    plain(r["mode"] or ""),
                    plain(r["query"] or ""),
                ],
            )
            for key, r in self.rows.items()
        )
        self._show()

    @on(KeyedTable.RowHighlighted, "#deliveries")
    def _highlighted(self, _event: KeyedTable.RowHighlighted) -> None:
        self.showing_version = False
        self._show()

    def selected(self) -> dict[str, Any] | None:
        return self.rows.get(self.query_one("#deliveries", KeyedTable).selected_key or "")

    @on(KeyedTable.RowSelected, "#deliveries")
    def _selected(self, _event: KeyedTable.RowSelected) -> None:
        self.action_show_version()  # the table takes Enter for itself

    def action_show_version(self) -> None:
        self.showing_version = not self.showing_version
        self._show()

    def _show(self) -> None:
        row = self.selected()
        head = self.query_one("#delivery-head", Static)
        if row is None:
            head.update(plain("no delivery of this preference in the log", "dim"))
            self._body("")
            return
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f"{CLASS_WORDS[row['class']]}: ", style=CLASS_STYLE[row["class"]] or "bold")
        text.append_text(plain(row["sentence"] or ""))
        head.update(text)
        commit, path, session = row["commit"], row["path"], self.app.session
        if commit is None:
            self._body(row["note"] or "the delivered version is unknown", note=True)
        elif self.showing_version:
            self.app.run_blocking(
                lambda: session.store.git.blob_at(commit, path) or "",
                self._body,
                "read the delivered version",
                "delivery-body",
                exclusive=True,
                on_error=lambda reason: self._body(reason, note=True),
            )
        else:
            self.app.run_blocking(
                lambda: session.diff_between(path, commit, "HEAD")["diff"],
                self._diff,
                "diff against today",
                "delivery-body",
                exclusive=True,
                on_error=lambda reason: self._body(reason, note=True),
            )

    def _diff(self, diff: str) -> None:
        self.shown_text = diff
        self.query_one("#delivery-body", Static).update(
            colour_diff(diff.splitlines()) if diff else plain("the delivered version is the version today", "dim")
        )

    def _body(self, text: str, note: bool = False) -> None:
        self.shown_text = text
        self.query_one("#delivery-body", Static).update(plain(text, "yellow") if note else body_text(text))

    def action_close(self) -> None:
        self.dismiss(None)


def local_time(timestamp: str) -> str:
    """A logged time in the user's time zone, to the minute, with its offset
    ("2025-06-01 12:00 +02:00"); as logged when it is not a time."""
    try:
        when = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return timestamp
    when = (when if when.tzinfo else when.replace(tzinfo=UTC)).astimezone()
    offset = when.strftime("%z")
    return f"{when:%Y-%m-%d %H:%M} {offset[:3]}:{offset[3:]}"


def title(request: str, summary: dict[str, Any], notes: list[str]) -> Text:
    out = Text()
    out.append_text(plain(request, "bold"))
    counts = summary.get("counts", {})
    out.append("  " + ", ".join(f"{n} {CLASS_WORDS[c]}" for c, n in counts.items()), style="dim")
    window = summary.get("window") or {}
    out.append("\nexposure window: ", style="bold")
    out.append_text(plain(f"{window.get('from') or 'unknown'} → {window.get('to') or 'not applied (still open)'}"))
    stages = window.get("timeline") or []
    if stages:
        out.append("\nlife: ", style="bold")
        out.append_text(plain(" → ".join(f"{s['event']} {local_time(s['at'])}" for s in stages)))
    for note in notes:
        out.append("\n")
        out.append_text(plain(note, "yellow"))
    return out
