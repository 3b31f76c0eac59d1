"""What the Review screen shows, built from a plan, its draft and the ledger:
the blocking part (``build_review``, run in a worker) and the text."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rich.text import Text

from palinode_core.forget.resolve import Candidate, ForgetPlan
from palinode_core.forget.selection import Choice
from palinode_core.session import Session

from ..drafts import Draft, DraftBook, Mark, TargetDraft
from ..render import ROUTE_STYLE, coverage_gauge, plain, route_word, short_date, words

MARK_TEXT: dict[Mark, tuple[str, str]] = {
    "approved": ("✓", "bold green"), "partial": ("◐", "bold yellow"), "skipped": ("✗", "bold red"),
    "changed": ("?", "bold reverse yellow"), "not a target": (" ", ""),
}


@dataclass
class Review:
    """One request's plan with the reviewer's draft and the ledger's past decisions."""

    plan: ForgetPlan
    draft: Draft
    decisions: list[dict[str, Any]] = field(default_factory=list)
    hidden: frozenset[str] = frozenset()  # forget requests the resolver proposed: never targets here
    moved: list[str] = field(default_factory=list)  # span choices moved by a file change on this plan
    stale: bool = False

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
    hidden = frozenset(c.path for c in plan.candidates
                       if c.path in requests or (c.path in memories and memories[c.path].forget_pref))
    decisions = session.decisions(request.path)
    if draft is None or draft.rid != request.rid:
        draft = book.get(request.path, request.rid) or _from_ledger(request.path, request.rid, decisions)
    moved = draft.reconcile(plan)
    return Review(plan, draft, decisions, hidden, moved)


def _from_ledger(request: str, rid: str, decisions: list[dict[str, Any]]) -> Draft:
    """A new draft starts from the last apply: what was skipped then stays skipped."""
    draft = Draft(request, rid)
    applies = [e for e in decisions if e.get("action") == "apply"]
    if applies:
        for path in applies[-1].get("rejected") or ():
            draft.targets[str(path)] = TargetDraft(approved=False)
    return draft


def plan_header(review: Review | None, current: str | None, read_only: bool) -> Text:
    header = Text()
    if review is None:
        header.append("planning…" if current else "select a forget request", style="dim italic")
        return header
    plan = review.plan
    header.append("pref ", style="dim")
    header.append(plain(plan.request.pref, "bold"))
    header.append(f"   r:{plan.request.rid}", style="dim")
    header.append(f"   search: {plan.resolution.mode}", style="cyan")
    header.append("\n")
    header.append(plain(plan.request.path, "dim"))
    if plan.resolution.boundary:
        header.append("  before ", style="dim")
        header.append(plain(short_date(plan.resolution.boundary)))
    if read_only:
        header.append("   read-only: review only", style="bold red")
    if review.stale:
        header.append("   STALE: files changed, re-planning", style="bold reverse yellow")
    for warning in plan.warnings:  # e.g. a target holding the user's own edits: apply refuses
        header.append("\n⚠ ", style="bold yellow")
        header.append(plain(warning, "yellow"))
    earlier = [e for e in review.decisions if e.get("action") in ("apply", "dismiss")]
    if earlier:
        last = earlier[-1]
        header.append("\nearlier: ", style="bold")
        header.append(plain(f"{'applied' if last.get('action') == 'apply' else 'dismissed'} "
                            f"{short_date(last.get('at'))}"))
        if last.get("action") == "apply":
            header.append(plain(f" · {len(last.get('approved') or ())} applied, "
                                f"{len(last.get('rejected') or ())} skipped"))
        if last.get("note"):
            header.append(plain(f' · "{last.get("note")}"', "italic"))
    return header


def candidate_cells(review: Review, cand: Candidate, floor: float) -> tuple[Text, ...]:
    mark = review.draft.mark(cand)
    symbol, style = MARK_TEXT[mark]
    notes = []
    if mark == "changed":
        notes.append("changed, review again")
    if cand.route == "strike" and cand.plan is not None:
        chosen = review.draft.chosen_spans(cand)
        total = len(cand.plan.spans)
        notes.append(f"{len(chosen)}/{total} spans" if chosen is not None else f"{total}/{total} spans")
    if any(s.collateral for s in (cand.plan.spans if cand.plan else ())):
        notes.append("⚠ compound")
    if cand.plan is not None and cand.plan.regions:
        notes.append(f"{len(cand.plan.regions)} unforgettable")
    if not cand.actionable and cand.route in ("skipped", "not_taken"):
        notes.append(words(cand.reason)[:40])
    notes += review.past(cand.path)[-1:]
    note_style = "yellow" if mark == "changed" or "⚠ compound" in notes else "dim"
    return (Text(symbol, style=style), Text(str(cand.rank)), plain(route_word(cand.route), ROUTE_STYLE.get(cand.route, "")),
            coverage_gauge(cand.coverage, floor, width=8), plain(cand.path), plain(", ".join(cand.shared_words)),
            plain(" · ".join(notes), note_style))


def candidate_detail(review: Review, cand: Candidate) -> Text:
    text = Text()
    text.append(plain(cand.path, "bold"))
    text.append(f"  rank {cand.rank} via {cand.arms or '—'}\n", style="dim")
    text.append(plain(words(cand.reason)))
    text.append("\n")
    if review.draft.mark(cand) == "changed":
        text.append("The file changed under your sentence choice: review it again (d), or approve with space.\n",
                    style="bold yellow")
    for warning in review.plan.warnings_for(cand):  # its own edits: apply refuses to commit them
        text.append("⚠ ", style="bold yellow")
        text.append(plain(warning, "yellow"))
        text.append("\n")
    for line in review.past(cand.path):
        text.append("earlier: ", style="bold")
        text.append(plain(line))
        text.append("\n")
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
            text.append(f"  unforgotten ({region.kind}, line {region.line + cand.plan.body_line_offset}): ",
                        style="bold red")
            text.append(plain(region.text))
            text.append("\n")
    return text
