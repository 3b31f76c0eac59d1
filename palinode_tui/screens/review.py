"""Review: pending forget requests, each request's plan with a what-if on the
knobs, per-target approval kept in a draft (drafts.py), and a confirmed apply.
As of a point of history: the requests then, each with its record (review_record.py)."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import suppress
from typing import Any, Literal, get_args

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.widgets import Input, Label, Static

from palinode_core.api import Candidate, ForgetKnobs, ForgetPlan, RequestState

from ..render import STATE_STYLE, plain
from ..widgets import AsOfBanner, KeyedTable, ListFilter, ModeTabs, StatusLine
from .base import footer
from .review_decisions import ReviewDecisions
from .review_possible import PossibleRequests, possible_widgets
from .review_record import PARTIAL_WHY, record_cells, record_detail, record_header
from .review_view import (
    CANDIDATE_COLUMNS,
    Review,
    build_review,
    candidate_cells,
    candidate_detail,
    decider,
    plan_header,
    plan_paths,
    semantic_change,
)
from .timeline import TimelineScreen

StateFilter = Literal["pending", "partial", "applied", "withdrawn", "dismissed", "conflicted", "all"]


class KnobInput(Input):
    """A knob's field: + and - step its value (F1 and the README promise them where k puts the focus);
    typed digits edit it as in any field."""

    def __init__(self, step: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.step = step

    async def _on_key(self, event: events.Key) -> None:
        if event.key in ("plus", "minus"):
            event.stop()
            event.prevent_default()
            self.nudge(1 if event.key == "plus" else -1)
            return
        await super()._on_key(event)

    def nudge(self, direction: int) -> None:
        try:
            current = float(self.value)
        except ValueError:
            current = 0.0
        value = max(0.0, current + direction * self.step)
        if self.step < 1:
            self.value = f"{min(1.0, round(value, 4)):g}"
        else:
            self.value = str(max(1 if self.id == "knob-max" else 0, int(value)))
        self.cursor_position = len(self.value)


STATE_FILTERS: tuple[StateFilter, ...] = get_args(StateFilter)


class ReviewScreen(ReviewDecisions, PossibleRequests):
    SCOPE = "review"

    def __init__(self) -> None:
        super().__init__()
        self.state_filter: StateFilter = "pending"
        self.states: list[RequestState] = []
        self.planning_again: str | None = None  # a decided request the reviewer asked to plan again (p)
        self._replan = False  # plan (or read the record) again once the request list is read
        self._before_units = False  # the plan shown was made while the unit index was still being built
        self.knobs: ForgetKnobs | None = None
        self.resolver = "thorough"  # the app's at mount; r switches

    def compose(self) -> ComposeResult:
        yield ModeTabs("review")
        yield AsOfBanner()
        with Horizontal(classes="main", id="review-main"):
            with Vertical(id="review-left"):
                yield Static(id="requests-summary")
                yield ListFilter("requests")
                yield KeyedTable(id="requests", classes="pane")
                yield from possible_widgets()
            with Vertical(id="review-right"):
                yield Static(id="plan-header")
                with Horizontal(id="knobs"):
                    yield Label(id="knobs-for")
                    yield Label("floor")
                    yield KnobInput(0.05, id="knob-floor", classes="field", restrict=r"[0-9.]*", max_length=6)
                    yield Label("max")
                    yield KnobInput(1, id="knob-max", classes="field", restrict=r"[0-9]*", max_length=3)
                    yield Label("shared")
                    yield KnobInput(1, id="knob-shared", classes="field", restrict=r"[0-9]*", max_length=2)
                yield KeyedTable(id="candidates", classes="pane")
                with VerticalScroll(id="candidate-detail-box", classes="pane"):
                    yield Static(id="candidate-detail")
        yield StatusLine()
        yield footer()

    def on_mount(self) -> None:
        self.query_one("#requests", KeyedTable).add_columns("state", "request", "pref", "decided by")
        self.query_one("#candidates", KeyedTable).add_columns(*CANDIDATE_COLUMNS)
        self._set_knob_inputs(self.app.store.config.forget)
        self.resolver = self.app.live.resolver
        self._label_knobs()
        self.mount_possible()
        super().on_mount()
        self.query_one("#requests", KeyedTable).focus()

    # -- requests ----------------------------------------------------------------
    def store_updated(self, changed: object) -> None:
        session = self.app.session

        def listed(states: list[RequestState]) -> None:
            # a list of another point in time is never shown as this one's
            if session is not self.app.session:
                return
            with suppress(NoMatches):  # the screen was taken down while the list was read
                self._states_ready(states)

        self.app.run_blocking(session.request_states, listed, "list forget requests", "requests", exclusive=True)
        self.list_possible()
        if self.review is None and self.current:
            self._render_plan()  # what the first plan waits for has moved on
        if self.review and not self._applying and (changed is None or self._touches(changed)):
            # Re-plan once the index has caught up with the change (index_updated).
            # said once per change, and never over a dialog (the header says STALE meanwhile). Our own apply is
            # no such change: it re-plans when it ends, and the watcher's late report of its commit finds each
            # file as the new plan read it
            if not self.review.stale and self.app.screen is self:
                self.notify("Files in this plan changed on disk; re-planning.", severity="warning")
            self.review.stale = True
            self._render_plan()

    def _waiting_for(self) -> str:
        """Plain words for what the first plan waits on (the status line has the counts)."""
        app = self.app
        if app.live_scan is None:
            return "reading the store"
        if app.index is None:
            return "indexing the store's sentences for search (progress below)"
        return "resolving the request against the index"

    def index_updated(self, mode: object) -> None:
        if self.app.as_of is not None or not self.current:
            return
        # lexical: units current, plan; hybrid(-partial): vectors arrived, plan again. A stale plan on a store with
        # every vector waits the second it takes to embed the changed files (no flash of a plan without them).
        index = self.app.index
        if mode == "searchable":  # a first plan now (it reads the unsegmented memories whole), not in seconds
            return self.plan_current() if self.review is None else None
        early, self._before_units = self._before_units, False  # planned on a partial unit index: plan again
        waits = mode == "lexical-partial" and index is not None and index.vectors_ready
        if self.review is None or (self.review.stale and not waits) or mode in ("hybrid", "hybrid-partial") or early:
            self.plan_current()

    def as_of_changed(self) -> None:
        self.review, self.record, self._replan = None, None, True
        self.query_one("#knobs").disabled = self.app.as_of is not None  # no what-if on history
        # the list was of the other point in time: gone at once, and said, until this one's is read
        self.states = []
        self.query_one("#requests", KeyedTable).refill(())
        when = f"as of {self.app.as_of_words()}" if self.app.as_of is not None else "as it is now"
        self.query_one("#requests-summary", Static).update(
            plain(f"reading the requests of the store {when}…", "italic")
        )
        self._render_plan()

    def _touches(self, changed: object) -> bool:
        """A file of the plan is not as the plan read it."""
        assert self.review is not None
        read, memories = self.review.read, self.app.session.memories
        return any(
            read.get(p, "") != (memories[p].fingerprint if p in memories else None)
            for p in plan_paths(self.review.plan) & set(changed)  # type: ignore[call-overload]
        )

    def _states_ready(self, states: list[RequestState]) -> None:
        self.states = states
        table = self.query_one("#requests", KeyedTable)
        shown = [st for st in states if self.state_filter in ("all", st.state)]
        table.refill(
            (
                (
                    st.path,
                    (
                        plain(st.state, STATE_STYLE.get(st.state, "")),
                        plain(st.path),
                        plain(st.pref),
                        plain(decider(st), "dim"),
                    ),
                )
                for st in shown
            ),
            keep=self.current,
        )
        counts: dict[str, int] = {}
        for st in states:
            counts[st.state] = counts.get(st.state, 0) + 1
        summary = Text()
        summary.append(f"showing {self.state_filter}", style="bold")
        summary.append(" (s) · ", style="dim")
        summary.append(" · ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "no forget requests in this store")
        self.query_one("#requests-summary", Static).update(summary)
        replan, self._replan = self._replan, False
        if self.current not in table.keys:
            # The request shown is no longer listed: nothing may act on it.
            self.current, self.review = None, None
            self._render_plan()
            if table.keys:
                self.select_request(table.keys[0])
        elif replan:
            self.plan_current()

    @on(KeyedTable.RowHighlighted, "#requests")
    def _request_highlighted(self, event: KeyedTable.RowHighlighted) -> None:
        if event.row_key is not None and event.row_key.value and event.row_key.value != self.current:
            self.select_request(str(event.row_key.value))

    def select_request(self, path: str) -> None:
        if path != self.current:
            self.planning_again = None
        self.current = path
        self.review, self.record = None, None
        self._render_plan()
        self.plan_current()

    def show_request(self, path: str) -> None:
        """Drilled into (Enter on an operation): that request, whatever its state."""
        state = next((st.state for st in self.states if st.path == path), None)
        if self.state_filter not in ("all", state):
            self.state_filter = "all"
        table = self.query_one("#requests", KeyedTable)
        if table.filter_text:
            self.query_one(ListFilter).clear()
        if not self.states:  # the list is still being read: it selects and plans this one
            self.current, self.review, self.record, self._replan = path, None, None, True
            return
        self._states_ready(self.states)
        table.select_key(path)
        table.focus()
        if self.current != path:
            self.select_request(path)

    @on(KeyedTable.RowSelected, "#candidates")
    def _target_selected(self, _event: KeyedTable.RowSelected) -> None:
        self.action_target_timeline()

    def action_target_timeline(self) -> None:
        """Enter on a plan target: its timeline; Esc comes back."""
        path = self.query_one("#candidates", KeyedTable).selected_key
        if path is not None:
            self.app.push_screen(TimelineScreen(path))

    def action_cycle_state(self) -> None:
        self.state_filter = STATE_FILTERS[(STATE_FILTERS.index(self.state_filter) + 1) % len(STATE_FILTERS)]
        self._states_ready(self.states)

    # -- planning -------------------------------------------------------------------
    def _decided(self, path: str | None) -> bool:
        """Applied, partial, withdrawn or dismissed, and not asked to plan again (p)."""
        state = next((s.state for s in self.states if s.path == path), None)
        return state not in (None, "pending") and self.planning_again != path

    def plan_current(self, reroute_only: bool = False) -> None:
        path = self.current
        index = self.app.index
        if path is not None and self.app.as_of is not None:
            session = self.app.session
            self.app.run_blocking(
                lambda: session.report(request=path)["requests"][0],
                self._record_ready,
                f"read {path} as of {self.app.as_of_words()}" if self.app.as_of is not None else f"read {path}",
                "plan",
                exclusive=True,
            )
            return
        if path is None or index is None:
            return
        session, book, resolver = self.app.session, self.app.drafts, self.resolver
        self._before_units = self.app.segmenting  # only the latest plan counts (each replaces the one before)
        knobs = self.knobs or session.forget_knobs()
        previous = self.review if self.review is not None and self.review.plan.request.path == path else None
        draft = previous.draft.copy() if previous is not None else None

        def work() -> Review:
            if (
                reroute_only
                and previous is not None
                and previous.plan.knobs.search_k == knobs.search_k
                and previous.plan.resolver == resolver
            ):
                plan = session.reroute(previous.plan.resolution, knobs, resolver=resolver)
            else:
                plan = session.plan(path, knobs, index=index, resolver=resolver)
            return build_review(session, book, plan, draft)

        self.app.run_blocking(work, self._plan_ready, f"plan {path}", "plan", exclusive=True)

    def _plan_ready(self, review: Review) -> None:
        if review.plan.request.path != self.current or review.plan.resolver != self.resolver:
            return  # a plan for another request, or by the resolver switched from
        if not review.plan.actionable and self._decided(review.plan.request.path):
            # nothing left to do: what was done (operations, spans, skips, undos) says more than an empty plan
            session, path = self.app.session, review.plan.request.path
            self.app.run_blocking(
                lambda: session.report(request=path)["requests"][0], self._record_ready, f"read {path}", "plan"
            )
            return
        before = self.review.plan if self.review is not None else None
        self.review = review
        if before is not None and (before.request.path, before.resolver) == (
            review.plan.request.path,
            review.plan.resolver,
        ):
            self._say_semantic_change(before, review.plan)
        if review.moved:
            self.notify(
                f"{len(review.moved)} target(s) changed on disk under your sentence choice: review them again (d).",
                severity="warning",
            )
            self._save_draft()
        self._render_plan()

    def _say_semantic_change(self, before: ForgetPlan, after: ForgetPlan) -> None:
        """When vectors arrived since the last plan, say what they changed."""
        if words := semantic_change(before, after):
            self.notify(words, title="Semantic evidence arrived", markup=False)

    def _record_ready(self, record: dict[str, Any]) -> None:
        if record["path"] == self.current and (self.app.as_of is not None or self._decided(record["path"])):
            self.record = record
            self._render_plan()

    def action_plan_again(self) -> None:
        """Plan what remains of a decided request (a partial one, or one to apply again)."""
        if self.current is None or self.app.as_of is not None or self.record is None:
            return
        self.planning_again = self.current
        self.review, self.record = None, None
        self._render_plan()
        self.plan_current()

    def _save_draft(self) -> None:
        if self.review is None:
            return
        book = self.app.drafts
        version = book.put(self.review.draft)
        self.app.run_blocking(lambda: book.save(version), lambda _none: None, "save the review draft", "drafts")

    def _render_plan(self) -> None:
        table = self.query_one("#candidates", KeyedTable)
        review, record = self.review, self.record
        if record is not None:
            self.query_one("#plan-header", Static).update(record_header(record, live=self.app.as_of is None))
            table.refill((t["path"], record_cells(record, t)) for t in record["targets"])
            self._render_detail()
            return
        header = plan_header(review, self.current, self.app.read_only, self._waiting_for())
        withdrawn = next((s for s in self.states if s.path == self.current and s.state == "withdrawn"), None)
        if review is not None and withdrawn is not None:
            header = header.copy()
            header.append(f"\nwithdrawn{_when_and_who(withdrawn.last_decision)}: ", style="bold yellow")
            header.append("applying it again applies a request that was taken back (A asks first)", style="yellow")
        if review is not None and any(s.path == self.current and s.state == "partial" for s in self.states):
            header = header.copy()
            if review.plan.actionable:
                header.append(f"\n{PARTIAL_WHY}: approve what remains below and apply (A)", style="italic yellow")
            else:
                header.append(
                    f"\n{PARTIAL_WHY}; nothing remains to apply: A closes it (recorded as applied)",
                    style="italic yellow",
                )
        self.query_one("#plan-header", Static).update(header)
        if review is None:
            table.refill(())
            self.query_one("#candidate-detail", Static).update("")
            return
        # The floor governs Palinode's routes only: the thorough resolver's gauge shows no floor.
        floor = review.plan.knobs.min_target_coverage if review.plan.resolver == "palinode" else None
        table.refill((cand.path, candidate_cells(review, cand, floor)) for cand in review.targets)
        self._render_detail()

    def _selected_candidate(self) -> Candidate | None:
        key = self.query_one("#candidates", KeyedTable).selected_key
        if self.review is None or key is None:
            return None
        return self.review.plan.candidate(key)

    @on(KeyedTable.RowHighlighted, "#candidates")
    def _candidate_highlighted(self, _event: KeyedTable.RowHighlighted) -> None:
        self._render_detail()

    def _render_detail(self) -> None:
        cand = self._selected_candidate()
        key = self.query_one("#candidates", KeyedTable).selected_key
        recorded = next((t for t in self.record["targets"] if t["path"] == key), None) if self.record else None
        self.query_one("#candidate-detail", Static).update(
            candidate_detail(self.review, cand)
            if cand is not None and self.review is not None
            else record_detail(self.record, recorded)
            if self.record is not None and recorded is not None
            else Text()
        )
        self.query_one("#candidate-detail-box", VerticalScroll).scroll_home(animate=False)

    # -- knobs ------------------------------------------------------------------
    def _set_knob_inputs(self, knobs: ForgetKnobs) -> None:
        self.query_one("#knob-floor", Input).value = f"{knobs.min_target_coverage:g}"
        self.query_one("#knob-max", Input).value = str(knobs.max_targets)
        self.query_one("#knob-shared", Input).value = str(knobs.min_shared_words)

    @on(Input.Changed, "#knobs Input")
    def _knob_changed(self, _event: Input.Changed) -> None:
        base = self.app.store.config.forget
        try:
            floor = float(self.query_one("#knob-floor", Input).value or base.min_target_coverage)
            max_targets = int(self.query_one("#knob-max", Input).value or base.max_targets)
            shared = int(self.query_one("#knob-shared", Input).value or base.min_shared_words)
        except ValueError:
            return
        knobs = base.with_overrides(
            min_target_coverage=max(0.0, min(1.0, floor)),
            max_targets=max(1, max_targets),
            min_shared_words=max(0, shared),
        )
        if knobs != self.knobs:
            self.knobs = knobs
            if self.review is not None:
                self.plan_current(reroute_only=True)

    def action_floor(self, delta: float) -> None:
        # From the input's own value: quick repeated presses arrive before the
        # Changed message of the previous one, and each must count.
        box = self.query_one("#knob-floor", Input)
        try:
            current = float(box.value)
        except ValueError:
            current = (self.knobs or self.app.store.config.forget).min_target_coverage
        box.value = f"{max(0.0, min(1.0, round(current + delta, 4))):g}"

    def _label_knobs(self) -> None:
        # Under the thorough resolver the knobs set only Palinode's plan, compared beside it.
        self.query_one("#knobs-for", Label).update("Palinode's plan:" if self.resolver == "thorough" else "")

    def action_switch_resolver(self) -> None:
        self.resolver = "palinode" if self.resolver == "thorough" else "thorough"
        self._label_knobs()
        self.notify(
            "Resolver: "
            + (
                "thorough (evidence per sentence)"
                if self.resolver == "thorough"
                else "Palinode's own (exactly what Palinode would do)"
            )
        )
        if self.review is not None:
            self.review = None  # "planning…" until the other resolver's plan is in
            self._render_plan()
        self.plan_current()

    def action_focus_knobs(self) -> None:
        self.query_one("#knob-floor", Input).focus()

    # -- decisions ---------------------------------------------------------------------
    def action_toggle_target(self) -> None:
        cand = self._selected_candidate()
        if cand is None or not cand.actionable or self.review is None:
            self.notify("Only a proposed target can be approved or skipped.")
            return
        self.review.draft.toggle(cand)
        self._save_draft()
        self._render_plan()

    def action_open_diff(self) -> None:
        from .diff import DiffScreen

        cand = self._selected_candidate()
        review = self.review
        if cand is None or cand.plan is None or review is None:
            self.notify("Select a target to see its diff.")
            return

        def chosen(spans: frozenset[int] | None) -> None:
            self.query_one("#candidates", KeyedTable).focus()  # back where the diff was opened from
            if self.review is not review or spans is None:
                return  # re-planned meanwhile, or not a strike
            review.draft.choose_spans(cand, spans)
            self._save_draft()
            self._render_plan()

        self.app.push_screen(DiffScreen(cand, review.draft.chosen_spans(cand)), chosen)


def _when_and_who(last: Mapping[str, Any] | None) -> str:
    """' on 2025-05-14 by Jo' for a decision, or nothing."""
    if not last:
        return ""
    who = str(last.get("decided_by") or "").split(" <")[0]
    return f" on {str(last.get('at') or '')[:10]}" + (f" by {who}" if who else "")
