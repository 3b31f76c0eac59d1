"""A reviewed apply: exactly the targets and sentences a person approved, one
commit each, the decision recorded in the ledger; and dismiss and flag."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import StalePlan
from ..ops.apply import apply
from ..storage.store import Store
from .ledger import record
from .requests import request_at
from .resolve import ForgetPlan
from .selection import APPROVE_ALL, Selection, narrow


@dataclass
class ForgetApplied:
    request: str
    commits: list[dict[str, Any]] = field(default_factory=list)
    approved: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    deferred: list[str] = field(default_factory=list)
    failed: list[dict[str, str]] = field(default_factory=list)
    ledger_commit: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"request": self.request, "commits": self.commits, "approved": self.approved,
                "rejected": self.rejected, "deferred": self.deferred, "failed": self.failed,
                "ledger_commit": self.ledger_commit}


def apply_forget(store: Store, fplan: ForgetPlan, selection: Selection | None = None,
                 note: str | None = None) -> ForgetApplied:
    """Apply the approved targets, one commit each in rank order. With no
    ``selection`` every pre-approved actionable target is approved with its
    chosen spans (a proposal that is not pre-approved is deferred to the
    reviewer); with one, targets it does not name are deferred."""
    store.check_writable()
    store.git.preflight()
    request = fplan.request
    out = ForgetApplied(request.path)
    for cand in fplan.actionable:
        if selection is None:
            choice = APPROVE_ALL if cand.preapproved else None
        else:
            choice = selection.get(cand.path)
        if choice is None:
            out.deferred.append(cand.path)
            continue
        if choice.rejects:
            out.rejected.append(cand.path)
            continue
        assert cand.plan is not None
        try:
            plan = narrow(store, cand.plan, choice.spans)
            done = apply(store, plan)
        except StalePlan as exc:
            out.failed.append({"path": cand.path, "reason": str(exc)})
            break
        out.commits.append({"path": cand.path, "op": plan.op, "commit": done.commit, "subject": plan.commit_subject})
        out.approved.append({"path": cand.path, "route": cand.route, "spans": list(plan.selected),
                             "commit": done.commit})
    out.ledger_commit = record(store, {
        "action": "apply", "request": request.path, "pref": request.pref, "rid": request.rid,
        "knobs": fplan.to_dict()["knobs"], "approved": out.approved, "rejected": out.rejected,
        "deferred": out.deferred, "failed": out.failed, "note": note,
        "complete": not out.failed,
    })
    return out


def dismiss(store: Store, request_path: str, note: str) -> str | None:
    request = request_at(store, request_path)
    return record(store, {"action": "dismiss", "request": request.path, "pref": request.pref,
                          "rid": request.rid, "note": note})


def flag(store: Store, path: str, line: int, kind: str, text: str, note: str,
         request_path: str | None = None) -> str | None:
    rel, _ = store.resolve(path)
    return record(store, {"action": "flag", "request": request_path, "path": rel, "line": line,
                          "kind": kind, "text": text, "note": note})
