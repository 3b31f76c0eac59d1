"""The delivery audit keeps what it judged of each delivered version in the
store's cache folder, keyed by content: a second run reads it and says exactly
what the first said; a damaged cache is discarded with one line and the audit
judges again, its answer unchanged."""
from __future__ import annotations

import hashlib
import json
import sqlite3

from helpers import Clock, make_git_store, palinode_file

from palinode_core.inspect.judgments import NAME
from palinode_core.session import Session

ANN = palinode_file({"id": "people-ann"}, "Ann Lee likes tea. She runs on Sundays.")


def row(when: str, path: str, session: str, **receipt) -> str:
    return json.dumps({"timestamp": when, "file_path": path, "mode": "explicit", "query": "tea", "rank": 0,
                       "session_id": session, **receipt})


def test_a_second_run_reads_the_judgments_and_a_damaged_cache_is_judged_again(tmp_path):
    root = make_git_store(tmp_path / "s", {
        "people/ann.md": ANN,
        "insights/forget-ann.md": palinode_file({"id": "insights-forget-ann"}, "Please forget that I know Ann Lee."),
    })
    (root / ".audit").mkdir()
    receipt = {"revision": hashlib.sha256((root / "people/ann.md").read_bytes()).hexdigest(),
               "revision_basis": "file_sha256"}
    (root / ".audit/retrievals.jsonl").write_text("\n".join(
        [row(f"2099-01-01T10:0{i}:00+00:00", "people/ann.md", f"s{i}") for i in range(5)]
        + [row("2099-01-01T11:00:00+00:00", "people/ann.md", "s-receipt", **receipt)]) + "\n")
    cache = tmp_path / "cache"
    session = Session.open(root, clock=Clock(), cache_dir=cache, vectors=False)
    first = list(session.deliveries().rows())
    assert {r["class"] for r in first} == {"exposure_window"} and first[0]["sentence"]
    db = sqlite3.connect(cache / NAME)
    kept = db.execute("SELECT COUNT(*), MIN(kind) FROM judged").fetchone()
    hashed = db.execute("SELECT sha256 FROM blob_sha256").fetchall()
    db.close()
    assert kept == (1, "live")  # one version, one request: judged once, kept
    assert hashed == [(receipt["revision"],)] and first[-1]["revision_match"] == "exact"  # the blob's hash, kept
    again = list(Session.open(root, clock=Clock(), cache_dir=cache, vectors=False).deliveries().rows())
    assert again == first

    (cache / NAME).write_bytes(b"not a database" * 100)
    for suffix in ("-wal", "-shm"):
        (cache / f"{NAME}{suffix}").unlink(missing_ok=True)
    damaged = Session.open(root, clock=Clock(), cache_dir=cache, vectors=False).deliveries()
    assert list(damaged.rows()) == first
    assert any("judged again" in str(p) for p in damaged.log.problems)
