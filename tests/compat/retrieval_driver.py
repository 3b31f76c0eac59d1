"""Runs INSIDE .venv-compat: writes retrieval-log rows into a store with the
published palinode==0.23.0 package's own code (``RetrievalLogger`` and the
delivery-receipt path), one JSON request per stdin line, one reply per line.

Request: {"root": dir, "now": ISO-8601 UTC, "op": "read"|"search",
          "path": "x.md" (read), "results": [{"file_path", "section_id"?, "content_hash"?}] (search),
          "query": str, "session": str, "mode": "explicit"|"passive",
          "receipt": null | "file_sha256" (the digest receipt: the package hashes the
          file as it is on disk now) | "index" (a search receipt over the rows' content_hash)}
Reply:   {"ok": true} or {"ok": false, "error": "..."}

Like driver.py, nothing from this repository is imported here.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import traceback
from datetime import datetime

_real_stdout = sys.stdout
sys.stdout = sys.stderr
os.environ.setdefault("PALINODE_DIR", os.getcwd())
os.environ.pop("PALINODE_INSTRUMENTATION_DISABLED", None)
logging.disable(logging.CRITICAL)

from palinode.core import receipt as receipt_mod  # noqa: E402
from palinode.core import retrieval_log  # noqa: E402

_NOW: list[datetime] = [datetime.fromisoformat("2025-06-01T11:00:00+00:00")]


class _FrozenDatetime(datetime):
    """The package stamps rows without a receipt with ``datetime.now``: frozen here."""

    @classmethod
    def now(cls, tz=None):  # type: ignore[override]
        return _NOW[0] if tz is None else _NOW[0].astimezone(tz)


retrieval_log.datetime = _FrozenDatetime  # type: ignore[misc]


def handle(req: dict) -> dict:
    _NOW[0] = datetime.fromisoformat(req["now"])
    root = os.path.realpath(req["root"])
    logger = retrieval_log.RetrievalLogger(root)
    mode, session = req.get("mode", "explicit"), req.get("session")
    if req["op"] == "read":
        logger.record_file_read(req["path"], source="palinode_read", mode=mode, session_id=session)
        return {"ok": True}
    results = req["results"]
    receipt = None
    if req.get("receipt") == "file_sha256":
        digest = {
            "core_memories": [
                {"file": os.path.relpath(r["file_path"], root) if os.path.isabs(r["file_path"]) else r["file_path"]}
                for r in results
            ]
        }
        receipt = receipt_mod.build_digest_receipt(
            digest, request={"query": req.get("query")}, memory_dir=root, evaluated_at=_NOW[0], now=_NOW[0]
        )
    elif req.get("receipt") == "index":
        receipt = receipt_mod.build_receipt(
            results, request={"query": req.get("query")}, memory_dir=root, evaluated_at=_NOW[0], now=_NOW[0]
        )
    logger.record_search_results(
        results,
        query=req.get("query"),
        source=req.get("source", "palinode_search"),
        mode=mode,
        session_id=session,
        receipt=receipt,
    )
    return {"ok": True, "bundle_id": receipt.bundle_id if receipt else None}


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            reply = handle(json.loads(line))
        except Exception as exc:  # noqa: BLE001 - reported to the caller as data
            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc(limit=3)}
        _real_stdout.write(json.dumps(reply, default=str) + "\n")
        _real_stdout.flush()


if __name__ == "__main__":
    main()
