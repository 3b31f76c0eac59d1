"""Residue: what could not be forgotten for a pref, every surviving mention
with its reason, a jump to the text, a flag with a note; integrity problems."""
from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Input, Static

from palinode_core.inspect.residue import Mention

from ..render import plain, safe
from ..widgets import AsOfBanner, NoteModal, StatusLine, ModeTabs
from .base import ModeScreen, footer

KIND_STYLE = {"live": "bold red", "unforgettable": "bold yellow", "struck": "magenta", "archived": "dim",
              "request": "cyan"}


class ResidueScreen(ModeScreen):
    SCOPE = "residue"

    def __init__(self) -> None:
        super().__init__()
        self.pref = ""
        self.mentions: list[Mention] = []

    def compose(self) -> ComposeResult:
        yield ModeTabs("residue")
        yield AsOfBanner()
        with Vertical(classes="main"):
            with Horizontal(id="residue-bar"):
                yield Input(placeholder="preference, e.g. I know Wilhelmina Cragg (Enter)", id="residue-pref")
            yield Static(id="residue-summary")
            yield DataTable(id="mentions", cursor_type="row", classes="pane")
            yield Static(id="mention-detail")
            yield Static("Integrity", id="integrity-title")
            yield DataTable(id="problems", cursor_type="row", classes="pane")
        yield StatusLine()
        yield footer()

    def on_mount(self) -> None:
        # Fixed widths: auto widths would depend on which result filled the table
        # first and truncate later rows ("unforge…").
        mentions = self.query_one("#mentions", DataTable)
        for label, width in (("kind", 13), ("where", 30), ("reason", 34), ("text", 60)):
            mentions.add_column(label, width=width)
        problems = self.query_one("#problems", DataTable)
        for label, width in (("severity", 8), ("path", 34), ("problem", 24), ("detail", 80)):
            problems.add_column(label, width=width)
        super().on_mount()
        self.query_one("#mentions", DataTable).focus()

    def set_pref(self, pref: str) -> None:
        # An Input draws its value as it is: only the made-safe text goes in,
        # the real pref stays here.
        self.query_one("#residue-pref", Input).value = safe(pref)
        self.pref = pref
        self._run()

    @on(Input.Submitted, "#residue-pref")
    def _submitted(self, event: Input.Submitted) -> None:
        typed = event.value.strip()
        if typed != safe(self.pref):
            self.pref = typed
        self._run()
        self.query_one("#mentions", DataTable).focus()

    def store_updated(self, changed: object) -> None:
        self._run()

    def _run(self) -> None:
        session = self.app.session
        if self.app.scan is None:
            return
        asked = self.pref

        def work():
            pref = asked
            if not pref:
                states = session.request_states()
                pref = states[0].pref if states else ""
            mentions = session.residue(pref) if pref else []
            return pref, mentions, session.integrity()

        self.app.run_blocking(work, self._fill, "check residue", "residue", exclusive=True)

    def _fill(self, result) -> None:
        pref, mentions, problems = result
        if not self.pref and pref:
            self.pref = pref
            self.query_one("#residue-pref", Input).value = safe(pref)
        order = {"live": 0, "unforgettable": 1, "struck": 2, "archived": 3, "request": 4}
        self.mentions = sorted(mentions, key=lambda m: (order.get(m.kind, 9), m.path, m.line))
        table = self.query_one("#mentions", DataTable)
        table.clear()
        for i, m in enumerate(self.mentions):
            table.add_row(plain(m.kind, KIND_STYLE.get(m.kind, "")), plain(f"{m.path}:{m.line}"), plain(m.reason, "dim"),
                          plain(m.text[:120]), key=str(i))
        self._show_mention()
        counts: dict[str, int] = {}
        for m in mentions:
            counts[m.kind] = counts.get(m.kind, 0) + 1
        summary = Text()
        if self.pref:
            summary.append("residue of ", style="dim")
            summary.append(plain(self.pref, "bold"))
            summary.append(": ")
            summary.append(" · ".join(f"{n} {k}" for k, n in sorted(counts.items(), key=lambda kv: order.get(kv[0], 9)))
                           or "no surviving mention")
            if counts.get("live") or counts.get("unforgettable"):
                summary.append("   ⚠ still recallable", style="bold red")
        self.query_one("#residue-summary", Static).update(summary)
        ptable = self.query_one("#problems", DataTable)
        ptable.clear()
        for p in problems:
            ptable.add_row(plain(p.severity, "bold red" if p.severity == "error" else "yellow"), plain(p.path),
                           plain(p.kind), plain(p.detail))
        self.query_one("#integrity-title", Static).update(
            plain(f"Integrity: {len(problems)} problem(s)" if problems else "Integrity: markers, records and history agree",
                  "bold red" if any(p.severity == "error" for p in problems) else "bold green"))

    @on(DataTable.RowHighlighted, "#mentions")
    def _mention_highlighted(self, _event: DataTable.RowHighlighted) -> None:
        self._show_mention()

    def _show_mention(self) -> None:
        """The whole text and reason of the selected mention (the table's
        columns may be cut on a small terminal)."""
        mention = self._selected()
        text = Text()
        if mention is not None:
            text.append(plain(f"{mention.path}:{mention.line} ", "bold"))
            text.append(plain(mention.reason, "dim"))
            text.append("\n")
            text.append(plain(mention.text))
        self.query_one("#mention-detail", Static).update(text)

    def _selected(self) -> Mention | None:
        table = self.query_one("#mentions", DataTable)
        if not self.mentions or not (0 <= table.cursor_row < len(self.mentions)):
            return None
        return self.mentions[table.cursor_row]

    def action_jump(self) -> None:
        from .trace import MemoryViewScreen
        mention = self._selected()
        if mention is not None:
            self.app.push_screen(MemoryViewScreen(mention.path, mention.line))

    @on(DataTable.RowSelected, "#mentions")
    def _row_selected(self, _event) -> None:
        self.action_jump()

    def action_flag(self) -> None:
        mention = self._selected()
        if mention is None:
            return
        context = Text()
        context.append(plain(f"{mention.path}:{mention.line} ({mention.kind})\n", "bold"))
        context.append(plain(mention.text))

        def save(note: str | None) -> None:
            if not note:
                return
            self.app.run_blocking(
                lambda: self.app.session.flag(mention.path, mention.line, mention.kind, mention.text, note),
                lambda sha: (self.app.record("action", f"flag {mention.path}:{mention.line}: {note}", [sha or ""]),
                             self.notify(f"Flagged {mention.path}:{mention.line}")),
                "flag", "apply")

        self.app.push_screen(NoteModal("Flag this mention", context, "Flag"), save)
