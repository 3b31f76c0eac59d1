"""Browse: memories grouped by category, filtered by status and text, with a
detail pane; hybrid search shows which arm matched."""

from __future__ import annotations

import bisect
from typing import Literal, get_args

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.timer import Timer
from textual.widgets import DataTable, Input, Static

from palinode_core.api import Applied, Memory, PalinodeError, Plan, ScanResult

from ..render import STATUS_STYLE, body_text, memory_status, plain, plan_preview
from ..widgets import AsOfBanner, ConfirmModal, ModeTabs, StatusLine
from .base import ModeScreen, footer

StatusFilter = Literal["all", "active", "archived", "struck", "history", "unparseable"]
STATUS_FILTERS: tuple[StatusFilter, ...] = get_args(StatusFilter)
PAGE = 200  # rows rendered at once; a DataTable refill of 10k rows would block ~1 s
PREVIEW_CHARS = 2000  # wrapping a 2,000-word body on every cursor move would lag the list
Row = tuple[str, str, "Memory | None", str]  # (status, path, memory, unreadable reason)


def _sort_key(row: Row) -> tuple[str, str]:
    return (row[2].category if row[2] else "~"), row[1]


def _row_for(scan: ScanResult, rel: str, errors: dict[str, str]) -> Row | None:
    if rel in scan.memories:
        return memory_status(scan.memories[rel]), rel, scan.memories[rel], ""
    if rel in scan.history:
        return "history", rel, scan.history[rel], ""
    if rel in errors:
        return "unparseable", rel, None, errors[rel]
    return None


def _preview(body: str) -> Text:
    if len(body) <= PREVIEW_CHARS:
        return body_text(body)
    cut = body.rfind("\n", 0, PREVIEW_CHARS)
    preview = body_text(body[: cut if cut > 0 else PREVIEW_CHARS])
    preview.append(f"\n… {body.count(chr(10), cut)} more lines · Enter opens the whole memory", style="dim italic")
    return preview


def category_of(rel: str, memory: Memory | None) -> str:
    """The memory's ``category:``, else its folder (Palinode files memories by category folder)."""
    if memory is not None and memory.category:
        return str(memory.category)
    return rel.split("/", 1)[0] if "/" in rel else "(top level)"


class BrowseScreen(ModeScreen):
    SCOPE = "browse"

    def __init__(self) -> None:
        super().__init__()
        self.status_filter: StatusFilter = "all"
        self.category: str | None = None  # None: every category
        self.text_filter = ""
        self.search_hits: dict[str, str] | None = None  # path -> score and arms, when a hybrid search is shown
        self.search_cut = 0  # hits the search found but not related to the query (Hit.related)
        self.rows: list[str] = []
        self.shown_path: str | None = None
        self._columns: list = []
        self._changed: set[str] = set()
        self._changed_all = False
        self._pending_show: str | None = None
        self._listed: list[Row] | None = None  # the last applied list, for incremental refreshes
        self._listed_key: tuple | None = None
        self._show_timer: Timer | None = None

    def compose(self) -> ComposeResult:
        yield ModeTabs("browse")
        yield AsOfBanner()
        with Horizontal(classes="main"):
            with Vertical(id="browse-left"):
                yield Input(placeholder="filter by text · Enter: hybrid search", id="browse-filter", classes="field")
                yield Static(id="browse-summary")
                yield DataTable(id="memories", cursor_type="row", zebra_stripes=True, classes="pane")
            with VerticalScroll(id="browse-detail", classes="pane"):
                yield Static(id="detail-fields")
                yield Static(id="detail-body")
        yield StatusLine()
        yield footer()

    def on_mount(self) -> None:
        table = self.query_one("#memories", DataTable)
        self._columns = table.add_columns("status", "match", "path", "title")  # match before the long columns
        super().on_mount()
        table.focus()

    # -- data -------------------------------------------------------------------
    def _filter_key(self) -> tuple:
        hits = tuple(self.search_hits) if self.search_hits is not None else None
        return self.status_filter, self.category, self.text_filter.lower(), hits

    def _keeps(self, row: Row) -> bool:
        status, rel, memory, _reason = row
        if self.status_filter == "all" and status == "history":
            return False  # history siblings are not browsable memories unless asked for
        if self.status_filter not in ("all", status):
            return False
        if self.category is not None and category_of(rel, memory) != self.category:
            return False
        if self.search_hits is not None:
            return rel in self.search_hits
        needle = self.text_filter.lower()
        if not needle or needle in rel.lower():
            return True
        if memory is None:
            return False
        try:
            return needle in memory.title.lower() or needle in memory.body.lower()
        except PalinodeError:
            return False  # changed or gone since the scan; the next refresh lists it right

    def _visible(self, scan: ScanResult | None, base: list[Row] | None, changed: set[str]) -> list[Row]:
        """The filtered, sorted rows. With ``base`` (the last list, same filter)
        only the changed paths are re-examined: a refresh of one file in a
        100,000-memory store must not re-filter and re-sort them all."""
        if scan is None:
            return []
        if base is not None and self.search_hits is None:
            out = [row for row in base if row[1] not in changed]
            errors = {e.path: e.reason for e in scan.errors if e.path in changed}
            for rel in changed:
                row = _row_for(scan, rel, errors)
                if row is not None and self._keeps(row):
                    bisect.insort(out, row, key=_sort_key)
            return out
        rows: list[Row] = [(memory_status(m), rel, m, "") for rel, m in scan.memories.items()]
        rows += [("history", rel, m, "") for rel, m in scan.history.items()]
        rows += [("unparseable", e.path, None, e.reason) for e in scan.errors]
        if self.search_hits is None and not self.text_filter and self.category is None:  # the common case, fast
            wanted = self.status_filter
            out = (
                [row for row in rows if row[0] != "history"]
                if wanted == "all"
                else [row for row in rows if row[0] == wanted]
            )
        else:
            out = [row for row in rows if self._keeps(row)]
        if self.search_hits is not None:
            order = {p: i for i, p in enumerate(self.search_hits)}
            out.sort(key=lambda r: order.get(r[1], 0))
        else:
            out.sort(key=_sort_key)
        return out

    def store_updated(self, changed: object) -> None:
        if changed is None:
            self._changed_all = True
        else:
            self._changed.update(changed)  # type: ignore[arg-type]
        self._relist()

    def _relist(self) -> None:
        """Filter and sort in a thread (a big store would stall the UI). Only the
        newest job's result is applied, and it covers every change pending when
        it started."""
        key = self._filter_key()
        scan = self.app.scan
        changed = None if self._changed_all else set(self._changed)
        base = self._listed if changed is not None and self._listed_key == key else None
        self.app.run_blocking(
            lambda: (self._visible(scan, base, changed or set()), key, changed),
            self._apply_visible,
            "list memories",
            "browse-list",
            exclusive=True,
        )

    def _apply_visible(self, result: tuple[list[Row], tuple, set[str] | None]) -> None:
        visible, key, changed = result
        self._listed, self._listed_key = visible, key
        self._changed_all, self._changed = False, set()
        if changed is not None and [r[1] for r in visible[:PAGE]] == self.rows:
            self._update_rows(visible, changed)  # same rows, same order: touch only what changed
        else:
            self.refill(visible)
        if self.shown_path and (changed is None or self.shown_path in changed):
            self.show(self.shown_path)

    def _cells(self, status: str, rel: str, memory: Memory | None, reason: str) -> list[Text]:
        title = memory.title if memory else reason
        arms = self.search_hits.get(rel, "") if self.search_hits is not None else ""
        return [plain(status, STATUS_STYLE.get(status, "")), plain(arms, "cyan"), plain(rel), plain(title)]

    def _update_rows(self, visible: list, changed: set[str]) -> None:
        table = self.query_one("#memories", DataTable)
        for status, rel, memory, reason in visible[:PAGE]:
            if rel in changed:
                for column, value in zip(self._columns, self._cells(status, rel, memory, reason), strict=True):
                    table.update_cell(rel, column, value)
        self._summarise(len(visible))

    def _summarise(self, count: int) -> None:
        summary = Text()
        if self.search_hits is not None:  # the query first: the line is cut at the pane's edge
            if not self.search_hits:
                summary.append("no memory mentions ", style="bold")
                summary.append(plain(self.text_filter, "bold italic"))
            else:
                summary.append(f"search ({self.app.index_mode}): ", style="bold")
                summary.append(plain(self.text_filter, "bold italic"))
                summary.append(f" · {len(self.search_hits)} related", style="bold")
            if self.search_cut:
                summary.append(f" · {self.search_cut} unrelated not listed", style="dim")
            summary.append(" · Esc clears · ", style="dim")
        summary.append(f"{count} shown", style="bold")
        if count > PAGE:
            summary.append(f" (first {PAGE}; type to narrow)", style="dim")
        summary.append(f" · status: {self.status_filter} (s)")
        summary.append(" · category: ")
        summary.append(plain(self.category or "all"))
        summary.append(" (c)", style="dim")
        self.query_one("#browse-summary", Static).update(summary)

    def refill(self, visible: list) -> None:
        table = self.query_one("#memories", DataTable)
        keep = self.rows[table.cursor_row] if self.rows and 0 <= table.cursor_row < len(self.rows) else None
        table.clear()
        self.rows = []
        for status, rel, memory, reason in visible[:PAGE]:
            table.add_row(*self._cells(status, rel, memory, reason), key=rel)
            self.rows.append(rel)
        self._summarise(len(visible))
        if not self.rows:  # nothing shown: the pane must not keep describing a memory no longer listed
            self.shown_path = self._pending_show = None
            self.query_one("#detail-fields", Static).update(plain("No memory shown: nothing matches.", "dim"))
            self.query_one("#detail-body", Static).update("")
        if keep in self.rows:
            table.move_cursor(row=self.rows.index(keep))
        elif self.rows and self.shown_path is None:
            self.show(self.rows[0])

    def show(self, rel: str) -> None:
        """The fields at once (they come from the scan); the body from a worker
        (a scan served from the cache has not read the file yet)."""
        if rel != self.shown_path:
            self.query_one("#browse-detail", VerticalScroll).scroll_home(animate=False)
        self.shown_path = rel
        scan = self.app.scan
        memory = (scan.memories.get(rel) or scan.history.get(rel)) if scan else None
        if memory is None:
            reason = next((e.reason for e in scan.errors if e.path == rel), "not in the store") if scan else ""
            self._unreadable(rel, reason)
            return
        fields = Text()
        fields.append(plain(memory.title, "bold"))
        fields.append("\n")
        fields.append(plain(rel, "dim"))
        for label, value in (
            ("category", memory.category),
            ("status", memory.status),
            ("superseded_by", memory.superseded_by),
            ("retracted_prefs", ", ".join(memory.retracted_prefs) or None),
            ("update_policy", memory.update_policy),
            ("created_at", memory.created_at),
            ("retired", memory.retired_reason),
        ):
            if value:
                fields.append(f"\n{label:>16}: ", style="bold")
                fields.append(plain(value, STATUS_STYLE.get(str(value), "")))

        def shown(body: str) -> None:
            if self.shown_path != rel:
                return
            self.query_one("#detail-fields", Static).update(fields, layout=False)  # fixed height: no re-layout
            self.query_one("#detail-body", Static).update(_preview(body), layout=False)

        self.app.run_blocking(
            lambda: memory.body,
            shown,
            "read the memory",
            "detail",
            exclusive=True,
            on_error=lambda reason: (
                self.shown_path == rel and self._unreadable(rel, f"{reason} (changed since the scan; it will refresh)")
            ),
        )

    def _unreadable(self, rel: str, reason: str) -> None:
        fields = Text()
        fields.append(plain(rel, "bold"))
        fields.append("\ncannot be read: ", style="bold red")
        fields.append(plain(reason))
        self.query_one("#detail-fields", Static).update(fields)
        self.query_one("#detail-body", Static).update("")

    @property
    def selected(self) -> str | None:
        table = self.query_one("#memories", DataTable)
        if not self.rows or not (0 <= table.cursor_row < len(self.rows)):
            return None
        return self.rows[table.cursor_row]

    # -- events -------------------------------------------------------------------
    @on(DataTable.RowHighlighted, "#memories")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        """The list repaints at once; the detail pane follows a moment later and
        coalesces while a key is held (re-laying it out per row would lag the list)."""
        if event.row_key is None or not event.row_key.value:
            return
        self._pending_show = str(event.row_key.value)
        if self._show_timer is None:
            self._show_timer = self.set_timer(0.05, self._show_pending)

    def _show_pending(self) -> None:
        self._show_timer = None
        if self._pending_show and self._pending_show != self.shown_path:
            self.show(self._pending_show)

    @on(Input.Changed, "#browse-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.text_filter = event.value
        self.search_hits = None
        self._relist()

    @on(Input.Submitted, "#browse-filter")
    def _search(self, event: Input.Submitted) -> None:
        query = event.value.strip()
        if not query:
            self.search_hits = None
            self._relist()
            return
        if self.app.as_of is not None:  # the index is of the store now: its hits would not be this point's
            self.notify(
                f"Search needs the store as it is now; as of {self.app.as_of_words()} the text filter "
                "narrows the list.",
                severity="warning",
            )
            return
        index = self.app.index
        if index is None:
            self.notify("The search index is still being built.", severity="warning")
            return

        def done(result) -> None:
            # the vector arm ranks every memory: only the hits the core finds related to the query are listed
            kept = [h for h in result.hits if h.related]
            self.search_hits = {h.path: f"{h.score:.3f} {h.arms}" for h in kept}
            self.search_cut = len(result.hits) - len(kept)
            if result.notice:
                self.notify(result.notice, severity="information")
            self._relist()
            self.query_one("#memories", DataTable).focus()

        lexical = not self.app.want_vectors  # --no-vectors: said as such, never "vectors are still being built"
        self.app.run_blocking(
            lambda: index.search(query, 50, lexical_only=lexical), done, "search", "search", exclusive=True
        )

    @on(DataTable.RowSelected, "#memories")
    def _open(self, event: DataTable.RowSelected) -> None:
        from .trace import MemoryViewScreen

        if event.row_key is not None and self.app.scan and str(event.row_key.value) in self.app.scan.memories:
            self.app.push_screen(MemoryViewScreen(str(event.row_key.value), 1))

    def key_escape(self) -> None:
        if self.search_hits is not None or self.text_filter:
            self.query_one("#browse-filter", Input).value = ""
            self.search_hits = None
            self._relist()

    def action_focus_search(self) -> None:
        self.query_one("#browse-filter", Input).focus()

    def action_cycle_status(self) -> None:
        self.status_filter = STATUS_FILTERS[(STATUS_FILTERS.index(self.status_filter) + 1) % len(STATUS_FILTERS)]
        self._relist()

    def action_cycle_category(self) -> None:
        """Memories by category: all, then each category the store holds, in order."""
        scan = self.app.scan
        found = sorted({category_of(rel, m) for rel, m in scan.memories.items()}) if scan else []
        cycle: list[str | None] = [None, *found]
        at = cycle.index(self.category) if self.category in cycle else 0
        self.category = cycle[(at + 1) % len(cycle)]
        self._relist()

    def action_trace(self) -> None:
        from .trace import TraceScreen

        if self.selected and self.app.scan and self.selected in self.app.scan.memories:
            self.app.push_screen(TraceScreen(self.selected))

    def action_timeline(self) -> None:
        from .timeline import TimelineScreen

        if self.selected:
            self.app.push_screen(TimelineScreen(self.selected))

    def action_restore(self) -> None:
        rel = self.selected
        if rel is None:
            self.notify("Select a memory to restore.")
            return
        session = self.app.session

        def ready(plan: Plan) -> None:
            if not plan.changes:
                self.notify(f"{rel} is not archived; nothing to restore.")
                return
            self.app.push_screen(
                ConfirmModal(f"Restore {rel}?", plan_preview(plan), "Restore"), lambda ok: ok and self._apply(plan)
            )

        self.app.run_blocking(
            lambda: session.plan_op("restore", rel, reason="restored in palinode-tui"),
            ready,
            "plan the restore",
            "plan",
        )

    def _apply(self, plan: Plan) -> None:
        def done(applied: Applied) -> None:
            self.app.record("action", f"{plan.op} {plan.target}", [applied.commit or ""])
            self.notify(f"{plan.commit_subject} → {(applied.commit or '')[:7]}", title="Committed")
            self.app.scan_store({plan.target, plan.history_rel})

        self.app.run_blocking(lambda: self.app.session.apply(plan), done, f"{plan.op} {plan.target}", "apply")
