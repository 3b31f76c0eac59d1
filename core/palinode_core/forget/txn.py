"""A forget apply, a withdraw or a hand strike as ONE transaction: every step (its file's old
and new text, history line, commit subject) and the ledger record are
journaled before the first write, each commit is recorded as it lands, and
after any stop ``finish`` completes or rolls back the whole request from what
HEAD, the index and the worktree really hold.

The commits stay Palinode's: one per target, then one ledger commit, whose
record carries the transaction id so recovery can tell whether it landed.
The ledger record is made here from the journal entry (``ledger_record``, by
the entry's kind), so a live run and a recovery write the same one and nothing
is handed down to make it."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import cast

from ..errors import PalinodeError, ReadOnlyError
from ..ops import journal, lifecycle
from ..ops.apply import Fault, apply, put_back
from ..ops.journal import FailedJson, Interrupted, Recovered
from ..ops.lock import writer_lock
from ..ops.plan import Plan, PlanStatus
from ..storage.records import CommitRef, DoneStep, FailedStep, LedgerRecord, PlanOp, StepIntent, TxnIntent
from ..storage.store import Store
from .ledger import LEDGER_REL, record


def step_record(plan: Plan, route: str | None = None, spans: Sequence[int] | None = None) -> StepIntent:
    """A plan as a transaction's step (``route`` and ``spans``: a forget's)."""
    return StepIntent(
        op=plan.op,
        target=plan.target,
        history_rel=plan.history_rel,
        old_text=plan.old_text,
        new_text=plan.new_text,
        history_line=plan.history_line,
        subject=plan.commit_subject,
        trailers=plan.trailers,
        pref=plan.pref,
        superseded_by=plan.superseded_by,
        reason=plan.reason,
        status=plan.status,
        rid=plan.rid,
        route=route,
        spans=None if spans is None else tuple(spans),
    )


def _plan_from(store: Store, step: StepIntent, replan: bool) -> Plan | None:
    """The recorded step as a plan against the file as it is now, or None when
    it no longer applies (someone changed the file since)."""
    current, fp = store.read_optional(step.target)
    if current is not None and current == step.old_text and fp is not None:
        return Plan(
            op=cast(PlanOp, step.op),  # a step this tool journaled: one of its plans
            target=step.target,
            status=cast(PlanStatus, step.status),
            old_text=step.old_text,
            new_text=step.new_text,
            fingerprint=fp,
            history_rel=step.history_rel,
            history_line=step.history_line,
            commit_subject=step.subject,
            trailers=step.trailers,
            pref=step.pref,
            rid=step.rid,
            superseded_by=step.superseded_by,
            reason=step.reason,
        )
    if replan and current is not None:  # a withdraw step re-planned on the file as it is
        return lifecycle.plan_op(
            store,
            step.op,
            step.target,
            pref=step.pref,
            superseded_by=step.superseded_by,
            reason=step.reason,
            trailers=step.trailers,
        )
    return None


def _prefixed(fault: Fault | None, prefix: str) -> Fault | None:
    return None if fault is None else (lambda name: fault(prefix + name))


class Transaction:
    """One request's steps and ledger record, journaled as a whole."""

    def __init__(
        self,
        store: Store,
        entry: TxnIntent,
        path: Path | None,
        fault: Fault | None = None,
    ):
        self.store, self.entry, self.path, self.fault = store, entry, path, fault
        self.replan = entry.kind == "withdraw"

    def _mark(self, index: int, plan: Plan, sha: str | None) -> None:
        self.entry.done.append(DoneStep.of(self.entry, index, sha, step_record(plan, spans=plan.selected)))
        journal.update(self.path, self.entry)

    def run_step(self, index: int, plan: Plan) -> bool:
        """Apply one step; False (recorded as failed) when it was refused."""
        try:
            apply(
                self.store,
                plan,
                fault=_prefixed(self.fault, f"step_{index}:"),
                parent=self.entry.id,
                step_index=index,
                on_commit=lambda sha: self._mark(index, plan, sha),
            )
        except (PalinodeError, OSError) as exc:
            reason = str(exc) if isinstance(exc, PalinodeError) else f"{plan.target}: {exc.strerror or exc}"
            self.entry.failed.append(FailedStep(index, plan.target, plan.op, reason))
            journal.update(self.path, self.entry)
            return False
        return True

    def attach(self, extra: LedgerRecord) -> None:
        """A record committed with the transaction's own (journaled, so recovery writes it too)."""
        self.entry.also_records.append(extra)
        journal.update(self.path, self.entry)

    def record_ledger(self) -> str | None:
        """Commit the ledger record, when a step was committed: a run that
        changed nothing leaves the request's state and the ledger as they were."""
        step = self.fault or (lambda _name: None)
        step("before_ledger")
        done = self.entry.committed()
        if not done:
            journal.clear(self.path)
            return None
        sha: str | None = None
        for attempt in range(3):  # a rival (a reset, an autosave) may take the file from under one try
            try:
                sha = record(
                    self.store,
                    {**ledger_record(self.entry), "txn": self.entry.id},
                    parent=self.entry.id,
                    fault=_prefixed(self.fault, "ledger:"),
                    also=self.entry.also_records,
                )
                break
            except ReadOnlyError:
                raise
            except PalinodeError as exc:
                if attempt == 2:
                    raise PalinodeError(
                        f"{describe(self.entry, done)}, but the ledger record was not committed "
                        f"({exc}); the journal keeps it: run `palinode-audit recover --complete`"
                    ) from None
                time.sleep(0.1)
        step("after_ledger")
        journal.clear(self.path)
        return sha


def begin(store: Store, entry: TxnIntent, fault: Fault | None) -> Transaction:
    """Journal the whole request before anything is written (the caller holds the writer lock)."""
    try:
        entry, path = journal.write_entry(store, entry)
    except OSError as exc:
        raise PalinodeError(
            f"could not journal the {entry.kind} of {entry.request}: {exc.strerror or exc}; nothing was changed"
        ) from None
    return Transaction(store, entry, path, fault)


def intent(store: Store, kind: str, request: str, pref: str, rid: str, steps: Sequence[StepIntent]) -> TxnIntent:
    """A transaction's entry before its first write (``ledger`` or ``broad`` set by its kind)."""
    return TxnIntent(kind, request, pref, rid, tuple(steps), LEDGER_REL, store.now().isoformat())


def ledger_record(entry: TxnIntent) -> LedgerRecord:
    """The ledger record a transaction commits, from what its journal entry
    says it committed: a forget's apply, a withdraw's or a hand strike's."""
    if entry.kind == "withdraw":
        return _withdraw_record(entry)
    if entry.kind == "strike":
        return _strike_record(entry)
    return _apply_record(entry)


def _approved(entry: TxnIntent, route: str | None = None) -> list[CommitRef]:
    """The committed steps as a decision's ``approved`` (a hand strike's route is ``strike``)."""
    return [
        {
            "path": d.path,
            "route": route or entry.steps[d.index].route,
            "spans": list(d.spans),
            "commit": d.commit,
            **({"op_id": d.op_id} if d.op_id else {}),
        }
        for d in entry.committed()
    ]


def _apply_record(entry: TxnIntent) -> LedgerRecord:
    base: LedgerRecord = entry.ledger or {}
    failed = [*base.get("failed", []), *({"path": f.path, "reason": f.reason} for f in entry.failed)]
    return {
        "action": "apply",
        "request": entry.request,
        "pref": entry.pref,
        "rid": entry.rid,
        "knobs": base.get("knobs", {}),
        "search_mode": base.get("search_mode", ""),
        "targets": base.get("targets", []),
        "approved": _approved(entry),
        "rejected": base.get("rejected", []),
        "deferred": base.get("deferred", []),
        "failed": failed,
        "note": base.get("note"),
        "complete": not failed,
    }


def _withdraw_record(entry: TxnIntent) -> LedgerRecord:
    failed = [FailedJson(path=f.path, op=f.op, reason=f.reason) for f in entry.failed]
    return {
        "action": "withdraw",
        "request": entry.request,
        "pref": entry.pref,
        "rid": entry.rid,
        "broad": bool(entry.broad),
        "commits": [commit_ref(d) for d in entry.committed()],
        "failed": [dict(f) for f in failed],
        "complete": not failed,
    }


def _strike_record(entry: TxnIntent) -> LedgerRecord:
    struck = entry.struck
    if struck is None:  # parse_entry gives every strike transaction its sentence
        raise PalinodeError(f"the strike transaction {entry.id} names no sentence; nothing was changed")
    return {
        "action": "strike",
        "request": entry.request,
        "pref": entry.pref,
        "rid": entry.rid,
        "path": struck.path,
        "line": struck.line,
        "text": struck.text,
        "approved": _approved(entry, route="strike"),
        "note": struck.note,
    }


def commit_ref(done: DoneStep) -> CommitRef:
    """A committed step as the ledger and a withdraw's result name it."""
    found: CommitRef = {"path": done.path, "op": done.op, "commit": done.commit, "subject": done.subject or ""}
    if done.op_id:
        found["op_id"] = done.op_id
    return found


def refusal(entry: TxnIntent) -> PalinodeError:
    """Why a run that committed nothing stopped, as the error to raise."""
    reason = entry.failed[0].reason if entry.failed else f"nothing of {entry.request} was committed"
    return PalinodeError(reason if "nothing was changed" in reason else f"{reason}; nothing was changed")


def describe(entry: TxnIntent, done: list[DoneStep]) -> str:
    """Exactly what was committed, for messages: 'nothing was changed' only when true."""
    if not done:
        return "no target was committed"
    paths = ", ".join(d.path for d in done)
    return f"committed {len(done)} of {len(entry.steps)} step(s) ({paths})"


def finish(store: Store, item: Interrupted, how: str) -> Recovered:
    """Complete or roll back an interrupted transaction as a whole."""
    entry = item.entry
    if not isinstance(entry, TxnIntent):  # forged or damaged: refused before anything is touched
        raise PalinodeError(f"cannot {how}: {item.summary}")
    with writer_lock(store):
        done, ledger_done = journal.progress(store, entry, item.children)
        for child_path, child in item.children:  # the step a stop cut short
            if not journal.in_head(store, child.files):
                put_back(store, child.files, child.index_before, f"palinode-audit recover: put back {child.target}")
            journal.clear(child_path)
        known = {d.index for d in entry.done}
        for index, sha in sorted(done.items()):
            if index not in known:
                step = entry.steps[index]
                found = store.git.log(step.target, limit=1)
                entry.done.append(DoneStep.of(entry, index, sha or (found[0].sha if found else None), step))
        journal.update(item.path, entry)
        base: Recovered = {"id": entry.id, "kind": entry.kind, "request": entry.request}
        if ledger_done:
            journal.clear(item.path)
            return {**base, "result": "already complete; only the journal was left behind"}
        if how == "complete":
            return {**base, **_complete(store, item, entry)}
        return {**base, **_roll_back(store, item, entry)}


def _complete(store: Store, item: Interrupted, entry: TxnIntent) -> Recovered:
    txn = Transaction(store, entry, item.path)
    if not entry.failed:  # a live run that met a refusal stopped there; only its record is missing
        known = {d.index for d in entry.done}
        for index, step in enumerate(entry.steps):
            if index in known:
                continue
            plan = _plan_from(store, step, txn.replan)
            if plan is None:
                reason = f"{step.target} was changed by someone else since the stop"
                entry.failed.append(FailedStep(index, step.target, step.op, reason))
                break
            if plan.changes and not txn.run_step(index, plan):
                break
    ledger_commit = txn.record_ledger()
    return {
        "result": "partial" if entry.failed else "completed",
        "commits": [d.commit for d in entry.committed()],
        "failed": [failed_json(f) for f in entry.failed],
        "ledger_commit": ledger_commit,
    }


def failed_json(failed: FailedStep) -> FailedJson:
    return {"index": failed.index, "path": failed.path, "op": failed.op, "reason": failed.reason}


def _roll_back(store: Store, item: Interrupted, entry: TxnIntent) -> Recovered:
    """Each committed step is undone by a commit of its inverse, never rewritten in place."""
    undone: list[str | None] = []
    what = "withdraw" if entry.kind == "withdraw" else "forget request"
    for done in reversed(entry.committed()):
        step = entry.steps[done.index]
        # a restore step came from what the request archived; every other step points at the request
        counterpart = done.superseded_by if step.op == "restore" else entry.request
        plan = lifecycle.plan_inverse(
            store,
            step.op,
            step.target,
            pref=entry.pref,
            counterpart=counterpart,
            reason=f"{what} rolled back by recover",
            trailers=step.trailers,
        )
        if plan.changes:
            undone.append(apply(store, plan).commit)
    journal.clear(item.path)
    return {"result": "rolled back", "commits": undone}
