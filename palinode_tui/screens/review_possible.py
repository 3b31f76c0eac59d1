"""Review's list of possible requests (issue 44): requests in other words ("please stop
bringing that up", "I no longer live in Berlin") and blanket ones, found in the store
and shown for a person to confirm or dismiss, never acted on alone. Each row says how
sure; the highlighted one shows its sentence, its memory, what it points at and what
confirming would do. Enter on it decides: confirming previews the request memory it
writes (plan, then apply: one commit with the ledger's record), dismissing records a
note so it does not come back. Shown only while there are some, and only for the store
as it is now. A base of ReviewScreen (review.py)."""

from __future__ import annotations

from contextlib import suppress

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from palinode_core.api import ConfirmPlan, PossibleRequest

from ..render import plain
from ..widgets import ConfirmModal, KeyedTable, NoteModal
from .base import ModeScreen

WHERE = {
    "object": "what it names",
    "previous": "the sentence before it",
    "note": "the same day's note",
    "scope": "a blanket scope: you choose what it covers",
    "unknown": "nothing found to point at",
}


def possible_widgets() -> ComposeResult:
    yield Static(id="possible-summary")
    yield KeyedTable(id="possible", classes="pane")
    yield Static(id="possible-detail")


def possible_detail(cand: PossibleRequest) -> Text:
    out = Text()
    out.append(f"{cand.sure_words} ({cand.sure:.2f}) · {cand.kind.replace('_', ' ')} · ", style="bold")
    out.append(plain(f"{cand.path}:{cand.line}"))
    out.append("\n“")
    out.append(plain(cand.sentence))
    out.append("”\nevidence: ", style="dim")
    out.append(plain(f"{cand.cue} ({cand.why})"))
    ref = cand.referent
    out.append("\nrefers to: ", style="dim")
    out.append(plain(WHERE.get(ref.where, ref.where)))
    if ref.path and ref.where not in ("object", "scope"):
        out.append(plain(f" {ref.path}" + (f":{ref.line}" if ref.line else "")))
    if ref.text:
        out.append(" “")
        out.append(plain(ref.text))
        out.append("”")
    for carrier in cand.carriers:
        out.append("\nlikely in: ", style="dim")
        how = "its words" if carrier.how == "words" else f"meaning {carrier.similarity or 0:.2f}"
        out.append(plain(f"{carrier.path} ({how}) “{carrier.text}”"))
    out.append("\nconfirming would: ", style="dim")
    out.append(plain(cand.effect))
    return out


class DecideModal(ModalScreen["tuple[str, str] | None"]):
    """Confirm (with the preference to write, editable) or dismiss one possible
    request; the default is Cancel."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    DecideModal { align: center middle; }
    DecideModal > Vertical { width: 96; max-width: 100%; height: auto; border: thick $accent; background: $surface; padding: 1 2; }
    DecideModal Horizontal { height: auto; align-horizontal: right; margin-top: 1; }
    DecideModal Button { margin-left: 2; }
    """

    def __init__(self, cand: PossibleRequest) -> None:
        super().__init__()
        self.cand = cand

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(plain("A possible request: confirm it, or dismiss it?", "bold"))
            yield Static(possible_detail(self.cand))
            yield Label(plain("preference to forget (first person: 'my …' or 'I …'):"))
            yield Input(value=self.cand.pref or "", placeholder="name the one fact to forget", id="decide-pref")
            with Horizontal():
                yield Button("Cancel", id="cancel", variant="primary")
                yield Button("Dismiss…", id="dismiss", variant="warning")
                yield Button("Confirm…", id="confirm", variant="error")

    def on_mount(self) -> None:
        self.query_one("#cancel", Button).focus()

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#dismiss")
    def _dismiss_it(self) -> None:
        self.dismiss(("dismiss", ""))

    @on(Button.Pressed, "#confirm")
    def _confirm(self) -> None:
        pref = self.query_one("#decide-pref", Input).value.strip()
        if not pref:
            self.notify("Name the fact to forget first.", severity="warning", markup=False)
            return
        self.dismiss(("confirm", pref))


def confirm_preview(plan: ConfirmPlan) -> Text:
    out = Text()
    out.append("Writes ")
    out.append(plain(plan.request, "bold"))
    out.append(" (a forget request in Palinode's format, ")
    out.append(plain(f'"{plan.pref}" r:{plan.rid}'))
    out.append("), naming ")
    out.append(plain(plan.candidate.path))
    out.append(" as its source, with the ledger's record of who confirmed it, in one commit:\n\n")
    out.append(plain(plan.text, "green"))
    out.append("\nNothing else changes: the request then waits in Review for its own plan.", style="dim")
    return out


class PossibleRequests(ModeScreen):
    """The list, its detail, and the decision on the highlighted row."""

    def __init__(self) -> None:
        super().__init__()
        self.possible: list[PossibleRequest] = []

    def mount_possible(self) -> None:
        self.query_one("#possible", KeyedTable).add_columns("sure", "kind", "sentence", "memory")
        self._show_possible([])

    def list_possible(self) -> None:
        """Read the possible requests of the store as it is now (never of a point of history)."""
        if self.app.as_of is not None:
            self._show_possible([])
            return
        session = self.app.session

        def listed(found: list[PossibleRequest]) -> None:
            if session is self.app.session:
                with suppress(NoMatches):  # the screen was taken down meanwhile
                    self._show_possible(found)

        self.app.run_blocking(session.possible_requests, listed, "list possible requests", "possible", exclusive=True)

    def _show_possible(self, found: list[PossibleRequest]) -> None:
        self.possible = found
        shown = bool(found)
        for wid in ("#possible-summary", "#possible", "#possible-detail"):
            self.query_one(wid).display = shown
        table = self.query_one("#possible", KeyedTable)
        table.refill(
            (
                c.id,
                (
                    plain(f"{c.sure:.2f}", "bold" if c.sure >= 0.85 else ""),
                    plain(c.kind.replace("_", " ")),
                    plain(c.sentence),
                    plain(f"{c.path}:{c.line}", "dim"),
                ),
            )
            for c in found
        )
        summary = Text()
        summary.append(f"{len(found)} possible request(s) in other words", style="bold")
        summary.append(" · Enter: confirm or dismiss · nothing changes until you do", style="dim")
        self.query_one("#possible-summary", Static).update(summary)
        self._render_possible()

    def selected_possible(self) -> PossibleRequest | None:
        key = self.query_one("#possible", KeyedTable).selected_key
        return next((c for c in self.possible if c.id == key), None)

    @on(KeyedTable.RowHighlighted, "#possible")
    def _possible_highlighted(self, _event: KeyedTable.RowHighlighted) -> None:
        self._render_possible()

    def _render_possible(self) -> None:
        cand = self.selected_possible()
        self.query_one("#possible-detail", Static).update(possible_detail(cand) if cand is not None else Text())

    @on(KeyedTable.RowSelected, "#possible")
    def _possible_selected(self, _event: KeyedTable.RowSelected) -> None:
        self.action_decide_possible()

    def action_decide_possible(self) -> None:
        cand = self.selected_possible()
        if cand is None:
            return
        refusal = self.app.refusal("deciding a possible request")
        if refusal is not None:
            self.notify(refusal, severity="warning")
            return

        def decided(choice: tuple[str, str] | None) -> None:
            self.query_one("#possible", KeyedTable).focus()
            if choice is None:
                return
            if choice[0] == "dismiss":
                self._dismiss_possible(cand)
            else:
                self._confirm_possible(cand, choice[1])

        self.app.push_screen(DecideModal(cand), decided)

    def _confirm_possible(self, cand: PossibleRequest, pref: str) -> None:
        session = self.app.session

        def planned(plan: ConfirmPlan) -> None:
            self.app.push_screen(
                ConfirmModal("Write this forget request?", confirm_preview(plan), "Write"),
                lambda ok: ok and self._apply_confirm(plan),
            )

        self.app.run_blocking(lambda: session.plan_confirm(cand.id, pref), planned, f"plan {cand.id}", "apply")

    def _apply_confirm(self, plan: ConfirmPlan) -> None:
        session = self.app.session

        def done(commit: str | None) -> None:
            self.app.record(
                "action", f"confirm possible request {plan.candidate.id}: wrote {plan.request}", [commit or ""]
            )
            self.notify(f"Wrote {plan.request}; it waits in the requests list.", title="Confirmed", timeout=8)
            self.app.scan_store(None)

        self.app.run_blocking(lambda: session.apply_confirm(plan), done, f"confirm {plan.candidate.id}", "apply")

    def _dismiss_possible(self, cand: PossibleRequest) -> None:
        session = self.app.session

        def save(note: str | None) -> None:
            if not note:
                return
            self.app.run_blocking(
                lambda: session.dismiss_possible(cand.id, note),
                lambda sha: (
                    self.app.record("action", f"dismiss possible request {cand.id}: {note}", [sha or ""]),
                    self.notify(f"Dismissed {cand.id}; it will not be listed again."),
                    self.app.scan_store(None),
                ),
                f"dismiss {cand.id}",
                "apply",
            )

        self.app.push_screen(
            NoteModal(
                f"Dismiss possible request {cand.id}?",
                plain("The memory stays as it is; the decision is recorded in the ledger."),
                "Dismiss",
            ),
            save,
        )
