"""Repair what a stop interrupted: complete or roll back each journaled
operation (a whole forget apply or withdraw as one), from what HEAD, the
index and the worktree really hold; remove the temp files a stop left."""

from __future__ import annotations

from typing import Any

from ..errors import PalinodeError
from ..forget import review, txn
from ..ops import apply as ops_apply
from ..ops import journal
from ..ops.lock import writer_lock
from ..storage import safeio
from ..storage.store import AUDIT_DIR, Store
from . import withdraw

LEDGERS = {"forget": review.ledger_entry, "withdraw": withdraw.ledger_entry, "strike": review.strike_entry}


def leftover_folders(store: Store, items: list[journal.Interrupted] | None = None) -> set[str]:
    """Folders our writes touch: every memory's, the audit folder, and any a journal names."""
    folders = {AUDIT_DIR, ""}
    for rel, _abs, _st in store.iter_markdown():
        folders.add(rel.rpartition("/")[0])
    for item in items or []:
        for entry in [item.entry, *(child for _, child in item.children)]:
            for f in entry.get("files", []):
                folders.add(f["rel"].rpartition("/")[0])
    return folders


def recover(store: Store, how: str) -> list[dict[str, Any]]:
    """Complete or roll back every interrupted operation ("complete" | "rollback")."""
    store.check_writable()
    store.git.preflight()
    results: list[dict[str, Any]] = []
    with writer_lock(store):
        items = journal.pending(store)
        for item in items:
            if item.kind in LEDGERS:
                results.append({**item.to_dict(), **txn.finish(store, item, how, LEDGERS[item.kind])})
                continue
            if "files" not in item.entry:
                raise PalinodeError(f"cannot {how}: {item.summary}")
            outcome = ops_apply.finish(store, item.entry, how)
            journal.clear(item.path)
            results.append({**item.to_dict(), **outcome})
        removed = journal.temp_files(store, leftover_folders(store, items))
        for rel in removed:
            safeio.unlink(rel, store.root)
        for path in journal.journal_temp_files(store):
            path.unlink(missing_ok=True)
        if removed:
            results.append(
                {
                    "kind": "temp_files",
                    "result": "removed",
                    "paths": removed,
                    "summary": f"removed {len(removed)} temp file(s) a stop left behind",
                }
            )
    return results
