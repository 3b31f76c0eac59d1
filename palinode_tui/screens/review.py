"""Review: pending forget requests, each request's plan with a what-if on the
knobs, per-target approval, and a confirmed apply."""
from __future__ import annotations

from dataclasses import dataclass, field

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import DataTable, Footer, Header, Input, Label, Static

from palinode_core.forget.requests import RequestState
from palinode_core.forget.resolve import Candidate, ForgetPlan
from palinode_core.forget.review import ForgetApplied
from palinode_core.forget.selection import APPROVE_ALL, REJECT, Choice
from palinode_core.storage.config import ForgetKnobs

from ..render import ROUTE_STYLE, STATE_STYLE, coverage_gauge, plain
from ..widgets import ConfirmModal, NoteModal, StatusLine
from .base import ModeScreen
from .common import plan_preview

STATE_FILTERS = ("pending", "partial", "applied", "withdrawn", "dismissed", "all")


@dataclass
class Review:
    """The reviewer's choices for one request's plan."""

    plan: ForgetPlan
    approved: dict[str, bool] = field(default_factory=dict)
    spans: dict[str, set[int]] = field(default_factory=dict)
    stale: bool = False

    def selection(self) -> dict[str, Choice]:
        out: dict[str, Choice] = {}
        for cand in self.plan.actionable:
            if not self.approved.get(cand.path, True):
                out[cand.path] = REJECT
            elif cand.path in self.spans:
                out[cand.path] = Choice(spans=frozenset(self.spans[cand.path]))
            else:
                out[cand.path] = APPROVE_ALL
        return out


class ReviewScreen(ModeScreen):
    SCOPE = "review"

    def __init__(self) -> None:
        super().__init__()
        self.state_filter = "pending"
        self.states: list[RequestState] = []
        self.request_rows: list[str] = []
        self.candidate_rows: list[str] = []
        self.current: str | None = None
        self.review: Review | None = None
        self.knobs: ForgetKnobs | None = None
        self.plans_made = 0

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(classes="main"):
            with Vertical(id="review-left"):
                yield Static(id="requests-summary")
                yield DataTable(id="requests", cursor_type="row")
            with Vertical(id="review-right"):
                yield Static(id="plan-header")
                with Horizontal(id="knobs"):
                    yield Label("floor")
                    yield Input(id="knob-floor", restrict=r"[0-9.]*", max_length=6)
                    yield Label("max targets")
                    yield Input(id="knob-max", restrict=r"[0-9]*", max_length=3)
                    yield Label("min shared")
                    yield Input(id="knob-shared", restrict=r"[0-9]*", max_length=2)
                yield DataTable(id="candidates", cursor_type="row")
                with VerticalScroll(id="candidate-detail-box"):
                    yield Static(id="candidate-detail")
        yield StatusLine()
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#requests", DataTable).add_columns("state", "request", "pref")
        self.query_one("#candidates", DataTable).add_columns("ok", "#", "route", "coverage", "path", "shared", "note")
        self._set_knob_inputs(self.app.store.config.forget)
        super().on_mount()
        self.query_one("#requests", DataTable).focus()

    # -- requests ----------------------------------------------------------------
    def store_updated(self, changed: object) -> None:
        self.app.run_blocking(self.app.session.request_states, self._states_ready,
                              "list forget requests", "requests", exclusive=True)
        if self.review and (changed is None or self._touches(changed)):
            # Re-plan once the index has caught up with the change (index_updated).
            self.review.stale = True
            self.notify("Files in this plan changed on disk; re-planning.", severity="warning", markup=False)
            self._render_plan()

    def index_updated(self, mode: object) -> None:
        if mode == "lexical-partial":
            return
        if self.current and (self.review is None or self.review.stale or mode == "hybrid"):
            self.plan_current()

    def _touches(self, changed: object) -> bool:
        paths = {self.review.plan.request.path} | {c.path for c in self.review.plan.candidates}
        return bool(paths & set(changed))  # type: ignore[arg-type]

    def _states_ready(self, states: list[RequestState]) -> None:
        self.states = states
        table = self.query_one("#requests", DataTable)
        keep = self.current
        table.clear()
        self.request_rows = []
        for st in states:
            if self.state_filter != "all" and st.state != self.state_filter:
                continue
            table.add_row(plain(st.state, STATE_STYLE.get(st.state, "")), plain(st.path), plain(st.pref), key=st.path)
            self.request_rows.append(st.path)
        counts: dict[str, int] = {}
        for st in states:
            counts[st.state] = counts.get(st.state, 0) + 1
        summary = Text()
        summary.append(f"showing: {self.state_filter}", style="bold")
        summary.append("  (s to change)  ", style="dim")
        summary.append(" · ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "no forget requests in this store")
        self.query_one("#requests-summary", Static).update(summary)
        if keep in self.request_rows:
            table.move_cursor(row=self.request_rows.index(keep))
        elif self.request_rows and self.current is None:
            self.select_request(self.request_rows[0])

    @on(DataTable.RowHighlighted, "#requests")
    def _request_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key is not None and event.row_key.value and event.row_key.value != self.current:
            self.select_request(str(event.row_key.value))

    def select_request(self, path: str) -> None:
        self.current = path
        self.review = None
        self._render_plan()
        self.plan_current()

    def action_cycle_state(self) -> None:
        self.state_filter = STATE_FILTERS[(STATE_FILTERS.index(self.state_filter) + 1) % len(STATE_FILTERS)]
        self._states_ready(self.states)

    # -- planning -------------------------------------------------------------------
    def plan_current(self, reroute_only: bool = False) -> None:
        path = self.current
        index = self.app.index
        if path is None or index is None:
            return
        session = self.app.session
        knobs = self.knobs or session.forget_knobs()
        previous = self.review

        def work() -> ForgetPlan:
            if reroute_only and previous is not None and previous.plan.knobs.search_k == knobs.search_k:
                return session.reroute(previous.plan.resolution, knobs)
            return session.plan(path, knobs, index=index)

        self.app.run_blocking(work, lambda plan: self._plan_ready(plan, previous), f"plan {path}", "plan",
                              exclusive=True)

    def _plan_ready(self, plan: ForgetPlan, previous: Review | None) -> None:
        if plan.request.path != self.current:
            return
        self.plans_made += 1
        review = Review(plan)
        if previous is not None and previous.plan.request.path == plan.request.path:
            review.approved = {p: v for p, v in previous.approved.items()}
            review.spans = {p: s for p, s in previous.spans.items()
                            if any(c.path == p and c.route == "strike" for c in plan.candidates)}
        self.review = review
        self._render_plan()

    def _render_plan(self) -> None:
        header = Text()
        table = self.query_one("#candidates", DataTable)
        keep = self.candidate_rows[table.cursor_row] if self.candidate_rows and 0 <= table.cursor_row < len(self.candidate_rows) else None
        table.clear()
        self.candidate_rows = []
        if self.review is None:
            header.append("planning…" if self.current else "select a forget request", style="dim italic")
            self.query_one("#plan-header", Static).update(header)
            self.query_one("#candidate-detail", Static).update("")
            return
        plan = self.review.plan
        header.append("pref ", style="dim")
        header.append(plain(plan.request.pref, "bold"))
        header.append(f"   r:{plan.request.rid}", style="dim")
        header.append(f"   search: {plan.resolution.mode}", style="cyan")
        if plan.resolution.boundary:
            header.append("   resolves memories created before ", style="dim")
            header.append(plain(plan.resolution.boundary))
        header.append("\n")
        header.append(plain(plan.request.path, "dim"))
        if self.app.read_only:
            header.append("   read-only: review only", style="bold red")
        if self.review.stale:
            header.append("   STALE: files changed, re-planning", style="bold reverse yellow")
        self.query_one("#plan-header", Static).update(header)
        floor = plan.knobs.min_target_coverage
        for cand in plan.candidates:
            ok = Text("✓", style="bold green") if cand.actionable and self.review.approved.get(cand.path, True) else (
                Text("✗", style="bold red") if cand.actionable else Text(" "))
            notes = []
            collateral = [s for s in (cand.plan.spans if cand.plan else ()) if s.collateral]
            if cand.route == "strike" and cand.plan is not None:
                chosen = self.review.spans.get(cand.path)
                notes.append(f"{len(chosen)}/{len(cand.plan.spans)} spans" if chosen is not None
                             else f"{cand.plan.mentions} spans")
            if collateral:
                notes.append("⚠ compound")
            if cand.plan is not None and cand.plan.regions:
                notes.append(f"{len(cand.plan.regions)} unforgettable")
            if not cand.actionable and cand.route in ("skipped", "not_taken"):
                notes.append(cand.reason[:40])
            table.add_row(ok, str(cand.rank), plain(cand.route, ROUTE_STYLE.get(cand.route, "")),
                          coverage_gauge(cand.coverage, floor, width=8), plain(cand.path),
                          plain(", ".join(cand.shared_words)), plain(" · ".join(notes), "yellow" if collateral else "dim"),
                          key=cand.path)
            self.candidate_rows.append(cand.path)
        if keep in self.candidate_rows:
            table.move_cursor(row=self.candidate_rows.index(keep))
        self._render_detail()

    def _selected_candidate(self) -> Candidate | None:
        table = self.query_one("#candidates", DataTable)
        if self.review is None or not self.candidate_rows or not (0 <= table.cursor_row < len(self.candidate_rows)):
            return None
        return self.review.plan.candidate(self.candidate_rows[table.cursor_row])

    @on(DataTable.RowHighlighted, "#candidates")
    def _candidate_highlighted(self, _event: DataTable.RowHighlighted) -> None:
        self._render_detail()

    def _render_detail(self) -> None:
        cand = self._selected_candidate()
        text = Text()
        if cand is None:
            self.query_one("#candidate-detail", Static).update(text)
            return
        text.append(plain(cand.path, "bold"))
        text.append(f"  rank {cand.rank} via {cand.arms or '—'}\n", style="dim")
        text.append(plain(cand.reason))
        text.append("\n")
        if cand.plan is not None:
            for span in cand.plan.spans:
                chosen = span.index in self.review.spans.get(cand.path, set(cand.plan.selected))
                text.append("  [x] " if chosen else "  [ ] ", style="magenta" if chosen else "dim")
                text.append(plain(span.text, "strike" if chosen else ""))
                if span.collateral:
                    text.append("\n      ⚠ also removes: ", style="yellow")
                    text.append(plain(span.collateral, "yellow"))
                text.append("\n")
            for region in cand.plan.regions:
                text.append(f"  unforgotten ({region.kind}, line {region.line + cand.plan.body_line_offset}): ",
                            style="bold red")
                text.append(plain(region.text))
                text.append("\n")
        self.query_one("#candidate-detail", Static).update(text)

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
        knobs = base.with_overrides(min_target_coverage=max(0.0, min(1.0, floor)), max_targets=max(1, max_targets),
                                    min_shared_words=max(0, shared))
        if knobs != self.knobs:
            self.knobs = knobs
            if self.review is not None:
                self.plan_current(reroute_only=True)

    def action_floor(self, delta: float) -> None:
        current = (self.knobs or self.app.store.config.forget).min_target_coverage
        self.query_one("#knob-floor", Input).value = f"{max(0.0, min(1.0, round(current + delta, 4))):g}"

    def action_focus_knobs(self) -> None:
        self.query_one("#knob-floor", Input).focus()

    # -- decisions ---------------------------------------------------------------------
    def action_toggle_target(self) -> None:
        cand = self._selected_candidate()
        if cand is None or not cand.actionable or self.review is None:
            return
        self.review.approved[cand.path] = not self.review.approved.get(cand.path, True)
        self._render_plan()

    def action_open_diff(self) -> None:
        from .diff import DiffScreen
        cand = self._selected_candidate()
        if cand is None or cand.plan is None or self.review is None:
            return
        self.app.push_screen(DiffScreen(self.review, cand), lambda _r: self._render_plan())

    def action_apply(self) -> None:
        review = self.review
        if review is None:
            return
        if review.stale:
            self.notify("This plan is being re-made because files changed.", severity="warning", markup=False)
            return
        selection = review.selection()
        approved = [c for c in review.plan.actionable if not selection[c.path].rejects]
        if not approved:
            self.notify("No target is approved.", severity="warning", markup=False)
            return
        body = Text()
        body.append(f"Request {review.plan.request.path}: \"", style="bold")
        body.append(plain(review.plan.request.pref, "bold"))
        body.append("\"\n\n", style="bold")
        for cand in approved:
            assert cand.plan is not None
            plan = self.app.session.narrow(cand.plan, selection[cand.path].spans)
            body.append_text(plan_preview(plan))
            body.append("\n")
        rejected = [p for p, choice in selection.items() if choice.rejects]
        if rejected:
            body.append("Rejected (recorded, not changed): ", style="bold")
            body.append(plain(", ".join(rejected)))
            body.append("\n")
        body.append(f"\n{len(approved)} commit(s) plus one ledger commit. Undo any of them from the Undo screen.",
                    style="italic")
        self.app.push_screen(ConfirmModal("Apply this forget request?", body, "Apply"),
                             lambda ok: ok and self._apply(review, selection))

    def _apply(self, review: Review, selection: dict[str, Choice]) -> None:
        def done(result: ForgetApplied) -> None:
            commits = [c["commit"] for c in result.commits]
            self.app.record("action", f"apply {result.request}: {len(result.commits)} target(s)",
                            commits + [result.ledger_commit or ""])
            if result.failed:
                self.app.fail("Apply stopped", "; ".join(f"{f['path']}: {f['reason']}" for f in result.failed))
            else:
                summary = "\n".join(f"{(c['commit'] or '')[:7]} {c['subject']}" for c in result.commits)
                self.notify(summary or "nothing changed", title="Committed", markup=False, timeout=8)
            self.review = None
            self.app.scan_store(None)

        self.app.run_blocking(lambda: self.app.session.apply_forget(review.plan, selection), done,
                              f"apply {review.plan.request.path}", "apply")

    def action_dismiss_request(self) -> None:
        if self.current is None:
            return
        path = self.current
        def save(note: str | None) -> None:
            if not note:
                return
            self.app.run_blocking(lambda: self.app.session.dismiss(path, note),
                                  lambda sha: (self.app.record("action", f"dismiss {path}: {note}", [sha or ""]),
                                               self.notify(f"Dismissed {path}", markup=False),
                                               self.app.scan_store(None)),
                                  f"dismiss {path}", "apply")

        self.app.push_screen(NoteModal(f"Dismiss {path}?", plain("The request stays in the store; the decision is "
                                                                 "recorded in the ledger."), "Dismiss"), save)

    def action_residue(self) -> None:
        if self.review is None:
            return
        self.app.switch_mode("residue")
        self.app.screen.set_pref(self.review.plan.request.pref)
