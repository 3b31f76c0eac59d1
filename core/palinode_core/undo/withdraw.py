"""Withdraw a forget request: restore what it archived, unstrike what it
struck, archive the request record; each step its own commit, journaled."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..forget.requests import Request, find_requests, request_at
from ..forget.txn import begin, commit_ref, describe, intent, refusal, step_record
from ..ops import lifecycle
from ..ops.lock import writer_lock
from ..ops.plan import Plan
from ..storage.memory import Memory
from ..storage.paths import history_rel_for
from ..storage.store import Store
from ..text.history import parse_entries
from ..text.words import retraction_id


@dataclass(frozen=True)
class WithdrawPlan:
    request: str
    pref: str
    records: tuple[str, ...]
    steps: tuple[Plan, ...]
    broad: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "request": self.request,
            "pref": self.pref,
            "records": list(self.records),
            "broad": self.broad,
            "steps": [s.to_dict() for s in self.steps],
            "recovery": "a withdrawal is undone by saving the request again (re-plan and apply it)",
        }


def _struck_by(store: Store, memory: Memory, request: Request) -> bool:
    """Did this request strike this file? Its history line or commit says so."""
    text, _ = store.read_optional(history_rel_for(memory.rel))
    for entry in parse_entries(text or ""):
        if entry.rid == request.rid and f"superseded by {request.path}" in entry.text:
            return True
    for commit in store.git.log(memory.rel, limit=100):
        ours = commit.trailers.get("Forget-Request") == request.path or commit.subject.endswith(f"<- {request.path}")
        if ours and "retract:" in commit.subject:
            return True
    return False


def plan_withdraw(store: Store, request_path: str, memories: Mapping[str, Memory], broad: bool = False) -> WithdrawPlan:
    """Take a request back: restore what it archived, unstrike what it struck,
    archive the request record. By default only what *this* request did;
    ``broad`` reproduces Palinode 0.23 (every same-pref record and strike)."""
    request = request_at(store, request_path, memories)
    memory, pref = request.memory, request.pref
    records = [memory.rel]
    if broad:
        records += [
            r.path
            for r in find_requests(memories)
            if r.norm == request.norm and r.path != memory.rel and not r.memory.archived
        ]
    why = f'forget request withdrawn: "{pref}"'
    trailers = {"Forget-Request": memory.rel, "Retraction-Id": request.rid}
    steps: list[Plan] = []
    for rel, other in sorted(memories.items()):
        if rel in records:
            continue
        if other.archived and other.superseded_by in records:
            steps.append(lifecycle.plan_restore(store, rel, reason=why, trailers=trailers))
        if request.norm in other.retracted_prefs and (broad or _struck_by(store, other, request)):
            steps.append(lifecycle.plan_unretract(store, rel, pref, reason=why, trailers=trailers))
    for rel in records:
        steps.append(lifecycle.plan_archive(store, rel, reason=why, trailers=trailers))
    return WithdrawPlan(memory.rel, pref, tuple(records), tuple(s for s in steps if s.changes), broad)


def apply_withdraw(store: Store, wplan: WithdrawPlan, fault: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Each step its own commit, as Palinode does, then the ledger record: one
    transaction (see forget/txn.py), so a stop anywhere is reported by
    ``integrity`` and finished or rolled back whole by ``recover``. A step
    whose file we just rewrote in this withdraw is re-planned on our own
    output, never on a stranger's."""
    store.check_writable()
    store.git.preflight()
    with writer_lock(store):
        steps = [step_record(s) for s in wplan.steps]
        entry = intent(store, "withdraw", wplan.request, wplan.pref, retraction_id(wplan.pref), steps)
        txn = begin(store, replace(entry, broad=wplan.broad), fault)
        written: dict[str, str] = {}
        for number, step in enumerate(wplan.steps):
            plan = step
            if step.target in written:
                current = store.load(step.target)
                if current.fingerprint == written[step.target]:
                    plan = lifecycle.replan(store, step)
            if fault:
                fault(f"before_step_{number}")
            if not txn.run_step(number, plan):
                break
            written[step.target] = store.load(step.target).fingerprint
        ledger_commit = txn.record_ledger()  # none when nothing was committed
    done = txn.entry.committed()
    if txn.entry.failed and not done:
        raise refusal(txn.entry)
    failed = [{"path": f.path, "op": f.op, "reason": f.reason} for f in txn.entry.failed]
    return {
        "request": wplan.request,
        "status": "partial" if failed else "withdrawn",
        "commits": [commit_ref(d) for d in done],
        "failed": failed,
        "ledger_commit": ledger_commit,
        "message": describe(txn.entry, done)
        + (
            "; the withdrawal is recorded in the ledger" if ledger_commit else "; nothing to withdraw, nothing recorded"
        ),
    }
