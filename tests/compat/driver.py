"""Runs INSIDE .venv-compat: applies the published palinode==0.23.0 package's own
lifecycle functions to a store, one JSON request per stdin line, one JSON reply
per stdout line (one long-lived process for thousands of cases).

Request:  {"root": dir, "op": "archive"|"restore"|"retract"|"unretract",
           "ref": "notes/x.md", "pref": ..., "reason": ..., "superseded_by": ...,
           "now": ISO-8601 UTC}
Reply:    {"ok": true, "status": <the package's result status>, ...} or
          {"ok": false, "error": "<exception class>: <message>"}

This file must not import anything from this repository: it only sees the
package and its dependencies (tests/compat/requirements.txt).
"""
from __future__ import annotations

import json
import logging
import os
import sys
import traceback
from datetime import datetime

# The package prints a config warning at import; keep stdout for replies only.
_real_stdout = sys.stdout
sys.stdout = sys.stderr
os.environ.setdefault("PALINODE_DIR", os.getcwd())
logging.disable(logging.CRITICAL)

import types  # noqa: E402

# The package's search-index pushes write only its sqlite index (never a
# memory file, never a commit) and need an embedding server and its HTTP
# client: the re-index module is replaced by a no-op before anything imports it.
_index_stub = types.ModuleType("palinode.indexer.index_file")
_index_stub.index_file = lambda path, *a, **k: {"indexed_vec": True, "indexed_fts": True}  # type: ignore[attr-defined]
sys.modules["palinode.indexer.index_file"] = _index_stub

from palinode.consolidation import archive, executor, propagate, retract  # noqa: E402
from palinode.core import git_tools, store  # noqa: E402
from palinode.core.config import config  # noqa: E402

_NOW: list[datetime] = [datetime.fromisoformat("2025-06-01T11:00:00+00:00")]


def _frozen() -> datetime:
    return _NOW[0]


# Freeze the clock everywhere the package reads it for file content.
executor._utc_now = _frozen
propagate._utc_now = _frozen
git_tools._utc_now = _frozen

store.set_status_for_path = lambda path, status: 0
propagate.reindex_flagged = lambda paths: None


def handle(req: dict) -> dict:
    _NOW[0] = datetime.fromisoformat(req["now"])
    root = os.path.realpath(req["root"])
    config.memory_dir = root
    config.db_path = os.path.join(root, ".palinode.db")
    config.git.auto_commit = True
    config.git.commit_prefix = req.get("commit_prefix", "palinode")
    op, ref = req["op"], req["ref"]
    if op == "archive":
        out = archive.archive_memory(ref, reason=req.get("reason"), superseded_by=req.get("superseded_by"))
    elif op == "restore":
        out = archive.restore_memory(ref, reason=req.get("reason"))
    elif op == "retract":
        out = retract.retract_mentions(ref, req["pref"], superseded_by=req.get("superseded_by"))
    elif op == "unretract":
        out = retract.unretract_mentions(ref, req["pref"], reason=req.get("reason"))
    else:
        raise ValueError(f"unknown op {op!r}")
    return {"ok": True, "status": out.get("status"), "mentions": out.get("mentions"),
            "review_flagged": out.get("review_flagged"), "stale_backing": out.get("stale_backing")}


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            reply = handle(json.loads(line))
        except Exception as exc:  # noqa: BLE001 - reported to the caller as data
            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}",
                     "trace": traceback.format_exc(limit=3)}
        _real_stdout.write(json.dumps(reply, default=str) + "\n")
        _real_stdout.flush()


if __name__ == "__main__":
    main()
