"""The reviewer's ledger, ``.palinode-audit/ledger.jsonl``: a dot-directory
with no markdown, so Palinode never indexes it, committed to git so the audit
survives a fresh clone (see docs/format.md)."""
from __future__ import annotations

import json
from typing import Any

from ..errors import PalinodeError
from ..storage.store import AUDIT_DIR, Store
from ..storage.textio import atomic_write

LEDGER_REL = f"{AUDIT_DIR}/ledger.jsonl"


def read_ledger(store: Store) -> list[dict[str, Any]]:
    text = store.read_text(LEDGER_REL)  # a snapshot store reads it from history
    if text is None:
        return []
    return parse_ledger(text)


def parse_ledger(text: str) -> list[dict[str, Any]]:
    entries = []
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue  # a hand-damaged line is skipped, never fatal
        if isinstance(entry, dict):
            entries.append(entry)
    return entries


def record(store: Store, entry: dict[str, Any]) -> str | None:
    """Append one decision to the ledger and commit it on its own."""
    store.check_writable()
    store.git.preflight()
    entry = {"at": store.now().isoformat(), **entry}
    path = store.root / LEDGER_REL
    before = path.read_text(encoding="utf-8") if path.is_file() else ""
    if before and not before.endswith("\n"):
        before += "\n"
    atomic_write(path, before + json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n")
    subject = f"palinode-audit ledger: {entry.get('action')} {entry.get('request') or entry.get('path') or ''}".strip()
    trailers = {"Forget-Request": entry["request"]} if entry.get("request") else {}
    try:
        return store.git.commit([LEDGER_REL], subject, trailers)
    except PalinodeError:
        if before:
            atomic_write(path, before)
        else:
            path.unlink(missing_ok=True)
        raise


def decisions_for(ledger: list[dict[str, Any]], request_path: str) -> list[dict[str, Any]]:
    return [e for e in ledger if e.get("request") == request_path]
