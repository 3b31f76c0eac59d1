"""A reviewed apply: exactly the targets and sentences a person approved, one
commit each, the decision recorded in the ledger; and dismiss and flag."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..errors import PalinodeError, UsageError
from ..ops.apply import Fault, refuse_stale, refuse_uncommitted
from ..ops.backing import listed_from
from ..ops.lock import writer_lock
from ..ops.plan import Plan
from ..storage.memory import ScanResult
from ..storage.records import DECIDING_ACTIONS, LedgerRecord, StruckSentence, TxnIntent
from ..storage.store import Store
from . import saved
from .leak import leak_check, residue_record
from .ledger import LEDGER_REL, conflict_in, parse_ledger, read, record
from .requests import request_at
from .resolve import ForgetPlan
from .saved import Approved
from .selection import APPROVE_ALL, Selection, narrow
from .txn import begin, describe, intent, ledger_record, refusal, step_record

if TYPE_CHECKING:
    from ..search.index import SearchIndex


@dataclass
class ForgetApplied:
    request: str
    commits: list[dict[str, Any]] = field(default_factory=list)
    approved: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    deferred: list[str] = field(default_factory=list)
    failed: list[dict[str, str]] = field(default_factory=list)
    ledger_commit: str | None = None
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "request": self.request,
            "commits": self.commits,
            "approved": self.approved,
            "rejected": self.rejected,
            "deferred": self.deferred,
            "failed": self.failed,
            "ledger_commit": self.ledger_commit,
            "message": self.message,
        }


@dataclass(frozen=True)
class LeakCheck:
    """What the leak check after an apply reads, handed down by the caller (so
    the transaction calls the check itself, never back up): the scan the apply
    was decided on, which files may have moved since it (None: any, so every
    file is stat-ed again), and the search index (its cached sentence vectors)."""

    scan: ScanResult
    index: SearchIndex | None = None
    moved: frozenset[str] | None = None


def apply_forget(
    store: Store,
    fplan: ForgetPlan,
    selection: Selection | None = None,
    note: str | None = None,
    fault: Fault | None = None,
    leak: LeakCheck | None = None,
    reopen: bool = False,
) -> ForgetApplied:
    """Apply the approved targets, one commit each in rank order, then the
    ledger record: one transaction (see txn.py). With ``leak``, the leak check
    on the store as the steps left it is committed with the decision's own
    record. With no ``selection`` every
    pre-approved actionable target is approved with its chosen spans (a proposal
    that is not pre-approved is deferred to the reviewer); with one, targets it
    does not name are deferred.

    A refusal writes nothing, not even a ledger record: a selection naming a
    path the plan does not target, nothing approved, a stale target, a target
    holding the user's own edits, or a first step refused. A step refused after
    others were committed stops the run; what was committed stays and the
    ledger records the run as partial."""
    store.check_writable()
    store.git.preflight()
    with writer_lock(store):
        refuse_decided(store, fplan.request.path, reopen)
        settled = _settle(store, fplan, note) if reopen and not fplan.actionable else None
        return settled or execute(store, approve(store, fplan, selection, note), fault, leak)


def apply_saved(store: Store, approved: Approved, leak: LeakCheck, reopen: bool = False) -> ForgetApplied:
    """Apply a saved plan exactly as it was approved, after checking the store
    still holds what it was planned on (forget.saved); nothing is planned again."""
    store.check_writable()
    store.git.preflight()
    with writer_lock(store):
        scan = store.refresh(leak.scan, None if leak.moved is None else set(leak.moved))
        with listed_from(store, scan.memories):  # the dependents as they are now: no git grep
            checked = saved.checked(store, approved, leak.index)
        refuse_decided(store, approved.request, reopen)
        return execute(store, checked, leak=LeakCheck(scan, leak.index, frozenset()))


def approve(store: Store, fplan: ForgetPlan, selection: Selection | None, note: str | None) -> Approved:
    """What applying ``fplan`` with ``selection`` would do, as a value: the
    steps (each target's plan narrowed to the approved spans) and the ledger
    fields. What ``plan --out`` saves and ``apply --plan`` executes."""
    _refuse_unknown(fplan, selection)
    steps: list[tuple[Plan, str]] = []
    rejected: list[str] = []
    deferred: list[str] = []
    for cand in fplan.actionable:
        choice = (APPROVE_ALL if cand.preapproved else None) if selection is None else selection.get(cand.path)
        if choice is None:
            deferred.append(cand.path)
        elif choice.rejects:
            rejected.append(cand.path)
        else:
            assert cand.plan is not None
            steps.append((narrow(store, cand.plan, choice.spans), cand.route))
    if not steps:
        raise PalinodeError(_nothing_approved(fplan, rejected, deferred, last_decision(store, fplan.request.path)))
    request = fplan.request
    return Approved(
        request=request.path,
        request_fingerprint=request.memory.fingerprint,
        pref=request.pref,
        rid=request.rid,
        resolver=fplan.resolver,
        planned_at=store.now().isoformat(),
        steps=tuple(steps),
        ledger={
            "knobs": fplan.to_dict()["knobs"],
            "search_mode": fplan.resolution.mode,
            # every target as resolved, so an audit can show route and coverage without re-resolving
            "targets": [
                {
                    "path": c.path,
                    "rank": c.rank,
                    "route": c.route,
                    "shared_words": list(c.shared_words),
                    "coverage": None if c.coverage is None else round(c.coverage, 4),
                    "reason": c.reason,
                }
                for c in fplan.targets
            ],
            "rejected": rejected,
            "deferred": deferred,
            "note": note,
            "failed": [],
        },
    )


def execute(
    store: Store, approved: Approved, fault: Fault | None = None, leak: LeakCheck | None = None
) -> ForgetApplied:
    """Run exactly ``approved`` as one transaction (the writer lock held)."""
    plans = list(approved.steps)
    idle = [p.target for p, _ in plans if not p.changes]
    if idle:  # it would commit nothing, and the ledger would call the apply complete without it
        raise PalinodeError(f"the approved change to {idle[0]} changes nothing; nothing was changed")
    refuse_stale(store, [p for p, _ in plans])
    refuse_uncommitted(store, [p for p, _ in plans])
    out = ForgetApplied(
        approved.request, rejected=list(approved.ledger["rejected"]), deferred=list(approved.ledger["deferred"])
    )
    steps = [step_record(p, route=r, spans=p.selected) for p, r in plans]
    entry = replace(
        intent(store, "forget", approved.request, approved.pref, approved.rid, steps), ledger=approved.ledger
    )
    txn = begin(store, entry, fault)
    for index, (plan, _route) in enumerate(plans):
        if fault:
            fault(f"before_step_{index}")
        if not txn.run_step(index, plan):
            break
    out.failed = [{"path": f.path, "reason": f.reason} for f in txn.entry.failed]
    leak_notice = ""
    if leak is not None and txn.entry.committed():
        try:
            txn.attach(_leak_record(store, approved, leak))
        # the forget stands and its decision is recorded; the check (derived data: a busy or damaged
        # index is sqlite3.Error) can be run again on demand
        except (PalinodeError, OSError, sqlite3.Error) as exc:
            leak_notice = f"; the leak check could not run ({exc})"
    out.ledger_commit = txn.record_ledger()  # none when nothing was committed
    done = txn.entry.committed()
    if not done:
        raise refusal(txn.entry)
    for step in done:
        out.commits.append({"path": step.path, "op": step.op, "commit": step.commit, "subject": step.subject})
        route = txn.entry.steps[step.index].route
        out.approved.append({"path": step.path, "route": route, "spans": list(step.spans), "commit": step.commit})
    out.message = f"{describe(txn.entry, done)}; the decision is recorded in the ledger{leak_notice}"
    return out


def _leak_record(store: Store, approved: Approved, leak: LeakCheck) -> LedgerRecord:
    """The leak check on the store as the apply left it: the caller's scan
    brought up to date for what moved since and for our own writes."""
    moved = None if leak.moved is None else set(leak.moved) | approved.files
    request = request_at(store, approved.request)
    leaks = leak_check(request, store.refresh(leak.scan, moved).memories, leak.index)
    return residue_record(request, leaks)


def refuse_decided(store: Store, request_path: str, reopen: bool) -> None:
    """A request someone dismissed (here, or in a clone this one synced with)
    is applied only when the reviewer says so (``reopen``): say who and why."""
    held = parse_ledger(store.read_text(LEDGER_REL) or "")
    if reopen or not any(d.get("request") == request_path and d.get("action") == "dismiss" for d in held):
        return  # no dismissal on file: history (a git log) need not be asked which records it backs
    current = [line.entry for line in read(store).current(request_path)]
    last = next((d for d in reversed(current) if d.get("action") == "dismiss"), None)
    if last is None:
        return
    note = f" ({str(last.get('note'))[:120]!r})" if last.get("note") else ""
    raise UsageError(
        f"{request_path} was dismissed by {last.get('decided_by') or 'a reviewer'} at {last.get('at')}{note}; "
        "nothing was changed (apply it anyway with --reopen)"
    )


def last_decision(store: Store, request_path: str) -> LedgerRecord | None:
    """The latest apply, dismiss or withdraw history backs for the request (in the order history made them)."""
    decisions = [
        d for d in read(store).believed if d.get("request") == request_path and d.get("action") in DECIDING_ACTIONS
    ]
    return decisions[-1] if decisions else None


def _settle(store: Store, fplan: ForgetPlan, note: str | None) -> ForgetApplied | None:
    """``apply --reopen`` of a request dismissed and applied apart, with nothing
    left to change: record the decision that it stays applied (no commit but the
    ledger's, as a dismissal), which settles the conflict. None: no conflict."""
    request = fplan.request
    if conflict_in(read(store).current(request.path)) is None:
        return None
    sha = record(
        store,
        {
            "action": "apply",
            "request": request.path,
            "pref": request.pref,
            "rid": request.rid,
            "knobs": fplan.to_dict()["knobs"],
            "search_mode": fplan.resolution.mode,
            "targets": [],
            "approved": [],
            "rejected": [],
            "deferred": [],
            "failed": [],
            "note": note,
            "complete": True,
        },
    )
    return ForgetApplied(
        request.path,
        ledger_commit=sha,
        message=f"nothing left to change: recorded that {request.path} stays applied, "
        "settling the dismissal made apart from its apply",
    )


def _refuse_unknown(fplan: ForgetPlan, selection: Selection | None) -> None:
    """A selection may only name what this plan would change."""
    targets = [c.path for c in fplan.actionable]
    unknown = sorted(set(selection or ()) - set(targets))
    if unknown:
        raise UsageError(
            f"not a target of the plan of {fplan.request.path}: {', '.join(unknown)} "
            f"(its targets: {', '.join(targets) or 'none'}); nothing was changed"
        )


def _nothing_approved(fplan: ForgetPlan, rejected: list[str], deferred: list[str], last: LedgerRecord | None) -> str:
    head = f"nothing to apply for {fplan.request.path}"
    if not fplan.actionable:
        if last is not None and last.get("action") == "apply":  # perhaps in another clone, then synced
            head += f": already applied by {last.get('decided_by') or 'a reviewer'} at {last.get('at')}"
        return f"{head}: no target would change; nothing was changed"
    if rejected and not deferred:
        return f"{head}: every target is rejected (dismiss the request to record that); nothing was changed"
    return f"{head}: no target is approved (awaiting review: {', '.join(deferred)}); nothing was changed"


def dismiss(store: Store, request_path: str, note: str) -> str | None:
    request = request_at(store, request_path)
    current = [line.entry for line in read(store).current(request.path)]
    last = next((d for d in reversed(current) if d.get("action") == "apply"), None)
    if last is not None and not last.get("deferred") and last.get("complete", True):
        # applied in full (also apart from a dismissal): dismissing would call it undecided while its
        # archives and strikes stand (a partial apply may be dismissed: the rest is not wanted)
        raise UsageError(
            f"{request.path} was applied by {last.get('decided_by') or 'a reviewer'} at {last.get('at')}; "
            "withdraw it first (palinode-audit withdraw) to dismiss it; nothing was changed"
        )
    return record(
        store, {"action": "dismiss", "request": request.path, "pref": request.pref, "rid": request.rid, "note": note}
    )


def close(store: Store, request_path: str, live: set[str], note: str | None = None) -> str | None:
    """A partial request with nothing left to apply, recorded as done: an apply that approves
    nothing more and rejects what an earlier apply approved that is no longer in force."""
    request = request_at(store, request_path)
    earlier = [d for d in read(store).believed if d.get("request") == request.path and d.get("action") == "apply"]
    approved = {a.get("path") for d in earlier for a in d.get("approved") or () if isinstance(a, dict)}
    return record(
        store,
        {
            "action": "apply",
            "request": request.path,
            "pref": request.pref,
            "rid": request.rid,
            "targets": [],
            "approved": [],
            "rejected": sorted(p for p in approved - live if isinstance(p, str)),
            "deferred": [],
            "failed": [],
            "complete": True,
            "note": note or "closed: nothing remained to apply",
        },
    )


def strike_intent(store: Store, plan: Plan, line: int, text: str, note: str | None) -> TxnIntent:
    """A hand strike's transaction before its first write: its one step, and the sentence."""
    request = plan.trailers.get("Forget-Request") or plan.superseded_by or ""
    steps = [step_record(plan, route="strike", spans=plan.selected)]
    # strike_sentence's plan carries its request's preference and retraction id
    entry = intent(store, "strike", request, plan.pref or "", plan.rid or "", steps)
    return replace(entry, struck=StruckSentence(plan.target, line, text, note))


def strike_by_hand(store: Store, plan: Plan, line: int, text: str, note: str | None = None) -> ForgetApplied:
    """A sentence a reviewer struck for a request (``plan``: ``selection.strike_sentence``): its commit
    and the decision, with who made it, in the ledger, as one transaction (recover completes either)."""
    store.check_writable()
    store.git.preflight()
    with writer_lock(store):
        refuse_stale(store, [plan])
        refuse_uncommitted(store, [plan])
        txn = begin(store, strike_intent(store, plan, line, text, note), None)
        txn.run_step(0, plan)
        out = ForgetApplied(txn.entry.request)
        out.ledger_commit = txn.record_ledger()
        done = txn.entry.committed()
        if not done:
            raise refusal(txn.entry)
    out.commits = [{"path": d.path, "op": d.op, "commit": d.commit, "subject": d.subject} for d in done]
    out.approved = [dict(ref) for ref in ledger_record(txn.entry)["approved"]]
    out.message = f"struck {plan.target}:{line} for {txn.entry.request}; the decision is recorded in the ledger"
    return out


def flag(
    store: Store, path: str, line: int, kind: str, text: str, note: str, request_path: str | None = None
) -> str | None:
    rel, _ = store.resolve(path)
    return record(
        store,
        {
            "action": "flag",
            "request": request_path,
            "path": rel,
            "line": line,
            "kind": kind,
            "text": text,
            "note": note,
        },
    )
