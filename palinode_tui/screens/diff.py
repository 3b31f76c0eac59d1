"""Diff: the exact before/after of one target, with per-span toggles."""
from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Footer, Header, OptionList, Static
from textual.widgets.option_list import Option

from palinode_core.forget.resolve import Candidate
from palinode_core.ops.plan import Plan

from ..render import plain
from .base import ModeScreen
from .common import after_body, field_changes, unified_diff


class DiffScreen(ModeScreen):
    SCOPE = "diff"

    def __init__(self, review, candidate: Candidate) -> None:
        super().__init__()
        self.review = review
        self.candidate = candidate
        plan = candidate.plan
        self.chosen: set[int] = set(review.spans.get(candidate.path, set(plan.selected) if plan else set()))

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="diff-head")
        if self.candidate.route == "strike":
            yield OptionList(id="spans")
        with VerticalScroll(id="diff-box"):
            yield Static(id="diff-body")
        yield Footer()

    def on_mount(self) -> None:
        self._redraw()
        if self.candidate.route == "strike":
            self.query_one("#spans", OptionList).focus()

    def _current_plan(self) -> Plan:
        plan = self.candidate.plan
        assert plan is not None
        if not self.chosen:
            return plan
        return self.app.session.narrow(plan, frozenset(self.chosen))

    def _redraw(self) -> None:
        cand = self.candidate
        plan = self._current_plan()
        head = Text()
        head.append(plain(cand.path, "bold"))
        head.append(f"   route: {cand.route}", style="bold")
        head.append("   coverage " + ("—" if cand.coverage is None else f"{cand.coverage:.4f}"), style="dim")
        head.append("\n")
        head.append_text(field_changes(plan))
        if plan.op == "retract" and not self.chosen:
            head.append("no span selected: this target will be skipped\n", style="bold yellow")
        self.query_one("#diff-head", Static).update(head)
        if cand.route == "strike" and plan.spans:
            spans = self.query_one("#spans", OptionList)
            highlighted = spans.highlighted
            spans.clear_options()
            for span in plan.spans:
                label = Text("[x] " if span.index in self.chosen else "[ ] ",
                             style="magenta" if span.index in self.chosen else "dim")
                label.append(plain(f"line {span.line + plan.body_line_offset}: "))
                label.append(plain(span.text, "strike" if span.index in self.chosen else ""))
                if span.collateral:
                    label.append("  ⚠ also removes: ", style="yellow")
                    label.append(plain(span.collateral, "yellow"))
                spans.add_option(Option(label, id=str(span.index)))
            spans.highlighted = highlighted if highlighted is not None else 0
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
        index = int(spans.get_option_at_index(spans.highlighted).id or 0)
        self.chosen ^= {index}
        plan = self.candidate.plan
        if plan is not None and self.chosen == set(plan.selected):
            self.review.spans.pop(self.candidate.path, None)
        else:
            self.review.spans[self.candidate.path] = set(self.chosen)
        self._redraw()

    @on(OptionList.OptionSelected, "#spans")
    def _selected(self, _event: OptionList.OptionSelected) -> None:
        self.action_toggle_span()

    def action_close(self) -> None:
        self.dismiss(None)
