"""Repair what a crash interrupted: complete or roll back each journaled
operation, withdraws with their half-done step."""
from __future__ import annotations

from typing import Any

from ..errors import PalinodeError
from ..ops import journal, lifecycle
from ..ops.apply import apply, restore_files
from ..ops.journal import Interrupted
from ..storage.store import Store
from ..storage.textio import atomic_write
from .withdraw import apply_withdraw, plan_withdraw


def complete_apply(store: Store, item: Interrupted) -> str | None:
    entry = item.entry
    _, target_abs = store.resolve(entry["target"])
    _, history_abs = store.resolve(entry["history_rel"])
    current, _ = store.read_optional(entry["target"])
    if current != entry["new_text"]:
        atomic_write(target_abs, entry["new_text"])
    history, _ = store.read_optional(entry["history_rel"])
    if history != entry["history_after"]:
        atomic_write(history_abs, entry["history_after"])
    sha = store.git.commit([entry["target"], entry["history_rel"]], entry["subject"], entry.get("trailers") or {})
    journal.clear(item.path)
    return sha


def roll_back_apply(store: Store, item: Interrupted) -> None:
    entry = item.entry
    _, target_abs = store.resolve(entry["target"])
    _, history_abs = store.resolve(entry["history_rel"])
    restore_files(target_abs, entry["old_text"], history_abs, entry["history_before"])
    journal.clear(item.path)


def recover(store: Store, how: str) -> list[dict[str, Any]]:
    """Complete or roll back every interrupted operation ("complete" | "rollback")."""
    store.check_writable()
    store.git.preflight()
    results = []
    # withdraws first: their own half-done step is completed or rolled back with them
    items = sorted(journal.pending(store), key=lambda i: i.kind != "withdraw")
    for item in items:
        if how == "complete" and not item.can_complete or how == "rollback" and not item.can_roll_back:
            if item.kind == "apply" and "committed" in item.summary:
                journal.clear(item.path)
                results.append({**item.to_dict(), "result": "journal cleared"})
                continue
            raise PalinodeError(f"cannot {how}: {item.summary}")
        if item.kind == "apply":
            if not item.path.exists():
                continue  # handled as part of a withdraw
            if how == "complete":
                results.append({**item.to_dict(), "result": "completed", "commit": complete_apply(store, item)})
            else:
                roll_back_apply(store, item)
                results.append({**item.to_dict(), "result": "rolled back"})
            continue
        entry = item.entry
        for inner in journal.pending(store):  # the step it was in the middle of
            if inner.kind == "apply" and inner.entry.get("parent") == entry.get("id"):
                if how == "complete" and inner.can_complete:
                    complete_apply(store, inner)
                else:
                    roll_back_apply(store, inner)
        if how == "complete":
            wplan = plan_withdraw(store, entry["request"], store.scan().memories, broad=entry.get("broad", False))
            out = apply_withdraw(store, wplan)
            results.append({**item.to_dict(), "result": out["status"], "commits": out["commits"]})
        else:
            undone = []
            for step in reversed(entry.get("done", [])):
                # a restore step came from what the request archived; an unretract from its strike
                counterpart = step.get("superseded_by") if step["op"] == "restore" else entry["request"]
                plan = lifecycle.plan_inverse(store, step["op"], step["path"], pref=entry["pref"],
                                              counterpart=counterpart, reason="withdraw rolled back")
                if plan.changes:
                    undone.append(apply(store, plan).commit)
            results.append({**item.to_dict(), "result": "rolled back", "commits": undone})
        journal.clear(item.path)
    return results
