"""Runs INSIDE .venv-compat: writes retrieval-log rows into a store with the
published palinode==0.23.0 package's own code (``RetrievalLogger`` and the
delivery-receipt path), one JSON request per stdin line, one reply per line.

Request: {"root": dir, "now": ISO-8601 UTC, "op": "read"|"search"|"resolve",
          "path": "x.md" (read), "results": [{"file_path", "section_id"?, "content_hash"?}] (search),
          "query": str, "session": str, "mode": "explicit"|"passive",
          "receipt": null | "file_sha256" (the digest receipt: the package hashes the
          file as it is on disk now) | "index" (a search receipt over the rows' content_hash),
          "db": a file outside the store for the package's index (resolve)}
Reply:   {"ok": true} or {"ok": false, "error": "..."}; a resolve's reply also carries
          its "bundle_id" and the refs the package's own ``explain_delivery`` names for it.

``resolve`` is a real ``POST /resolve`` without the HTTP layer: the package
indexes the store (its keyword arm only: no embedding server), builds the
bundle for the query with ``build_bundle`` and logs its receipt envelope with
``RetrievalLogger.record_bundle_receipt``, as its resolve router does. Two
shims let it run here, neither touching what it decides: its HTTP client
(imported for the embedding server a lexical resolve never calls) is a stub,
and its vector tables (sqlite-vec, which this Python cannot load) are plain
tables a lexical resolve never reads.

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
os.environ["PALINODE_RETRIEVAL_MODE"] = "lexical"  # read once, when the package's config loads
os.environ["PALINODE_ALLOW_FRESH_DB"] = "1"
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
receipt_mod.datetime = _FrozenDatetime  # type: ignore[misc]  # a receipt's evaluated_at


def _lexical_only() -> None:
    """The two shims a resolve needs here (see the module's docstring); installed once."""
    if "httpx" in sys.modules:
        return
    import re
    import sqlite3
    import types

    class _Offline(Exception):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__("no HTTP from the driver")

    httpx = types.ModuleType("httpx")
    httpx.__getattr__ = lambda name: _Offline  # type: ignore[method-assign]
    sys.modules["httpx"] = httpx
    vec = re.compile(
        r"CREATE VIRTUAL TABLE IF NOT EXISTS (\w+) USING vec0\(\s*id TEXT PRIMARY KEY,\s*embedding FLOAT\[\d+\]\s*\)"
    )

    class _Connection(sqlite3.Connection):
        def enable_load_extension(self, enabled: bool) -> None:
            pass

        def execute(self, sql, *args):  # type: ignore[no-untyped-def, override]
            return super().execute(vec.sub(r"CREATE TABLE IF NOT EXISTS \1 (id TEXT PRIMARY KEY, embedding BLOB)", sql), *args)

    connect = sqlite3.connect
    sqlite3.connect = lambda *a, **k: connect(*a, factory=_Connection, **k)  # type: ignore[assignment]
    import sqlite_vec

    sqlite_vec.load = lambda db: None


def resolve(req: dict, root: str) -> dict:
    _lexical_only()
    from palinode.core import store
    from palinode.core.bundle import BundleRequest, build_bundle
    from palinode.core.config import config
    from palinode.core.explain import MAX_RECORDS_CEILING, explain_delivery
    from palinode.indexer.index_file import index_file

    config.memory_dir = root
    config.db_path = req["db"]
    store.init_db()
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.endswith(".md"):
                index_file(os.path.join(folder, name), defer_embed=True)  # its keyword index only
    bundle_request = BundleRequest(query=req["query"])
    bundle = build_bundle(bundle_request, chain=None, now=_NOW[0])
    retrieval_log.RetrievalLogger(root).record_bundle_receipt(bundle, bundle_request)
    explained = explain_delivery(
        bundle.receipt_ref, memory_dir=root, max_records=MAX_RECORDS_CEILING, log_enabled=True
    )
    return {
        "ok": True,
        "bundle_id": bundle.receipt_ref,
        "explained": [record["ref"] for record in explained["supplied"]],
        "status": explained["status"],
    }


def handle(req: dict) -> dict:
    _NOW[0] = datetime.fromisoformat(req["now"])
    root = os.path.realpath(req["root"])
    logger = retrieval_log.RetrievalLogger(root)
    mode, session = req.get("mode", "explicit"), req.get("session")
    if req["op"] == "resolve":
        return resolve(req, root)
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
