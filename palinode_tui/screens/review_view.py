"""What the Review screen shows, built from a plan, its draft and the ledger:
the blocking part (``build_review``, run in a worker) and the text."""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.text import Text

from palinode_core.api import Candidate, Choice, ForgetPlan, LedgerRecord, RequestState, Session

from ..drafts import Draft, DraftBook, Mark, TargetDraft
from ..render import (
    ROUTE_STYLE,
    comparison_line,
    coverage_gauge,
    evidence_text,
    found_by_line,
    found_by_marker,
    plain,
    plan_preview,
    route_word,
    short_date,
    words,
)

MARK_TEXT: dict[Mark, tuple[str, str]] = {
    "approved": ("✓", "bold green"),
    "partial": ("◐", "bold yellow"),
    "skipped": ("✗", "bold red"),
    "ask": ("○", "bold yellow"),
    "changed": ("?", "bold reverse yellow"),
    "not a target": (" ", ""),
}
CANDIDATE_COLUMNS = ("ok", "by", "route", "path", "note", "coverage", "shared")


@dataclass
class Review:
    """One request's plan with the reviewer's draft and the ledger's past decisions."""

    plan: ForgetPlan
    draft: Draft
    decisions: list[LedgerRecord] = field(default_factory=list)
    hidden: frozenset[str] = frozenset()  # forget requests the resolver proposed: never targets here
    moved: list[str] = field(default_factory=list)  # span choices moved by a file change on this plan
    stale: bool = False
    read: dict[str, str | None] = field(default_factory=dict)  # the version of each file the plan read, by path
    baseline: ForgetPlan | None = None  # Palinode's own plan of the same search and knobs (thorough plans)

    @property
    def targets(self) -> list[Candidate]:
        return [c for c in self.plan.candidates if c.path not in self.hidden]

    @property
    def actionable(self) -> list[Candidate]:
        return [c for c in self.plan.actionable if c.path not in self.hidden]

    def selection(self) -> dict[str, Choice]:
        return self.draft.selection(self.actionable)

    def past(self, path: str) -> list[str]:
        """The ledger's earlier decisions about one target, in words."""
        out = []
        for entry in self.decisions:
            when = short_date(entry.get("at"))[:10]
            if entry.get("action") == "apply":
                if path in (entry.get("rejected") or ()):
                    out.append(f"skipped {when}")
                for item in entry.get("approved") or ():
                    if isinstance(item, dict) and item.get("path") == path:
                        spans = item.get("spans") or []
                        out.append(f"applied {when}" + (f" ({len(spans)} sentence(s))" if spans else ""))
            elif entry.get("action") == "flag" and entry.get("path") == path:
                out.append(f"flagged {when}: {entry.get('note') or ''}")
        return out


def build_review(session: Session, book: DraftBook, plan: ForgetPlan, draft: Draft | None) -> Review:
    """Blocking: the ledger, the saved draft and the request list are read here."""
    request = plan.request
    requests = {s.path for s in session.request_states()}
    memories = session.memories
    hidden = frozenset(
        c.path for c in plan.candidates if c.path in requests or (c.path in memories and memories[c.path].forget_pref)
    )
    decisions = session.decisions(request.path)
    if draft is None or draft.rid != request.rid:
        draft = book.get(request.path, request.rid) or _from_ledger(request.path, request.rid, decisions)
    moved = draft.reconcile(plan)
    # Palinode's routing of the search the thorough plan already ran: no second search
    baseline = (
        session.reroute(plan.resolution, plan.knobs, resolver="palinode") if plan.resolver == "thorough" else None
    )
    read = {p: memories[p].fingerprint if p in memories else None for p in plan_paths(plan)}
    return Review(plan, draft, decisions, hidden, moved, read=read, baseline=baseline)


def plan_paths(plan: ForgetPlan) -> set[str]:
    """The files a plan is made of: its request and every candidate."""
    return {plan.request.path} | {c.path for c in plan.candidates}


def _from_ledger(request: str, rid: str, decisions: list[LedgerRecord]) -> Draft:
    """A new draft starts from the last apply: what was skipped then stays skipped."""
    draft = Draft(request, rid)
    applies = [e for e in decisions if e.get("action") == "apply"]
    if applies:
        for path in applies[-1].get("rejected") or ():
            draft.targets[str(path)] = TargetDraft(approved=False)
    return draft


def plan_header(review: Review | None, current: str | None, read_only: bool, waiting: str = "") -> Text:
    """``waiting``: what a plan not shown yet waits for (reading the store, indexing it)."""
    header = Text()
    if review is None:
        header.append(
            f"planning: {waiting}…" if current and waiting else "planning…" if current else "select a forget request",
            style="dim italic",
        )
        return header
    plan = review.plan
    header.append("pref ", style="dim")
    header.append(plain(plan.request.pref, "bold"))
    header.append(f"   r:{plan.request.rid}", style="dim")
    semantic = plan.semantic
    if plan.resolver != "thorough":
        header.append(f"   search: {plan.resolution.mode}", style="cyan")
    elif semantic is None:
        header.append("   meaning: off (words only)", style="dim")
    elif semantic.complete:
        header.append("   meaning: complete", style="cyan")
    else:
        if not semantic.query:
            share = "request not embedded yet"
        elif semantic.waiting:
            share = f"{semantic.waiting} new memor{'y' if semantic.waiting == 1 else 'ies'} without vectors yet"
        else:
            share = f"{semantic.share:.0%} of sentences embedded"
        header.append(f"   meaning: {share}; re-plans as vectors arrive", style="yellow")
        if plan.provisional:
            header.append(f" ({len(plan.provisional)} target(s) may change)", style="yellow")
    header.append("\n")
    header.append(plain(plan.request.path, "dim"))
    if plan.resolution.boundary:
        header.append("  before ", style="dim")
        header.append(plain(short_date(plan.resolution.boundary)))
    if read_only:
        header.append("   read-only: review only", style="bold red")
    if review.stale:
        header.append("   STALE: files changed, re-planning", style="bold reverse yellow")
    header.append("\n")
    header.append_text(route_rule(plan))
    header.append("\n")
    header.append_text(comparison_line(plan, review.baseline))
    for warning in plan.warnings:  # e.g. a target holding the user's own edits: apply refuses
        header.append("\n⚠ ", style="bold yellow")
        header.append(plain(warning, "yellow"))
    earlier = [e for e in review.decisions if e.get("action") in ("apply", "dismiss")]
    if earlier:
        last = earlier[-1]
        header.append("\nearlier: ", style="bold")
        header.append(
            plain(f"{'applied' if last.get('action') == 'apply' else 'dismissed'} {short_date(last.get('at'))}")
        )
        if last.get("action") == "apply":
            header.append(
                plain(
                    f" · {len(last.get('approved') or ())} applied, "
                    f"{len(last.get('rejected') or ())} skipped"
                    + (f", {len(last['deferred'])} left for later" if last.get("deferred") else "")
                )
            )
        if last.get("note"):
            header.append(plain(f' · "{last.get("note")}"', "italic"))
    return header


def route_rule(plan: ForgetPlan) -> Text:
    """What decides each route under the resolver shown, so no knob seems to
    govern what it does not (under the thorough one the knob row is labelled
    as Palinode's plan, compared beside it)."""
    text = Text("routes: ", style="dim")
    if plan.resolver == "thorough":
        text.append("thorough", style="bold cyan")
        text.append(" (r) · archive: most sentences, or the name, carry it", style="dim")
    else:
        text.append("Palinode's own", style="bold")
        text.append(f" (r) · archive: coverage ≥ floor {plan.knobs.min_target_coverage:g}", style="dim")
    return text


def attention(cand: Candidate) -> list[str]:
    """What a reviewer must look at before approving: a compound sentence,
    mentions striking cannot reach, evidence too weak to pre-approve."""
    notes = []
    spans = cand.plan.spans if cand.plan is not None else ()
    if any(s.collateral for s in spans):
        notes.append("⚠ compound")
    if cand.actionable and any(not e.preapproved for e in cand.evidence):
        notes.append("ask: low evidence")
    elif cand.actionable and not cand.preapproved and not notes:
        notes.append("ask")
    if cand.plan is not None and cand.plan.regions and cand.route != "unforgotten":  # else the route says it
        notes.append(f"{len(cand.plan.regions)} unforgotten")
    return notes


def candidate_cells(review: Review, cand: Candidate, floor: float | None) -> tuple[Text, ...]:
    mark = review.draft.mark(cand)
    symbol, style = MARK_TEXT[mark]
    notes = ["changed, review again"] if mark == "changed" else []
    notes += attention(cand)
    if cand.route == "strike" and cand.plan is not None:
        chosen = review.draft.chosen_spans(cand)
        count = len(cand.plan.selected) if chosen is None else len(chosen)
        if count < len(cand.plan.spans):  # every sentence struck needs no note
            notes.append(f"{count}/{len(cand.plan.spans)} spans")
    if not cand.actionable and cand.route in ("skipped", "not_taken"):
        notes.append(words(cand.reason)[:40])
    notes += review.past(cand.path)[-1:]
    note_style = "yellow" if mark in ("changed", "ask") or "⚠ compound" in notes else "dim"
    return (
        Text(symbol, style=style),
        found_by_marker(cand, review.plan.resolver),
        plain(route_word(cand.route), ROUTE_STYLE.get(cand.route, "")),
        plain(cand.path),
        plain(" · ".join(notes), note_style),
        coverage_gauge(cand.coverage, floor, width=8),
        plain(", ".join(cand.shared_words)),
    )


def candidate_detail(review: Review, cand: Candidate) -> Text:
    text = Text()
    text.append(plain(cand.path, "bold"))
    text.append(f"  rank {cand.rank} via ", style="dim")
    text.append_text(plain(cand.arms or "—", "dim"))
    text.append("\n")
    text.append_text(found_by_line(cand, review.plan.resolver))
    text.append("\n")
    text.append(plain(words(cand.reason)))
    text.append("\n")
    mark = review.draft.mark(cand)
    if mark == "changed":
        text.append(
            "The file changed under your sentence choice: review it again (d), or approve with space.\n",
            style="bold yellow",
        )
    elif mark == "ask":
        text.append(
            "Not pre-approved (" + ", ".join(attention(cand)) + "): left out of an apply "
            "until you approve it with space.\n",
            style="bold yellow",
        )
    for warning in review.plan.warnings_for(cand):  # its own edits: apply refuses to commit them
        text.append("⚠ ", style="bold yellow")
        text.append(plain(warning, "yellow"))
        text.append("\n")
    for line in review.past(cand.path):
        text.append("earlier: ", style="bold")
        text.append(plain(line))
        text.append("\n")
    if cand.evidence:
        text.append("evidence:\n", style="bold")
        text.append_text(evidence_text(cand, review.plan.request.pref))
    if cand.plan is not None:
        spans = review.draft.chosen_spans(cand)
        chosen_set = set(cand.plan.selected) if spans is None else spans
        for span in cand.plan.spans:
            chosen = span.index in chosen_set
            text.append("  [x] " if chosen else "  [ ] ", style="magenta" if chosen else "dim")
            text.append(plain(span.text, "strike" if chosen else ""))
            if span.collateral:
                text.append("\n      ⚠ also removes: ", style="yellow")
                text.append(plain(span.collateral, "yellow"))
            text.append("\n")
        for region in cand.plan.regions:
            text.append(
                f"  unforgotten ({region.kind}, line {region.line + cand.plan.body_line_offset}): ", style="bold red"
            )
            text.append(plain(region.text))
            text.append("\n")
    return text


def apply_preview(review: Review, selection: dict[str, Choice], session: Session) -> Text:
    """Blocking (each narrowed plan is planned again): what applying
    ``selection`` writes, what it leaves out and why, and how many commits."""
    approved = [c for c in review.actionable if c.path in selection and not selection[c.path].rejects]
    body = Text()
    body.append("Request ", style="bold")
    body.append_text(plain(review.plan.request.path, "bold"))
    body.append(': "', style="bold")
    body.append(plain(review.plan.request.pref, "bold"))
    body.append('"\n\n', style="bold")
    for cand in approved:
        assert cand.plan is not None
        body.append_text(plan_preview(session.narrow(cand.plan, selection[cand.path].spans)))
        body.append("\n")
    left_out = (
        ("Skipped (recorded, not changed): ", "bold", [p for p, choice in selection.items() if choice.rejects]),
        (
            "Not approved yet, left for later (space approves): ",
            "bold yellow",
            [c.path for c in review.actionable if review.draft.mark(c) == "ask"],
        ),
        (
            "Changed on disk, review again (not applied now): ",
            "bold yellow",
            [c.path for c in review.actionable if review.draft.mark(c) == "changed"],
        ),
    )
    for title, style, paths in left_out:
        if paths:
            body.append(title, style=style)
            body.append(plain(", ".join(paths)))
            body.append("\n")
    body.append(
        f"\n{len(approved)} commit(s) plus one ledger commit. Undo any of them from the Undo screen.", style="italic"
    )
    return body


def decider(state: RequestState) -> str:
    """Who made the request's last decision, and what it was (in this clone or one synced with it)."""
    last = state.last_decision
    if not last:
        return ""
    who = str(last.get("decided_by") or "").split(" <")[0] or "?"
    return f"{last.get('action')} · {who}"


def semantic_change(before: ForgetPlan, after: ForgetPlan) -> str | None:
    """What vectors that arrived since the last plan changed, in words; None when none arrived."""
    was, now = before.semantic, after.semantic
    if was is None or now is None or (was.embedded, was.query) == (now.embedded, now.query):
        return None
    old_routes = {c.path: c.route for c in before.targets}
    new_routes = {c.path: c.route for c in after.targets}
    added = len(new_routes.keys() - old_routes.keys())
    dropped = len(old_routes.keys() - new_routes.keys())
    rerouted = sum(1 for p, r in new_routes.items() if p in old_routes and old_routes[p] != r)
    counts = ((added, "new target(s)"), (dropped, "target(s) gone"), (rerouted, "route(s) changed"))
    what = ", ".join(f"{n} {w}" for n, w in counts if n) or "no target changed"
    return f"{now.describe()}: {what}."
