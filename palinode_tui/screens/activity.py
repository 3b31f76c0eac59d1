"""Activity: every core and git action this session performed, and the
store's forget timeline."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Static

from ..render import plain, short_date
from ..widgets import AsOfBanner, KeyedTable, ListFilter, ModeTabs, StatusLine
from .base import ModeScreen, footer

KIND_STYLE = {"action": "bold green", "git": "dim", "error": "bold red", "watch": "cyan"}


class ActivityScreen(ModeScreen):
    SCOPE = "activity"

    def compose(self) -> ComposeResult:
        yield ModeTabs("activity")
        yield AsOfBanner()
        with Horizontal(classes="main", id="activity-main"):
            with VerticalScroll(id="activity-log-box", classes="pane"):
                yield Static(id="activity-log")
            with Vertical(id="activity-right"):
                yield ListFilter("timeline")
                yield KeyedTable(id="timeline", classes="pane")
        yield StatusLine()
        yield footer()

    def on_mount(self) -> None:
        table = self.query_one("#timeline", KeyedTable)
        for label, width in (("date", 16), ("op", 9), ("path", 26), ("via", 26)):  # fixed: see the Undo list
            table.add_column(label, width=width)
        super().on_mount()
        self.set_interval(1.0, self._render_log)

    def on_screen_resume(self) -> None:
        self._render_log()

    def _render_log(self) -> None:
        text = Text()
        text.append("This session\n", style="bold")
        for entry in self.app.activity[-500:]:
            text.append(f"{entry.when} ", style="dim")
            text.append(f"{entry.kind:<6} ", style=KIND_STYLE.get(entry.kind, ""))
            text.append(plain(entry.text))
            if entry.commits:
                text.append("  " + " ".join(c[:7] for c in entry.commits), style="yellow")
            text.append("\n")
        self.query_one("#activity-log", Static).update(text)

    def store_updated(self, changed: object) -> None:
        self.app.run_blocking(
            lambda: self.app.session.operations(), self._fill, "read the timeline", "timeline", exclusive=True
        )

    def _fill(self, ops) -> None:
        self.query_one("#timeline", KeyedTable).refill(
            (op.commit, (plain(short_date(op.date)), plain(op.op), plain(op.path), plain(op.counterpart or "")))
            for op in ops
        )
