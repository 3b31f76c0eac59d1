"""A pending request's plan as a reviewer has it open, for its report: the
targets it would take, each marked as the reviewer left it; nothing of it is
applied, and the report says so (report.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..forget.resolve import ForgetPlan

ReviewMark = Literal["approved", "skipped", "waiting"]


@dataclass(frozen=True)
class UnderReview:
    """A pending request's plan as a reviewer has it open (not applied): its
    targets go into the report, each marked as the reviewer left it."""

    plan: ForgetPlan
    marks: Mapping[str, ReviewMark]  # target path -> the reviewer's mark; a target not here waits
    # a strike target's sentences the reviewer chose (span indices); not here: the plan's own choice
    spans: Mapping[str, frozenset[int]] = field(default_factory=dict)


def proposed_targets(review: UnderReview) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for cand in review.plan.candidates:
        if not cand.actionable:
            continue
        spans = cand.plan.spans if cand.plan is not None else ()
        mark = review.marks.get(cand.path, "waiting")
        chosen = review.spans.get(cand.path, frozenset(cand.plan.selected) if cand.plan is not None else frozenset())
        if mark == "skipped":
            chosen = frozenset()  # nothing of a skipped target would be struck
        rows.append(
            {
                "path": cand.path,
                "route": cand.route,
                "coverage": None if cand.coverage is None else round(cand.coverage, 4),
                "decision": f"proposed_{mark}",
                "decided_by": None,
                "commit": None,
                "evidence": {
                    "shared_words": list(cand.shared_words),
                    "struck": [sp.text for sp in spans if sp.index in chosen] if cand.route == "strike" else [],
                    "history_line": None,
                    "reason": cand.reason,
                    "rank": cand.rank,
                },
                "flags": [],
            }
        )
    return sorted(rows, key=lambda r: r["path"])
