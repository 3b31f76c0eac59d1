"""Undo: every applied operation (ours or Palinode's), previewed before it is
reversed; an undone one dimmed, and redone exactly as it was approved; and
whole requests, withdrawn."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Static

from palinode_core.api import Applied, Operation, Plan, WithdrawPlan

from ..render import OPERATION_STYLE, STATE_STYLE, plain, plan_preview, short_date, short_sha, words
from ..widgets import AsOfBanner, ConfirmModal, KeyedTable, ListFilter, ModeTabs, StatusLine
from .base import ModeScreen, footer

OP_STYLE = {**OPERATION_STYLE, "request": "bold cyan"}


class UndoScreen(ModeScreen):
    SCOPE = "undo"

    def __init__(self) -> None:
        super().__init__()
        # by row key: ("op", Operation) | ("request", RequestState)
        self.by_key: dict[str, tuple[str, object]] = {}
        self.request_paths: set[str] = set()  # every forget request, for Enter to open
        self.preview: Plan | WithdrawPlan | None = None
        self.preview_kind: str | None = None  # "undo" | "redo" | "withdraw"
        self.preview_key: str | None = None  # the row the preview is of

    def compose(self) -> ComposeResult:
        yield ModeTabs("undo")
        yield AsOfBanner()
        with Horizontal(classes="main", id="undo-main"):
            with Vertical(id="undo-left"):
                yield ListFilter("undo-ops")
                yield KeyedTable(id="undo-ops", classes="pane")
            with VerticalScroll(id="undo-preview-box", classes="pane"):
                yield Static(id="undo-preview")
        yield StatusLine()
        yield footer()

    def on_mount(self) -> None:
        table = self.query_one("#undo-ops", KeyedTable)
        # fixed widths: auto widths depended on which refill a repaint caught (a snapshot flake)
        for label, width in (("when", 16), ("op", 9), ("path", 26), ("via", 26), ("commit", 7)):
            table.add_column(label, width=width)
        table.key_column = 2  # the path: whole at 120 columns, the others give way
        super().on_mount()
        self.query_one("#undo-ops", KeyedTable).focus()

    def store_updated(self, changed: object) -> None:
        session = self.app.session

        def work():
            return session.request_states(), session.operations()

        self.app.run_blocking(work, self._fill, "list operations", "undo-list", exclusive=True)

    def _fill(self, result) -> None:
        every_state, ops = result
        self.request_paths = {st.path for st in every_state}
        states = [st for st in every_state if st.state in ("applied", "partial", "conflicted")]  # what is in force
        table = self.query_one("#undo-ops", KeyedTable)
        self.by_key = {}
        cells: list[tuple[str, tuple]] = []
        for st in states:
            key = f"req:{st.path}"
            cells.append(
                (
                    key,
                    (
                        "",
                        plain("request", OP_STYLE["request"]),
                        plain(st.path),
                        plain(f'{st.state}: "{st.pref}"', STATE_STYLE.get(st.state, "")),
                        "",
                    ),
                )
            )
            self.by_key[key] = ("request", st)
        for op in ops:
            key = f"op:{op.commit}"
            cells.append((key, tuple(op_cells(op))))
            self.by_key[key] = ("op", op)
        table.refill(cells)
        if self.by_key:
            self._preview()
        else:
            self.query_one("#undo-preview", Static).update(
                plain("Nothing has been forgotten in this store yet.", "dim")
            )

    def _selected(self):
        key = self.query_one("#undo-ops", KeyedTable).selected_key
        return None if key is None else self.by_key.get(key)

    @property
    def rows(self) -> list[tuple[str, object]]:
        """The rows shown, in order (a filter may hide some)."""
        return [self.by_key[key] for key in self.query_one("#undo-ops", KeyedTable).keys]

    @on(KeyedTable.RowHighlighted, "#undo-ops")
    def _highlighted(self, _event) -> None:
        self._preview()

    @on(KeyedTable.RowSelected, "#undo-ops")
    async def _row_selected(self, _event: KeyedTable.RowSelected) -> None:
        await self.action_open_request()

    async def action_open_request(self) -> None:
        """Enter: the request this row carried out, in Review; Esc comes back."""
        row = self._selected()
        if row is None:
            return
        kind, item = row
        # an operation names its request in a trailer (ours) or as its counterpart (Palinode's)
        path = item.path if kind == "request" else item.trailers.get("Forget-Request") or item.counterpart
        if path not in self.request_paths:
            self.notify(f"This {item.op} carried out no forget request.", markup=False)
            return
        await self.app.drill("review")
        show = getattr(self.app.screen, "show_request", None)
        if show is not None:
            show(path)

    def _preview(self) -> None:
        row = self._selected()
        self.preview, self.preview_kind = None, None  # never one for a row no longer shown
        self.preview_key = self.query_one("#undo-ops", KeyedTable).selected_key
        if row is None:
            self.query_one("#undo-preview", Static).update(
                plain("No operation selected (a filter may hide them).", "dim")
            )
            return
        kind, item = row
        session = self.app.session
        if self.app.as_of is not None:  # an undo is planned against the store as it is now
            self.query_one("#undo-preview", Static).update(plain(self.app.refusal("Undo") or "", "yellow"))
            return

        def work():
            if kind == "request":
                return "withdraw", session.plan_withdraw(item.path)
            if item.undone:
                return "redo", session.plan_redo(item, reason="redone in palinode-tui")
            return "undo", session.plan_undo(item, reason="undone in palinode-tui")

        verb = "redo" if kind == "op" and item.undone else "undo"
        self.app.run_blocking(
            work,
            self._show_preview,
            f"plan the {verb}",
            "undo-preview",
            exclusive=True,
            on_error=lambda reason: self.query_one("#undo-preview", Static).update(
                plain(f"Cannot {verb} this from here: {reason}", "yellow")
            ),
        )

    def _show_preview(self, result) -> None:
        self.preview_kind, plan = result
        self.preview = plan
        text = Text()
        if self.preview_kind == "redo":
            text.append(
                "Redo preview (R to run): exactly what was approved, on the file as it is now\n\n", style="bold"
            )
            text.append_text(plan_preview(plan))
        elif isinstance(plan, WithdrawPlan):
            text.append("Withdraw ", style="bold")
            text.append(plain(plan.request, "bold"))
            text.append(" — ")
            text.append(plain(f'"{plan.pref}"'))
            text.append(f"\n{len(plan.steps)} step(s), each its own commit (W to run):\n\n", style="dim")
            for step in plan.steps:
                text.append_text(plan_preview(step))
                text.append("\n")
            text.append("A withdrawal is undone by planning and applying the request again.", style="italic dim")
        elif not plan.changes:
            text.append(plain(f"Nothing to undo: {plan.target} is {words(plan.status)}.", "dim"))
        else:
            text.append("Undo preview (U to run):\n\n", style="bold")
            text.append_text(plan_preview(plan))
        self.query_one("#undo-preview", Static).update(text)

    def _previewed(self) -> bool:
        """The preview is of the row selected and shown (a filter or a refill may have hidden it)."""
        key = self.query_one("#undo-ops", KeyedTable).selected_key
        if key is None or key != self.preview_key:
            self.notify("Select an operation first: the one previewed is not shown.", severity="warning")
            return False
        return True

    def action_undo(self) -> None:
        if not self._previewed():
            return
        plan = self.preview
        if self.preview_kind == "redo":
            self.notify("Already undone: R redoes it.", severity="warning")
            return
        if not isinstance(plan, Plan):
            self.notify("Select an operation (W withdraws a whole request).", severity="warning")
            return
        if not plan.changes:
            self.notify("Nothing to undo.")
            return
        self._confirm_and_apply(plan, "Undo", "Undone")

    def action_redo(self) -> None:
        if not self._previewed():
            return
        plan = self.preview
        if self.preview_kind != "redo" or not isinstance(plan, Plan):
            self.notify("Only an undone operation can be redone.", severity="warning")
            return
        self._confirm_and_apply(plan, "Redo", "Redone")

    def _confirm_and_apply(self, plan: Plan, verb: str, title: str) -> None:
        def done(applied: Applied) -> None:
            self.app.record("action", f"{verb.lower()}: {plan.op} {plan.target}", [applied.commit or ""])
            self.notify(f"{plan.commit_subject} → {(applied.commit or '')[:7]}", title=title, markup=False)
            self.app.scan_store(None)

        self.app.push_screen(
            ConfirmModal(f"{verb}: {plan.op} {plan.target}?", plan_preview(plan), verb),
            lambda ok: (
                ok
                and self.app.run_blocking(
                    lambda: self.app.session.apply(plan), done, f"{verb.lower()} {plan.target}", "apply"
                )
            ),
        )

    def action_withdraw(self) -> None:
        if not self._previewed():
            return
        plan = self.preview
        if not isinstance(plan, WithdrawPlan):
            self.notify("Select a request row to withdraw it.", severity="warning")
            return
        body = Text()
        for step in plan.steps:
            body.append_text(plan_preview(step))
            body.append("\n")

        def done(result: dict) -> None:
            commits = [c["commit"] for c in result["commits"]]
            self.app.record("action", f"withdraw {plan.request}: {result['status']}", commits)
            if result["failed"]:
                self.app.fail("Withdraw stopped", "; ".join(f"{f['path']}: {f['reason']}" for f in result["failed"]))
            else:
                self.notify(
                    "\n".join(f"{(c['commit'] or '')[:7]} {c['subject']}" for c in result["commits"]),
                    title="Withdrawn",
                    markup=False,
                    timeout=8,
                )
            self.app.scan_store(None)

        self.app.push_screen(
            ConfirmModal(f"Withdraw {plan.request}?", body, "Withdraw"),
            lambda ok: (
                ok
                and self.app.run_blocking(
                    lambda: self.app.session.apply_withdraw(plan), done, f"withdraw {plan.request}", "apply"
                )
            ),
        )


def op_cells(op: Operation) -> tuple[Text, ...]:
    """One operation's row; an undone one dimmed, with when it was undone."""
    if op.undone_by is None:
        return (
            plain(short_date(op.date)),
            plain(op.op, OP_STYLE.get(op.op, "")),
            plain(op.path),
            plain(op.counterpart or ""),
            plain(short_sha(op.commit), "dim"),
        )
    note = f"undone {short_date(op.undone_at)[:10]}" + (", redone" if op.redone_by else "")
    via = Text(style="dim")
    via.append_text(plain(op.counterpart or "", "dim"))
    via.append_text(plain(f"{'  ' if op.counterpart else ''}{note}", "dim italic"))
    return (
        plain(short_date(op.date), "dim"),
        plain(op.op, "dim"),
        plain(op.path, "dim"),
        via,
        plain(short_sha(op.commit), "dim"),
    )
