"""Trace: why a memory is as it is. Also the plain memory viewer residue jumps to."""
from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static, Tree

from palinode_core.errors import PalinodeError

from ..render import body_text, plain
from .base import ModeScreen


class TraceScreen(ModeScreen):
    SCOPE = "trace"

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        self.commits: list[dict] = []

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(classes="main"):
            with Vertical(id="trace-left"):
                yield Tree(plain(self.path, "bold"), id="chain")
                yield Static(id="trace-why")
            with Vertical(id="trace-right"):
                yield DataTable(id="trace-commits", cursor_type="row")
                with VerticalScroll(id="trace-diff-box"):
                    yield Static(id="trace-diff")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#trace-commits", DataTable).add_columns("commit", "date", "subject")
        super().on_mount()

    def store_updated(self, changed: object) -> None:
        self.app.run_blocking(lambda: self.app.session.trace(self.path).to_dict(), self._fill, "trace", "trace",
                              exclusive=True)

    def _fill(self, data: dict) -> None:
        tree = self.query_one("#chain", Tree)
        tree.clear()
        tree.root.set_label(plain(f"{data['path']}  ({data['status']})", "bold"))
        forward = tree.root.add(plain("superseded by →", "bold"), expand=True)
        node = forward
        hops = data["chain_forward"]
        for i, hop in enumerate(hops):
            last = i == len(hops) - 1 and not data["chain_note"]
            node = node.add_leaf(plain(hop)) if last else node.add(plain(hop), expand=True)
        if data["chain_note"]:
            node.add_leaf(plain(data["chain_note"], "bold red"))
        if not data["chain_forward"]:
            forward.add_leaf(plain("nothing (not superseded)", "dim"))
        backward = tree.root.add(plain("← supersedes", "bold"), expand=True)

        def add_back(parent, items) -> None:
            for item in items:
                label = plain(item["path"] + ("  ↺ cycle" if item["cycle"] else ""), "red" if item["cycle"] else "")
                if item["from"]:
                    add_back(parent.add(label, expand=True), item["from"])
                else:
                    parent.add_leaf(label)

        add_back(backward, data["chain_backward"])
        if not data["chain_backward"]:
            backward.add_leaf(plain("nothing points here", "dim"))
        tree.root.expand()
        why = Text()
        if data["retired"]:
            why.append("retired: ", style="bold")
            why.append(plain(data["retired"], "yellow"))
            why.append("\n")
        if data["retired_by"]:
            r = data["retired_by"]
            why.append("forgotten by ", style="bold")
            why.append(plain(r["request"], "cyan"))
            why.append(": \"")
            why.append(plain(r["pref"], "bold"))
            why.append(f"\"  r:{r['rid']}  coverage {r['coverage']:.4f}  route {r['route']}\n")
        for r in data["retractions"]:
            why.append("struck for \"", style="bold")
            why.append(plain(r["pref"], "bold"))
            why.append(f"\"  r:{r['rid']}  {r['markers']} marker(s)  by ")
            why.append(plain(r["request"] or "an unknown request", "cyan"))
            why.append(f"  coverage {r['coverage']:.4f}\n")
        why.append(f"\nhistory ({data['history_file'] or 'no sibling'}):\n", style="bold")
        for h in data["history"]:
            why.append(plain(f"[{h['when']}] ", "dim"))
            why.append(plain(h["text"]))
            why.append("\n")
        self.query_one("#trace-why", Static).update(why)
        self.commits = data["commits"]
        table = self.query_one("#trace-commits", DataTable)
        table.clear()
        for c in self.commits:
            table.add_row(plain(c["sha"][:7], "dim"), plain(c["date"][:16].replace("T", " ")), plain(c["subject"]),
                          key=c["sha"])
        if self.commits:
            self._show_commit(self.commits[0]["sha"])

    @on(DataTable.RowHighlighted, "#trace-commits")
    def _commit(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key is not None and event.row_key.value:
            self._show_commit(str(event.row_key.value))

    def _show_commit(self, sha: str) -> None:
        store = self.app.store

        def show(diff: str) -> None:
            text = Text()
            for line in diff.splitlines():
                style = ("green" if line.startswith("+") else "red" if line.startswith("-") else
                         "cyan" if line.startswith("@@") else "dim")
                text.append(plain(line + "\n", style))
            self.query_one("#trace-diff", Static).update(text)

        self.app.run_blocking(lambda: store.git.diff(sha, self.path), show, "show commit", "trace-diff", exclusive=True)

    def action_close(self) -> None:
        self.dismiss(None)


class MemoryViewScreen(Screen):
    """One memory's text with a line marked: where residue's jump lands."""

    BINDINGS = [Binding("escape", "close", "Back"), Binding("t", "trace", "Trace")]

    def __init__(self, path: str, line: int) -> None:
        super().__init__()
        self.path, self.line = path, line

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(plain(f"{self.path}  line {self.line}", "bold"), id="view-title")
        with VerticalScroll(id="view-box"):
            yield Static(id="view-body")
        yield Footer()

    def on_mount(self) -> None:
        memory = self.app.scan.memories.get(self.path) if self.app.scan else None
        try:
            offset = memory.body_line_offset if memory is not None else None  # may read the file now
        except PalinodeError as exc:
            self.query_one("#view-body", Static).update(plain(f"not readable: {exc}", "red"))
            return
        if memory is None or offset is None:
            self.query_one("#view-body", Static).update(plain("not readable", "red"))
            return
        head = memory.text[: len(memory.text) - len(memory.body)]
        text = Text()
        text.append(plain(head, "dim"))
        body = body_text(memory.body)
        lines = body.split("\n", allow_blank=True)
        for number, line in enumerate(lines, start=offset + 1):
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
