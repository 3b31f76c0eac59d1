"""The reviewer's ledger, ``.palinode-audit/ledger.jsonl``: a dot-directory
with no markdown, so Palinode never indexes it, committed to git so the audit
survives a fresh clone (see docs/format.md)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from ..ops.apply import commit_files, step_op_id
from ..ops.lock import writer_lock
from ..storage.store import AUDIT_DIR, Store

LEDGER_REL = f"{AUDIT_DIR}/ledger.jsonl"
# Committed beside the ledger: git's built-in union merge keeps both sides' new
# lines, so two clones recording different decisions merge without a conflict
# (nothing is run: "union" is git's own, not a configured driver).
ATTRIBUTES_REL = f"{AUDIT_DIR}/.gitattributes"
ATTRIBUTES = "ledger.jsonl merge=union\n"
CONFLICT_MARKERS = ("<<<<<<< ", "=======", ">>>>>>> ")
# The version of the record format (docs/records.md); a record without one predates it.
RECORD_VERSION = 1


def read_ledger(store: Store) -> list[dict[str, Any]]:
    text = store.read_text(LEDGER_REL)  # a snapshot store reads it from history
    if text is None:
        return []
    return parse_ledger(text)


def parse_ledger(text: str) -> list[dict[str, Any]]:
    """The decisions, oldest first: after a merge another clone's lines may sit
    after ours whatever their time, and a line both sides added appears once."""
    entries = []
    seen: set[str] = set()
    for line in text.splitlines():
        if line in seen:
            continue
        seen.add(line)
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError):  # JSONDecodeError, an over-long number, deep nesting
            continue  # a hand-damaged line is skipped, never fatal
        if isinstance(entry, dict):
            entries.append(entry)
    entries.sort(key=lambda e: str(e.get("at") or ""))  # stable: lines of one time keep their order
    return entries


def record(
    store: Store,
    entry: dict[str, Any],
    parent: str | None = None,
    fault: Callable[[str], None] | None = None,
    also: Sequence[dict[str, Any]] = (),
) -> str | None:
    """Append one decision (and ``also``, the records that belong with it,
    such as an apply's leak check) to the ledger in one commit of its own.

    The read-append-commit runs under the store's writer lock, so two
    instances never lose each other's decision; it is journaled like any
    commit (``parent`` names the transaction it belongs to)."""
    store.check_writable()
    store.git.preflight()
    at = store.now().isoformat()
    # who decided, as git names them: the same identity the ledger commit is authored by
    stamp = {"at": at, "v": RECORD_VERSION, "decided_by": store.git.identity()}
    entry = {**stamp, **entry}
    with writer_lock(store):
        before = store.read_optional(LEDGER_REL)[0]  # refuses a linked ledger or folder
        head = before or ""
        if head and not head.endswith("\n"):
            head += "\n"
        after = head + "".join(
            json.dumps(line, ensure_ascii=False, sort_keys=True) + "\n"
            for line in (entry, *({**stamp, **a} for a in also))
        )
        subject = f"palinode-audit ledger: {entry.get('action')} {entry.get('request') or entry.get('path') or ''}"
        trailers = {"Forget-Request": entry["request"]} if entry.get("request") else {}
        files = [{"rel": LEDGER_REL, "before": before, "after": after}]
        attributes = store.read_optional(ATTRIBUTES_REL)[0]
        if attributes is None:  # the merge rule travels with the ledger from its first line on
            files.append({"rel": ATTRIBUTES_REL, "before": None, "after": ATTRIBUTES})
        return commit_files(
            store,
            {
                "kind": "ledger",
                "target": LEDGER_REL,
                "subject": subject.strip(),
                "trailers": trailers,
                "parent": parent,
                "op_id": step_op_id(parent, "ledger") if parent else None,
            },
            files,
            fault,
            steps=("after_ledger_write",),
        )


def decisions_for(ledger: list[dict[str, Any]], request_path: str) -> list[dict[str, Any]]:
    return [e for e in ledger if e.get("request") == request_path]
