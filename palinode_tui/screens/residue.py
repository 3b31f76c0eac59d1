"""Residue: what could not be forgotten for a pref, every surviving mention
with its reason, a jump to the text, a strike of one live sentence by hand
for the pref's request, a flag with a note; integrity problems."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Input, Static

from palinode_core.api import ForgetApplied, Mention, PalinodeError, Plan, RequestState, normalize_pref

from ..render import colour_diff, plain, plan_preview, safe
from ..widgets import AsOfBanner, ConfirmModal, KeyedTable, ListFilter, ModeTabs, NoteModal, StatusLine
from .base import ModeScreen, footer

KIND_STYLE = {
    "live": "bold red",
    "unforgettable": "bold yellow",
    "struck": "magenta",
    "archived": "dim",
    "request": "cyan",
}
# Why a mention of each kind other than "live" is not struck from here.
NOT_STRUCK = {
    "struck": "it is struck already",
    "archived": "its memory is archived: out of recall already",
    "request": "it is the request's own record, kept on purpose",
}


def request_for(states: list[RequestState], pref: str) -> str | None:
    """The forget request whose preference ``pref`` is (the first one still
    standing: a withdrawn or dismissed request strikes nothing more)."""
    norm = normalize_pref(pref)
    return next(
        (st.path for st in states if st.state not in ("withdrawn", "dismissed") and normalize_pref(st.pref) == norm),
        None,
    )


class ResidueScreen(ModeScreen):
    SCOPE = "residue"

    def __init__(self) -> None:
        super().__init__()
        self.pref = ""
        self.mentions: list[Mention] = []
        self.by_key: dict[str, Mention] = {}
        self.flagged: dict[tuple[object, object], str] = {}  # (path, text) -> the flag's note

    def compose(self) -> ComposeResult:
        yield ModeTabs("residue")
        yield AsOfBanner()
        with Vertical(classes="main"):
            with Horizontal(id="residue-bar"):
                yield Input(
                    placeholder="preference, e.g. I know Wilhelmina Cragg (Enter)", id="residue-pref", classes="field"
                )
            yield Static(id="residue-summary")
            yield ListFilter("mentions")
            yield KeyedTable(id="mentions", classes="pane")
            yield Static(id="mention-detail")
            yield Static("Integrity", id="integrity-title")
            yield DataTable(id="problems", cursor_type="row", classes="pane")
        yield StatusLine()
        yield footer()

    def on_mount(self) -> None:
        # Fixed widths: auto widths would depend on which result filled the table
        # first and truncate later rows ("unforge…").
        mentions = self.query_one("#mentions", KeyedTable)
        for label, width in (("", 1), ("kind", 13), ("where", 30), ("reason", 34), ("text", 60)):
            mentions.add_column(label, width=width)
        mentions.key_column = 2  # where: whole at 120 columns, the reason and text give way (the detail shows them)
        problems = self.query_one("#problems", DataTable)
        for label, width in (("severity", 8), ("path", 34), ("problem", 24), ("detail", 80)):
            problems.add_column(label, width=width)
        # A pref set before the screen was composed (Review's x on a fresh screen).
        self.query_one("#residue-pref", Input).value = safe(self.pref)
        super().on_mount()
        self.query_one("#mentions", KeyedTable).focus()

    def set_pref(self, pref: str) -> None:
        self.pref = pref
        if not self.is_mounted:
            return  # on_mount shows it and runs the residue
        # An Input draws its value as it is: only the made-safe text goes in,
        # the real pref stays here.
        self.query_one("#residue-pref", Input).value = safe(pref)
        self._run()

    @on(Input.Submitted, "#residue-pref")
    def _submitted(self, event: Input.Submitted) -> None:
        typed = event.value.strip()
        if typed != safe(self.pref):
            self.pref = typed
        self._run()
        self.query_one("#mentions", KeyedTable).focus()

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
            return pref, mentions, session.integrity(), session.flags()

        self.app.run_blocking(work, self._fill, "check residue", "residue", exclusive=True)

    def _fill(self, result) -> None:
        pref, mentions, problems, flags = result
        # a flag names its mention by file and text (its line may have moved since); the latest note wins
        self.flagged = {(f.get("path"), f.get("text")): str(f.get("note") or "") for f in flags}
        if not self.pref and pref:
            self.pref = pref
            self.query_one("#residue-pref", Input).value = safe(pref)
        order = {"live": 0, "unforgettable": 1, "struck": 2, "archived": 3, "request": 4}
        self.mentions = sorted(mentions, key=lambda m: (order.get(m.kind, 9), m.path, m.line))
        self.by_key = {}
        rows = []
        repeats: dict[str, int] = {}
        for m in self.mentions:
            base = f"{m.kind}:{m.path}:{m.line}:{hash(m.text)}"  # stable across refills of one session
            n = repeats[base] = repeats.get(base, 0) + 1  # the same sentence again on a line: counted, O(1)
            key = base if n == 1 else f"{base}#{n}"
            self.by_key[key] = m
            rows.append(
                (
                    key,
                    (
                        plain("⚑" if (m.path, m.text) in self.flagged else "", "bold yellow"),
                        plain(m.kind, KIND_STYLE.get(m.kind, "")),
                        plain(f"{m.path}:{m.line}"),
                        plain(m.reason, "dim"),
                        plain(m.text[:120]),
                    ),
                )
            )
        self.query_one("#mentions", KeyedTable).refill(rows)
        self._show_mention()
        counts: dict[str, int] = {}
        for m in mentions:
            counts[m.kind] = counts.get(m.kind, 0) + 1
        summary = Text()
        if self.pref:
            summary.append("residue of ", style="dim")
            summary.append(plain(self.pref, "bold"))
            summary.append(": ")
            summary.append(
                " · ".join(f"{n} {k}" for k, n in sorted(counts.items(), key=lambda kv: order.get(kv[0], 9)))
                or "no surviving mention"
            )
            flagged = sum(1 for m in mentions if (m.path, m.text) in self.flagged)
            if flagged:
                summary.append(f" · ⚑ {flagged} flagged", style="bold yellow")
            if counts.get("live") or counts.get("unforgettable"):
                summary.append("   ⚠ still recallable", style="bold red")
        self.query_one("#residue-summary", Static).update(summary)
        ptable = self.query_one("#problems", DataTable)
        ptable.clear()
        for p in problems:
            ptable.add_row(
                plain(p.severity, "bold red" if p.severity == "error" else "yellow"),
                plain(p.path),
                plain(p.kind),
                plain(p.detail),
            )
        self.query_one("#integrity-title", Static).update(
            plain(
                f"Integrity: {len(problems)} problem(s)"
                if problems
                else "Integrity: markers, records and history agree",
                "bold red" if any(p.severity == "error" for p in problems) else "bold green",
            )
        )

    @on(KeyedTable.RowHighlighted, "#mentions")
    def _mention_highlighted(self, _event: KeyedTable.RowHighlighted) -> None:
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
            note = self.flagged.get((mention.path, mention.text))
            if note is not None:
                text.append("\n⚑ flagged: ", style="bold yellow")
                text.append(plain(note or "(no note)"))
        self.query_one("#mention-detail", Static).update(text)

    def _selected(self) -> Mention | None:
        key = self.query_one("#mentions", KeyedTable).selected_key
        return None if key is None else self.by_key.get(key)

    def action_jump(self) -> None:
        from .trace import MemoryViewScreen

        mention = self._selected()
        if mention is not None:
            self.app.push_screen(MemoryViewScreen(mention.path, mention.line))

    @on(KeyedTable.RowSelected, "#mentions")
    def _row_selected(self, _event) -> None:
        self.action_jump()

    def action_strike(self) -> None:
        mention = self._selected()
        if mention is None:
            self.notify("Select a live mention to strike.")
            return
        if mention.kind == "unforgettable":
            self._offer_flag(
                mention,
                f"{mention.path}:{mention.line} cannot be struck ({mention.reason}). Flag it with a note instead?",
            )
            return
        if mention.kind != "live":
            self.notify(
                f"Nothing to strike at {mention.path}:{mention.line}: {NOT_STRUCK.get(mention.kind, mention.kind)}."
            )
            return
        session, pref = self.app.session, self.pref

        def work() -> tuple[str, Plan]:
            request = request_for(session.request_states(), pref)
            if request is None:
                raise PalinodeError(
                    f'Striking needs a forget request for "{pref}": no pending or applied request '
                    "in this store states it."
                )
            return request, session.plan_strike(request, mention.path, mention.line, mention.text)

        def refused(reason: str) -> None:
            self.notify(reason, title="Not struck", severity="warning", timeout=10)
            self._run()  # the list may be out of date

        self.app.run_blocking(
            work,
            lambda result: self._confirm_strike(mention, *result),
            "plan the strike",
            "residue-strike",
            exclusive=True,
            on_error=refused,
        )

    def _confirm_strike(self, mention: Mention, request: str, plan: Plan) -> None:
        body = Text()
        body.append("For request ", style="bold")
        body.append_text(plain(request, "bold"))
        body.append(': "', style="bold")
        body.append_text(plain(self.pref, "bold"))
        body.append('"\n\n', style="bold")
        body.append_text(plan_preview(plan))
        body.append("\n")
        body.append_text(colour_diff(plan.diff().splitlines()))
        body.append(
            "\nOne commit. Undo it from the Undo screen (an undo takes back every strike of this request in the file).",
            style="italic",
        )

        def done(applied: ForgetApplied) -> None:
            commits = [c["commit"] for c in applied.commits] + [applied.ledger_commit or ""]
            self.app.record("action", f"strike {mention.path}:{mention.line} for {request}", commits)
            self.notify(
                f"{plan.commit_subject} → {(commits[0] or '')[:7]}; your decision is in the ledger", title="Struck"
            )
            self.app.scan_store(None)

        self.app.push_screen(
            ConfirmModal(f"Strike this sentence of {mention.path}?", body, "Strike"),
            lambda ok: (
                ok
                and self.app.run_blocking(
                    lambda: self.app.session.strike(plan, mention.line, mention.text),
                    done,
                    f"strike {mention.path}",
                    "apply",
                )
            ),
        )

    def action_flag(self) -> None:
        mention = self._selected()
        if mention is not None:
            self._offer_flag(mention, "Flag this mention")

    def _offer_flag(self, mention: Mention, title: str) -> None:
        context = Text()
        context.append(plain(f"{mention.path}:{mention.line} ({mention.kind})\n", "bold"))
        context.append(plain(mention.text))
        session, pref = self.app.session, self.pref

        def work(note: str) -> str | None:
            # recorded under the pref's request when there is one, so its review shows the flag
            return session.flag(
                mention.path,
                mention.line,
                mention.kind,
                mention.text,
                note,
                request_for(session.request_states(), pref) if pref else None,
            )

        def save(note: str | None) -> None:
            if not note:
                return
            self.app.run_blocking(
                lambda: work(note),
                lambda sha: (
                    self.app.record("action", f"flag {mention.path}:{mention.line}: {note}", [sha or ""]),
                    self.notify(f"Flagged {mention.path}:{mention.line}"),
                    self._run(),  # the list marks it
                ),
                "flag",
                "apply",
            )

        self.app.push_screen(NoteModal(title, context, "Flag"), save)
