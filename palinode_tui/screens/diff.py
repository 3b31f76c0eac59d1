"""Diff: the exact before/after of one target, with per-span toggles. The
span choice goes back to the review through ``dismiss``."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Header, OptionList, Static
from textual.widgets.option_list import Option

from palinode_core.api import Candidate, Plan

from ..render import after_body, field_changes, plain, route_word, unified_diff
from .base import ModeScreen, footer


class DiffScreen(ModeScreen):
    """Dismissed with the chosen span indices (a strike) or None."""

    SCOPE = "diff"

    def __init__(self, candidate: Candidate, chosen: frozenset[int] | None = None) -> None:
        super().__init__()
        self.candidate = candidate
        plan = candidate.plan
        assert plan is not None
        self.chosen: set[int] = set(plan.selected if chosen is None else chosen)
        self.shown: Plan | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="diff-head")
        if self.candidate.route == "strike":
            yield OptionList(id="spans")
        with VerticalScroll(id="diff-box"):
            yield Static(id="diff-body")
        yield footer()

    def on_mount(self) -> None:
        self._redraw()
        if self.candidate.route == "strike":
            self.query_one("#spans", OptionList).focus()

    def _redraw(self) -> None:
        """The span list at once; the narrowed plan (re-planned against the
        file's bytes) in a worker."""
        plan = self.candidate.plan
        assert plan is not None
        if self.candidate.route == "strike" and plan.spans:
            self._draw_spans(plan)
        chosen = frozenset(self.chosen)
        session = self.app.session

        def work() -> Plan:
            return plan if not chosen else session.narrow(plan, chosen)

        self.app.run_blocking(work, self._draw_plan, "narrow the strike", "diff", exclusive=True)

    def _draw_spans(self, plan: Plan) -> None:
        spans = self.query_one("#spans", OptionList)
        highlighted = spans.highlighted
        spans.clear_options()
        for span in plan.spans:
            chosen = span.index in self.chosen
            label = Text("[x] " if chosen else "[ ] ", style="magenta" if chosen else "dim")
            label.append(plain(f"line {span.line + plan.body_line_offset}: "))
            label.append(plain(span.text, "strike" if chosen else ""))
            if span.collateral:
                label.append("  ⚠ also removes: ", style="yellow")
                label.append(plain(span.collateral, "yellow"))
            spans.add_option(Option(label, id=str(span.index)))
        spans.highlighted = highlighted if highlighted is not None else 0

    def _draw_plan(self, plan: Plan) -> None:
        self.shown = plan
        cand = self.candidate
        head = Text()
        head.append(plain(cand.path, "bold"))
        head.append(f"   route: {route_word(cand.route)}", style="bold")
        head.append("   coverage " + ("—" if cand.coverage is None else f"{cand.coverage:.4f}"), style="dim")
        head.append("\n")
        head.append_text(field_changes(plan))
        if plan.op == "retract" and not self.chosen:
            head.append("no span selected: this target will be skipped\n", style="bold yellow")
        self.query_one("#diff-head", Static).update(head)
        body = Text()
        if plan.op == "retract" and not self.chosen:
            body.append("(unchanged)\n", style="dim")
        else:
            body.append("After:\n", style="bold")
            body.append_text(after_body(plan))
            body.append("\n\nRaw diff:\n", style="bold")
            body.append_text(unified_diff(plan.old_text, plan.new_text, plan.target))
        self.query_one("#diff-body", Static).update(body)

    def action_toggle_span(self) -> None:
        if self.candidate.route != "strike":
            return
        spans = self.query_one("#spans", OptionList)
        if spans.highlighted is None:
            return
        self.chosen ^= {int(spans.get_option_at_index(spans.highlighted).id or 0)}
        self._redraw()

    @on(OptionList.OptionSelected, "#spans")
    def _selected(self, _event: OptionList.OptionSelected) -> None:
        self.action_toggle_span()

    def action_close(self) -> None:
        self.dismiss(frozenset(self.chosen) if self.candidate.route == "strike" else None)
