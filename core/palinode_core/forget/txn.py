"""A forget apply or a withdraw as ONE transaction: every step (its file's old
and new text, history line, commit subject) and the ledger record are
journaled before the first write, each commit is recorded as it lands, and
after any stop ``finish`` completes or rolls back the whole request from what
HEAD, the index and the worktree really hold.

The commits stay Palinode's: one per target, then one ledger commit, whose
record carries the transaction id so recovery can tell whether it landed."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import PalinodeError, ReadOnlyError
from ..ops import journal, lifecycle
from ..ops.apply import Fault, apply, put_back, step_op_id
from ..ops.journal import Interrupted
from ..ops.lock import writer_lock
from ..ops.plan import Plan
from ..storage.records import LedgerRecord
from ..storage.store import Store
from .ledger import LEDGER_REL, record

# A transaction's ledger record, from its journal entry.
LedgerOf = Callable[[dict[str, Any]], LedgerRecord]


def step_record(plan: Plan, **extra: Any) -> dict[str, Any]:
    return {
        "op": plan.op,
        "target": plan.target,
        "history_rel": plan.history_rel,
        "old_text": plan.old_text,
        "new_text": plan.new_text,
        "history_line": plan.history_line,
        "subject": plan.commit_subject,
        "trailers": plan.trailers,
        "pref": plan.pref,
        "superseded_by": plan.superseded_by,
        "reason": plan.reason,
        "status": plan.status,
        "rid": plan.rid,
        **extra,
    }


def _plan_from(store: Store, step: dict[str, Any], replan: bool) -> Plan | None:
    """The recorded step as a plan against the file as it is now, or None when
    it no longer applies (someone changed the file since)."""
    current, fp = store.read_optional(step["target"])
    if current is not None and current == step["old_text"] and fp is not None:
        return Plan(
            op=step["op"],
            target=step["target"],
            status=step["status"],
            old_text=step["old_text"],
            new_text=step["new_text"],
            fingerprint=fp,
            history_rel=step["history_rel"],
            history_line=step["history_line"],
            commit_subject=step["subject"],
            trailers=step["trailers"] or {},
            pref=step["pref"],
            rid=step.get("rid"),
            superseded_by=step["superseded_by"],
            reason=step["reason"],
        )
    if replan and current is not None:  # a withdraw step re-planned on the file as it is
        return lifecycle.plan_op(
            store,
            step["op"],
            step["target"],
            pref=step["pref"],
            superseded_by=step["superseded_by"],
            reason=step["reason"],
            trailers=step["trailers"],
        )
    return None


def _prefixed(fault: Fault | None, prefix: str) -> Fault | None:
    return None if fault is None else (lambda name: fault(prefix + name))


class Transaction:
    """One request's steps and ledger record, journaled as a whole."""

    def __init__(
        self,
        store: Store,
        entry: dict[str, Any],
        path: Path | None,
        ledger_of: LedgerOf,
        fault: Fault | None = None,
    ):
        self.store, self.entry, self.path, self.ledger_of, self.fault = store, entry, path, ledger_of, fault
        self.replan = entry["kind"] == "withdraw"

    def _mark(self, index: int, plan: Plan, sha: str | None) -> None:
        self.entry["done"].append(
            {
                "index": index,
                "commit": sha,
                "op_id": step_op_id(self.entry["id"], index),
                "path": plan.target,
                "op": plan.op,
                "subject": plan.commit_subject,
                "superseded_by": plan.superseded_by,
                "spans": list(plan.selected),
            }
        )
        journal.update(self.path, self.entry)

    def run_step(self, index: int, plan: Plan) -> bool:
        """Apply one step; False (recorded as failed) when it was refused."""
        try:
            apply(
                self.store,
                plan,
                fault=_prefixed(self.fault, f"step_{index}:"),
                parent=self.entry["id"],
                step_index=index,
                on_commit=lambda sha: self._mark(index, plan, sha),
            )
        except (PalinodeError, OSError) as exc:
            reason = str(exc) if isinstance(exc, PalinodeError) else f"{plan.target}: {exc.strerror or exc}"
            self.entry["failed"].append({"index": index, "path": plan.target, "op": plan.op, "reason": reason})
            journal.update(self.path, self.entry)
            return False
        return True

    def attach(self, ledger_record: LedgerRecord) -> None:
        """A record committed with the transaction's own (journaled, so recovery writes it too)."""
        self.entry.setdefault("also_records", []).append(ledger_record)
        journal.update(self.path, self.entry)

    def record_ledger(self) -> str | None:
        """Commit the ledger record, when a step was committed: a run that
        changed nothing leaves the request's state and the ledger as they were."""
        step = self.fault or (lambda _name: None)
        step("before_ledger")
        done = committed(self.entry)
        if not done:
            journal.clear(self.path)
            return None
        sha: str | None = None
        for attempt in range(3):  # a rival (a reset, an autosave) may take the file from under one try
            try:
                sha = record(
                    self.store,
                    {**self.ledger_of(self.entry), "txn": str(self.entry["id"])},
                    parent=self.entry["id"],
                    fault=_prefixed(self.fault, "ledger:"),
                    also=self.entry.get("also_records", ()),
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


def begin(
    store: Store,
    kind: str,
    fields: dict[str, Any],
    steps: list[dict[str, Any]],
    ledger_of: LedgerOf,
    fault: Fault | None,
) -> Transaction:
    """Journal the whole request before anything is written (the caller holds the writer lock)."""
    entry = {
        "kind": kind,
        **fields,
        "steps": steps,
        "done": [],
        "failed": [],
        "ledger_rel": LEDGER_REL,
        "started_at": store.now().isoformat(),
    }
    try:
        return Transaction(store, entry, journal.write_entry(store, entry), ledger_of, fault)
    except OSError as exc:
        raise PalinodeError(
            f"could not journal the {kind} of {fields.get('request')}: {exc.strerror or exc}; nothing was changed"
        ) from None


def committed(entry: dict[str, Any]) -> list[dict[str, Any]]:
    return sorted(entry["done"], key=lambda d: d["index"])


def refusal(entry: dict[str, Any]) -> PalinodeError:
    """Why a run that committed nothing stopped, as the error to raise."""
    reason = entry["failed"][0]["reason"] if entry["failed"] else f"nothing of {entry.get('request')} was committed"
    return PalinodeError(reason if "nothing was changed" in reason else f"{reason}; nothing was changed")


def describe(entry: dict[str, Any], done: list[dict[str, Any]]) -> str:
    """Exactly what was committed, for messages: 'nothing was changed' only when true."""
    if not done:
        return "no target was committed"
    paths = ", ".join(d["path"] for d in done)
    return f"committed {len(done)} of {len(entry['steps'])} step(s) ({paths})"


def finish(store: Store, item: Interrupted, how: str, ledger_of: LedgerOf) -> dict[str, Any]:
    """Complete or roll back an interrupted transaction as a whole."""
    with writer_lock(store):
        entry = item.entry
        problem = journal.malformed_txn(entry)
        if problem:  # forged or damaged: refused before anything is touched
            raise PalinodeError(
                f"cannot {how} journal entry {item.path.name}: {problem}; nothing was changed "
                "(this tool never wrote it: move it out of the journal folder if you did not either)"
            )
        done, ledger_done = journal.progress(store, entry, item.children)
        for child_path, child in item.children:  # the step a stop cut short
            if "files" in child and not journal.in_head(store, child["files"]):
                put_back(
                    store,
                    child["files"],
                    child.get("index_before") or {},
                    f"palinode-audit recover: put back {child.get('target')}",
                )
            journal.clear(child_path)
        known = {d["index"] for d in entry["done"]}
        for index, sha in sorted(done.items()):
            if index not in known:
                step = entry["steps"][index]
                found = store.git.log(step["target"], limit=1)
                entry["done"].append(
                    {
                        "index": index,
                        "commit": sha or (found[0].sha if found else None),
                        "op_id": step_op_id(entry["id"], index),
                        "path": step["target"],
                        "op": step["op"],
                        "subject": step["subject"],
                        "superseded_by": step["superseded_by"],
                        "spans": step.get("spans", []),
                    }
                )
        journal.update(item.path, entry)
        base = {"id": entry["id"], "kind": entry["kind"], "request": entry.get("request")}
        if ledger_done:
            journal.clear(item.path)
            return {**base, "result": "already complete; only the journal was left behind"}
        if how == "complete":
            return {**base, **_complete(store, item, entry, ledger_of)}
        return {**base, **_roll_back(store, item, entry)}


def _complete(store: Store, item: Interrupted, entry: dict[str, Any], ledger_of: LedgerOf) -> dict[str, Any]:
    txn = Transaction(store, entry, item.path, ledger_of)
    if not entry["failed"]:  # a live run that met a refusal stopped there; only its record is missing
        known = {d["index"] for d in entry["done"]}
        for index, step in enumerate(entry["steps"]):
            if index in known:
                continue
            plan = _plan_from(store, step, txn.replan)
            if plan is None:
                entry["failed"].append(
                    {
                        "index": index,
                        "path": step["target"],
                        "op": step["op"],
                        "reason": f"{step['target']} was changed by someone else since the stop",
                    }
                )
                break
            if plan.changes and not txn.run_step(index, plan):
                break
    ledger_commit = txn.record_ledger()
    done = committed(entry)
    return {
        "result": "partial" if entry["failed"] else "completed",
        "commits": [d["commit"] for d in done],
        "failed": entry["failed"],
        "ledger_commit": ledger_commit,
    }


def _roll_back(store: Store, item: Interrupted, entry: dict[str, Any]) -> dict[str, Any]:
    """Each committed step is undone by a commit of its inverse, never rewritten in place."""
    undone = []
    what = "withdraw" if entry["kind"] == "withdraw" else "forget request"
    for done in reversed(committed(entry)):
        step = entry["steps"][done["index"]]
        # a restore step came from what the request archived; every other step points at the request
        counterpart = done.get("superseded_by") if step["op"] == "restore" else entry["request"]
        plan = lifecycle.plan_inverse(
            store,
            step["op"],
            step["target"],
            pref=entry["pref"],
            counterpart=counterpart,
            reason=f"{what} rolled back by recover",
            trailers=step["trailers"],
        )
        if plan.changes:
            undone.append(apply(store, plan).commit)
    journal.clear(item.path)
    return {"result": "rolled back", "commits": undone}
