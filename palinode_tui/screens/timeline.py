"""A memory across time: each commit that changed it (when, which operation,
whether Palinode, this tool or a hand made it, the status after it). The
highlighted commit's own diff shows below; mark two points (space) to see the
memory and its history sibling from one to the other."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Header, Static

from palinode_core.api import Point

from ..render import OPERATION_STYLE, colour_diff, plain, short_date, short_sha
from ..widgets import AsOfBanner, KeyedTable, ListFilter
from .base import ModeScreen, footer

OP_STYLE = {**OPERATION_STYLE, "save": "", "edit": "bold red"}
ACTOR_WORDS = {"palinode": "Palinode", "palinode-audit": "ours"}


def operation(point: Point) -> str:
    """The operation a commit was: its subject's op, else a save (Palinode) or an edit (anyone else)."""
    return point.op or ("save" if point.actor == "palinode" else "edit")


def made_by(point: Point) -> str:
    return ACTOR_WORDS.get(point.actor) or f"hand: {point.author}"


class TimelineScreen(ModeScreen):
    SCOPE = "timeline"

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        self.points: list[Point] = []
        self.marks: list[str] = []  # at most two commits, in the order marked
        self.diff_text = ""  # the diff shown, as git wrote it (tests read it)

    def compose(self) -> ComposeResult:
        yield Header()
        yield AsOfBanner()
        yield Static(id="points-title")
        yield ListFilter("points")
        yield KeyedTable(id="points", classes="pane")
        yield Static(id="points-head")
        with VerticalScroll(id="points-diff-box", classes="pane"):
            yield Static(id="points-diff")
        yield footer()

    def on_mount(self) -> None:
        self.query_one("#points", KeyedTable).add_columns("", "date", "commit", "operation", "by", "status", "subject")
        super().on_mount()
        self.query_one("#points", KeyedTable).focus()

    def store_updated(self, changed: object) -> None:
        session = self.app.session
        self.app.run_blocking(
            lambda: session.timeline(self.path),
            self._fill,
            "read the timeline",
            "timeline-list",
            exclusive=True,
            on_error=self._no_timeline,
        )

    def _no_timeline(self, reason: str) -> None:
        self.points, self.marks, self.diff_text = [], [], ""
        self.query_one("#points", KeyedTable).refill(())
        self._title()
        self.query_one("#points-head", Static).update(plain(reason, "yellow"))
        self.query_one("#points-diff", Static).update("")

    def _fill(self, points: list[Point]) -> None:
        self.points = points
        shas = {p.commit for p in points}
        self.marks = [m for m in self.marks if m in shas]
        self._refill()
        self._title()
        self._show_diff()

    def _refill(self) -> None:
        table = self.query_one("#points", KeyedTable)
        rows = []
        for point in reversed(self.points):  # newest first, like git log
            status = point.status + (f", {point.markers} struck" if point.markers else "")
            op = operation(point)
            rows.append(
                (
                    point.commit,
                    [
                        Text("●" if point.commit in self.marks else " ", style="bold cyan"),
                        plain(short_date(point.date)),
                        plain(short_sha(point.commit), "dim"),
                        plain(op, OP_STYLE.get(op, "")),
                        plain(made_by(point)),
                        plain(status, "yellow" if status != "active" else ""),
                        plain(point.subject),
                    ],
                )
            )
        # The subject gets the width the other columns leave (the head line shows it whole):
        # a table wider than the screen would scroll sideways.
        used = sum(max((len(cells[i].plain) for _, cells in rows), default=0) + 2 for i in range(6))
        room = max(12, self.size.width - used - 6)
        for _, cells in rows:
            subject = cells[6]
            if len(subject.plain) > room:
                cells[6] = subject[: room - 1] + Text("…")
        table.refill(rows)

    def on_resize(self) -> None:
        if self.points:
            self._refill()

    def _title(self) -> None:
        title = Text(no_wrap=True, overflow="ellipsis")
        title.append_text(plain(self.path, "bold"))
        title.append(f"  {len(self.points)} commit(s)", style="dim")
        if self.app.as_of is not None:
            title.append(f" up to {self.app.as_of_words()}", style="dim")
        title.append(" · space marks two to compare", style="dim")
        self.query_one("#points-title", Static).update(title)

    def _point(self, sha: str) -> Point | None:
        return next((p for p in self.points if p.commit == sha), None)

    @on(KeyedTable.RowHighlighted, "#points")
    def _highlighted(self, _event: KeyedTable.RowHighlighted) -> None:
        if len(self.marks) < 2:
            self._show_diff()

    def action_mark(self) -> None:
        sha = self.query_one("#points", KeyedTable).selected_key
        if sha is None:
            return
        if sha in self.marks:
            self.marks.remove(sha)
        else:
            self.marks = [*self.marks, sha][-2:]  # a third mark replaces the oldest
        self._refill()
        self._show_diff()

    def _show_diff(self) -> None:
        """Two marks: the diff between them (older to newer). Otherwise what the highlighted commit changed."""
        session, path = self.app.session, self.path
        head = Text(no_wrap=True, overflow="ellipsis")
        if len(self.marks) == 2:
            order = [p.commit for p in self.points]
            old, new = sorted(self.marks, key=order.index)
            head.append("from ", style="bold")
            head.append(f"{short_sha(old)} {short_date(self._date(old))}")
            head.append(" to ", style="bold")
            head.append(f"{short_sha(new)} {short_date(self._date(new))}")
            head.append("  memory and history", style="dim")
            self.app.run_blocking(
                lambda: session.diff_between(path, old, new)["diff"],
                self._diff_ready,
                "diff between two points",
                "timeline-diff",
                exclusive=True,
                on_error=self._diff_failed,
            )
        else:
            point = self._point(self.query_one("#points", KeyedTable).selected_key or "")
            if point is None:
                return
            head.append(f"what {short_sha(point.commit)} changed: ", style="bold")
            head.append_text(plain(point.subject))
            self.app.run_blocking(
                lambda: session.commit_diff(point.commit, path),
                self._diff_ready,
                "show commit",
                "timeline-diff",
                exclusive=True,
                on_error=self._diff_failed,
            )
        self.query_one("#points-head", Static).update(head)

    def _date(self, sha: str) -> str:
        point = self._point(sha)
        return point.date if point else ""

    def _diff_ready(self, diff: str) -> None:
        self.diff_text = diff
        self.query_one("#points-diff", Static).update(
            colour_diff(diff.splitlines()) if diff else plain("no change to this memory or its history", "dim")
        )
        self.query_one("#points-diff-box", VerticalScroll).scroll_home(animate=False)

    def _diff_failed(self, reason: str) -> None:
        self.diff_text = ""
        self.query_one("#points-diff", Static).update(plain(reason, "yellow"))

    def action_close(self) -> None:
        self.dismiss(None)
