"""Trace: why a memory is as it is. Also the plain memory viewer residue jumps to.
Both show the store the app shows: now, or as of a point of history."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Header, Static, Tree
from textual.widgets.tree import TreeNode

from palinode_core.api import Pointer, Trace

from ..render import body_text, colour_diff, plain, short_date, short_sha
from ..widgets import AsOfBanner, KeyedTable
from .base import ModeScreen, footer


class TraceScreen(ModeScreen):
    SCOPE = "trace"

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        self.trace: Trace | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield AsOfBanner()
        with Horizontal(classes="main"):
            with Vertical(id="trace-left"):
                yield Tree(plain(self.path, "bold"), id="chain", classes="pane")
                yield Static(id="trace-deliveries")
                yield Static(id="trace-why")
            with Vertical(id="trace-right"):
                yield KeyedTable(id="trace-commits", classes="pane")
                with VerticalScroll(id="trace-diff-box", classes="pane"):
                    yield Static(id="trace-diff")
        yield footer()

    def on_mount(self) -> None:
        self.query_one("#trace-commits", KeyedTable).add_columns("commit", "date", "subject")
        self.query_one("#chain", Tree).auto_expand = False  # Enter follows a memory; it never folds the chain
        super().on_mount()

    def store_updated(self, changed: object) -> None:
        session = self.app.session
        self.app.run_blocking(
            lambda: session.trace(self.path), self._fill, "trace", "trace", exclusive=True, on_error=self._untraceable
        )
        path = self.path
        self.app.run_blocking(
            lambda: session.delivery_count(path),
            self._delivered,
            "count deliveries",
            "trace-deliveries",
            exclusive=True,
            on_error=lambda reason: self._delivered(None),
        )

    def _delivered(self, count: int | None) -> None:
        words = (
            "no retrieval log (.audit/retrievals.jsonl): deliveries unknown"
            if count is None
            else f"delivered {count} time(s) by Palinode's retrieval log, under any name it had (v in Review: what, when)"
        )
        self.query_one("#trace-deliveries", Static).update(plain(words, "bold" if count else "dim"))

    def _untraceable(self, reason: str) -> None:
        # e.g. as of a point before the memory existed: said in place, the rest emptied
        self.trace = None
        self.query_one("#chain", Tree).clear()
        self.query_one("#trace-why", Static).update(plain(reason, "yellow"))
        self.query_one("#trace-commits", KeyedTable).refill(())
        self.query_one("#trace-diff", Static).update("")

    def _fill(self, trace: Trace) -> None:
        self.trace = trace
        self._fill_chain(trace)
        self.query_one("#trace-why", Static).update(explain(trace))
        table = self.query_one("#trace-commits", KeyedTable)
        table.refill(
            (c.sha, (plain(short_sha(c.sha), "dim"), plain(short_date(c.date)), plain(c.subject)))
            for c in trace.commits
        )
        if trace.commits:
            self._show_commit(table.selected_key or trace.commits[0].sha)

    def _fill_chain(self, trace: Trace) -> None:
        tree = self.query_one("#chain", Tree)
        tree.clear()
        tree.root.set_label(plain(f"{trace.path}  ({trace.status})", "bold"))
        forward = tree.root.add(plain("superseded by →", "bold"), expand=True)
        node = forward
        for i, hop in enumerate(trace.chain_forward):
            last = i == len(trace.chain_forward) - 1 and not trace.chain_note
            node = node.add_leaf(plain(hop), data=hop) if last else node.add(plain(hop), data=hop, expand=True)
        if trace.chain_note:
            node.add_leaf(plain(trace.chain_note, "bold red"))
        if not trace.chain_forward:
            forward.add_leaf(plain("nothing (not superseded)", "dim"))
        backward = tree.root.add(plain("← supersedes", "bold"), expand=True)

        def add_back(parent: TreeNode, items: tuple[Pointer, ...]) -> None:
            for item in items:
                label = plain(item.path + ("  ↺ cycle" if item.cycle else ""), "red" if item.cycle else "")
                if item.pointers:
                    add_back(parent.add(label, data=item.path, expand=True), item.pointers)
                else:
                    parent.add_leaf(label, data=item.path)

        add_back(backward, trace.chain_backward)
        if not trace.chain_backward:
            backward.add_leaf(plain("nothing points here", "dim"))
        tree.root.expand()

    @on(KeyedTable.RowHighlighted, "#trace-commits")
    def _commit(self, event: KeyedTable.RowHighlighted) -> None:
        if event.row_key is not None and event.row_key.value:
            self._show_commit(str(event.row_key.value))

    def _show_commit(self, sha: str) -> None:
        session = self.app.session

        def show(diff: str) -> None:
            self.query_one("#trace-diff", Static).update(colour_diff(diff.splitlines()))

        self.app.run_blocking(
            lambda: session.commit_diff(sha, self.path), show, "show commit", "trace-diff", exclusive=True
        )

    def action_close(self) -> None:
        self.dismiss(None)

    @on(Tree.NodeSelected, "#chain")
    def _node_selected(self, _event: Tree.NodeSelected) -> None:
        self.action_follow()

    def action_follow(self) -> None:
        """Enter on a memory of the chain: its own trace, over this one (Esc comes back)."""
        node = self.query_one("#chain", Tree).cursor_node
        path = node.data if node is not None else None
        if isinstance(path, str) and path != self.path:
            self.app.push_screen(TraceScreen(path))

    def action_timeline(self) -> None:
        from .timeline import TimelineScreen

        self.app.push_screen(TimelineScreen(self.path))


def explain(trace: Trace) -> Text:
    """The retirement, the strikes and the history lines, in words."""
    why = Text()
    if trace.retired:
        why.append("retired: ", style="bold")
        why.append(plain(trace.retired, "yellow"))
        why.append("\n")
    if trace.retired_by:
        r = trace.retired_by
        why.append("forgotten by ", style="bold")
        why.append(plain(r.request, "cyan"))
        why.append(': "')
        why.append(plain(r.pref, "bold"))
        why.append(f'"  r:{r.rid}  coverage {r.coverage:.4f}  route {r.route}\n')
    for r in trace.retractions:
        why.append('struck for "', style="bold")
        why.append(plain(r.pref, "bold"))
        why.append(f'"  r:{r.rid}  {r.markers} marker(s)  by ')
        why.append(plain(r.request or "an unknown request", "cyan"))
        why.append(f"  coverage {r.coverage:.4f}\n")
    why.append("\nhistory (", style="bold")
    why.append_text(plain(trace.history_file or "no sibling", "bold"))
    why.append("):\n", style="bold")
    for h in trace.history:
        why.append(plain(f"[{h.when}] ", "dim"))
        why.append(plain(h.text))
        why.append("\n")
    return why


class MemoryViewScreen(ModeScreen):
    """One memory's text with a line marked: where residue's jump lands."""

    SCOPE = "view"

    def __init__(self, path: str, line: int) -> None:
        super().__init__()
        self.path, self.line = path, line

    def compose(self) -> ComposeResult:
        yield Header()
        yield AsOfBanner()
        yield Static(plain(f"{self.path}  line {self.line}", "bold"), id="view-title")
        with VerticalScroll(id="view-box"):
            yield Static(id="view-body")
        yield footer()

    def store_updated(self, changed: object) -> None:
        memory = self.app.scan.memories.get(self.path) if self.app.scan else None

        def read() -> tuple[str, str, int] | None:
            # The text may come from disk now (a scan from the cache keeps no bodies).
            if memory is None or memory.body_line_offset is None:
                return None
            return memory.text, memory.body, memory.body_line_offset

        self.app.run_blocking(
            read,
            self._show,
            "read the memory",
            "memory-view",
            exclusive=True,
            on_error=lambda reason: self.query_one("#view-body", Static).update(
                plain(f"not readable: {reason}", "red")
            ),
        )

    def _show(self, read: tuple[str, str, int] | None) -> None:
        if read is None:
            where = f" as of {self.app.as_of_words()}" if self.app.as_of is not None else ""
            self.query_one("#view-body", Static).update(plain(f"not in the store{where}, or not readable", "red"))
            return
        whole, body, offset = read
        text = Text()
        text.append(plain(whole[: len(whole) - len(body)], "dim"))
        for number, line in enumerate(body_text(body).split("\n", allow_blank=True), start=offset + 1):
            if number == self.line:
                line.stylize("reverse")
            text.append_text(line)
            text.append("\n")
        self.query_one("#view-body", Static).update(text)
        self.query_one("#view-box", VerticalScroll).scroll_to(y=max(0, self.line - 5), animate=False)

    def action_close(self) -> None:
        self.dismiss(None)

    def action_trace(self) -> None:
        self.app.push_screen(TraceScreen(self.path))

    def action_timeline(self) -> None:
        from .timeline import TimelineScreen

        self.app.push_screen(TimelineScreen(self.path))
