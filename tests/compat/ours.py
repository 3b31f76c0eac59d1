"""Our side of the compatibility suite: the ONLY module here that imports
palinode_core, so a move of the core's modules is one edit in this file.

``apply_op`` plans and applies one lifecycle operation with our core, in
process, against a store directory, with the clock frozen at ``now``.
"""
from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from palinode_core.errors import PalinodeError
from palinode_core.ops import lifecycle
from palinode_core.ops.apply import apply
from palinode_core.storage.store import Store

# Statuses that mean "applied" on our side, mapped to the package's wording.
_APPLIED = {"would_archive": "archived", "would_restore": "active",
            "would_retract": "retracted", "would_unretract": "unretracted"}


def apply_op(root: Path, op: str, ref: str, *, pref: str | None = None, reason: str | None = None,
             superseded_by: str | None = None, now: datetime) -> dict[str, Any]:
    """Apply ``op`` and return ``{"ok": True, "status": <package wording>}``, or
    ``{"ok": False, "error": "<class>: <message>", "refused": bool}`` where
    ``refused`` is our deliberate refusal (a PalinodeError) rather than a crash."""
    try:
        store = Store(root, clock=lambda: now, use_scan_cache=False, cache_dir=root / ".palinode-audit-cache")
        if op not in ("archive", "restore", "retract", "unretract"):
            raise ValueError(f"unknown op {op!r}")
        plan = lifecycle.plan_op(store, op, ref, pref=pref, superseded_by=superseded_by, reason=reason)
        if plan.status.startswith("would_"):
            apply(store, plan)
        return {"ok": True, "status": _APPLIED.get(plan.status, plan.status), "mentions": plan.mentions}
    except PalinodeError as exc:
        return {"ok": False, "refused": True, "error": f"{type(exc).__name__}: {exc}"}
    except Exception as exc:  # noqa: BLE001 - a crash is a finding, reported as data
        return {"ok": False, "refused": False, "error": f"{type(exc).__name__}: {exc}"}


def palinode_canonical(text: str) -> str:
    """What the package's re-dump makes of a file (python-frontmatter's dump of
    its own parse, plus the newline the lifecycle ops add). Used only to tell a
    layout-only difference from a content difference."""
    import frontmatter

    return frontmatter.dumps(frontmatter.loads(text)) + "\n"
