"""The reviewer's ledger, ``.palinode-audit/ledger.jsonl``: a dot-directory
with no markdown, so Palinode never indexes it, committed to git so the audit
survives a fresh clone (see docs/format.md)."""
from __future__ import annotations

import json
from typing import Any

from ..errors import PalinodeError
from ..storage.store import AUDIT_DIR, Store
from ..storage import safeio
from ..storage.textio import atomic_write

LEDGER_REL = f"{AUDIT_DIR}/ledger.jsonl"


def read_ledger(store: Store) -> list[dict[str, Any]]:
    try:  # never through a link: a linked ledger would be read from outside the store
        data = safeio.read_bytes(LEDGER_REL, store.root)
    except (FileNotFoundError, IsADirectoryError):
        return []
    except safeio.LinkRefused:
        raise PalinodeError(f"{LEDGER_REL} or its folder is a symbolic link; it is not followed") from None
    entries = []
    for line in data.decode("utf-8", errors="replace").splitlines():
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
    before = store.read_optional(LEDGER_REL)[0] or ""  # refuses a linked ledger or folder
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
            safeio.unlink(LEDGER_REL, store.root)
        raise


def decisions_for(ledger: list[dict[str, Any]], request_path: str) -> list[dict[str, Any]]:
    return [e for e in ledger if e.get("request") == request_path]
