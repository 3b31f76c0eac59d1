"""The delivery audit (issue 26) on rows written by Palinode 0.23's own
RetrievalLogger and receipt code (tests/compat/retrieval_driver.py, in
.venv-compat), on a store forgotten here and on one Palinode forgot in."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
from helpers import Clock, git, make_git_store, palinode_file

from palinode_core.cli import main
from palinode_core.session import Session

from .harness import GIT_ENV, HERE, Driver, venv_python, venv_ready

pytestmark = [
    pytest.mark.compat,
    pytest.mark.xdist_group("compat"),
    pytest.mark.skipif(
        not venv_ready(),
        reason="DELIVERY TESTS NOT RUN: .venv-compat is missing (make compat-venv builds it from PyPI)",
    ),
]

PREF = "I collect vintage sneakers"
SENTENCE = "I collect vintage sneakers from the nineties."
FILLER = " ".join(
    f"The {w} shelf in the hallway holds labelled boxes of receipts."
    for w in ("north", "south", "east", "west", "upper", "lower", "middle", "spare", "old", "new")
)
SHOES = palinode_file({"category": "notes", "title": "Closet"}, f"{FILLER} {SENTENCE} {FILLER}")
GARDEN = palinode_file({"category": "notes", "title": "Garden"}, "The tomatoes need staking before June.")
REQUEST = palinode_file({"category": "insights", "title": "Forget"}, "Please forget that I collect vintage sneakers.")


def at(hour: int, minute: int = 0) -> str:
    return datetime(2025, 6, 1, hour, minute, tzinfo=UTC).isoformat()


class Logger:
    """Palinode's own logging code, in its own virtualenv."""

    def __init__(self, root: Path):
        self.root = root
        env = {**os.environ, **GIT_ENV, "PYTHONPATH": "", "PALINODE_DIR": str(root)}
        self.proc = subprocess.Popen(
            [str(venv_python()), str(HERE / "retrieval_driver.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
            cwd=str(root),
        )

    def send(self, **req) -> dict:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps({"root": str(self.root), **req}) + "\n")
        self.proc.stdin.flush()
        reply = json.loads(self.proc.stdout.readline())
        assert reply["ok"], reply
        return reply

    def read(self, path: str, now: str, session: str) -> None:
        self.send(op="read", path=path, now=now, session=session)

    def deliver(
        self,
        path: str,
        now: str,
        session: str,
        receipt: str | None,
        chunk: str | None = None,
        query: str = "what shoes do I like",
    ) -> dict:
        row = {
            "file_path": str(self.root / path),
            "rel_path": path,
            "section_id": chunk,
            "score": 0.4,
            "content_hash": "0" * 64,
        }
        return self.send(op="search", results=[row], now=now, session=session, receipt=receipt, query=query)

    def resolve(self, query: str, now: str, db: Path) -> dict:
        """A real resolve by Palinode's own code: its receipt envelope logged, and
        what its ``explain_delivery`` names for it (retrieval_driver.py)."""
        return self.send(op="resolve", query=query, now=now, db=str(db))

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def commit_at(monkeypatch, root: Path, when: str, message: str, *paths: str) -> None:
    monkeypatch.setenv("GIT_AUTHOR_DATE", when)
    monkeypatch.setenv("GIT_COMMITTER_DATE", when)
    git(root, "add", "-A", "--", *paths)
    git(root, "commit", "-q", "-m", message)


def line_of(root: Path, rel: str, text: str) -> int:
    lines = (root / rel).read_text().splitlines()
    return next(i for i, line in enumerate(lines, start=1) if text in line)


def audit(root: Path, *extra: str, capsys) -> dict:
    assert main(["--json", "deliveries", str(root), "--show-queries", *extra]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def forgotten_here(tmp_path, monkeypatch):
    """Deliveries before the request, between it and our apply, after it
    (a stale copy: a leak), of the struck version, of an unrelated memory,
    and of the old version after a rename."""
    root = tmp_path / "store"
    monkeypatch.setenv("GIT_AUTHOR_DATE", at(9))
    monkeypatch.setenv("GIT_COMMITTER_DATE", at(9))
    make_git_store(root, {"notes/shoes.md": SHOES, "notes/garden.md": GARDEN})
    log = Logger(root)
    try:
        log.deliver("notes/shoes.md", at(10), "s-before", "file_sha256")
        (root / "insights").mkdir()
        (root / "insights/forget-sneakers.md").write_text(REQUEST)
        commit_at(monkeypatch, root, at(11), "palinode auto-save: insights/forget-sneakers.md", "insights")
        log.deliver("notes/shoes.md", at(12), "s-window", "index", chunk="notes/shoes.md#1")
        old = (root / "notes/shoes.md").read_bytes()
        monkeypatch.setenv("GIT_AUTHOR_DATE", at(13))
        monkeypatch.setenv("GIT_COMMITTER_DATE", at(13))
        session = Session.open(root, clock=Clock(datetime(2025, 6, 1, 13, tzinfo=UTC)))
        session.apply(
            session.plan_strike(
                "insights/forget-sneakers.md", "notes/shoes.md", line_of(root, "notes/shoes.md", SENTENCE), SENTENCE
            )
        )
        struck = (root / "notes/shoes.md").read_bytes()
        (root / "notes/shoes.md").write_bytes(old)  # a replica still serving the old file
        log.deliver("notes/shoes.md", at(14), "s-stale", "file_sha256", chunk="notes/shoes.md#1")
        (root / "notes/shoes.md").write_bytes(struck)
        log.deliver("notes/shoes.md", at(15), "s-struck", "file_sha256")
        log.read("notes/garden.md", at(15, 30), "s-garden")
        git(root, "mv", "notes/shoes.md", "notes/closet.md")
        commit_at(monkeypatch, root, at(16), "moved", "notes")
        (root / "notes/closet.md").write_bytes(old)  # the stale replica again, under the new name
        log.deliver("notes/closet.md", at(17), "s-renamed", "file_sha256")
        (root / "notes/closet.md").write_bytes(struck)
    finally:
        log.close()
    return root, old, struck


def by_session(report: dict) -> dict[str, dict]:
    return {r["session_id"]: r for r in report["rows"]}


def test_every_class_of_a_store_forgotten_here(forgotten_here, capsys):
    root, old, _struck = forgotten_here
    rows = by_session(audit(root, capsys=capsys))
    assert rows["s-before"]["class"] == "before_request" and rows["s-before"]["revision_match"] == "exact"
    assert rows["s-window"]["class"] == "exposure_window" and rows["s-window"]["revision_match"] == "inferred"
    assert rows["s-window"]["chunk_id"] == "notes/shoes.md#1"
    assert rows["s-stale"]["class"] == "leak" and rows["s-stale"]["revision_match"] == "exact"
    assert rows["s-struck"]["class"] == "delivered_retracted" and rows["s-struck"]["revision_match"] == "exact"
    assert rows["s-garden"]["class"] == "unrelated"
    renamed = rows["s-renamed"]
    assert renamed["class"] == "leak" and renamed["revision_match"] == "exact"
    assert renamed["path"] == "notes/shoes.md"  # the version found under its old name
    for row in rows.values():
        assert set(row) >= {"timestamp", "file_path", "session_id", "bundle_id", "class", "revision_match"}
    # the sentence shown is byte-identical to the version git holds for that revision
    for name in ("s-before", "s-stale", "s-renamed"):
        blob = subprocess.run(
            ["git", "-C", str(root), "cat-file", "blob", rows[name]["blob"]], capture_output=True, check=True
        ).stdout
        assert blob == old
        assert rows[name]["sentence"] == SENTENCE and SENTENCE.encode() in blob


def test_summary_carries_the_exposure_window_and_the_leaks(forgotten_here, capsys):
    root, _old, _struck = forgotten_here
    report = audit(root, "--request", "insights/forget-sneakers.md", capsys=capsys)
    entry = report["requests"]["insights/forget-sneakers.md"]
    assert entry["counts"] == {"before_request": 1, "exposure_window": 1, "leak": 2, "delivered_retracted": 1,
                               "withdrawn": 0, "dismissed": 0}
    assert entry["window"]["from"].startswith("2025-06-01T11:00") and entry["window"]["to"].startswith(
        "2025-06-01T13:00"
    )
    assert [r["session_id"] for r in entry["leaks"]] == ["s-stale", "s-renamed"]
    assert report["revision_match"] == {"exact": 4, "inferred": 2}


def test_since_keeps_only_later_rows(forgotten_here, capsys):
    root, _old, _struck = forgotten_here
    rows = audit(root, "--since", "2025-06-02", capsys=capsys)["rows"]
    assert rows == []


def test_unknown_revision_is_named_not_guessed(forgotten_here, capsys):
    root, _old, _struck = forgotten_here
    with (root / ".audit/retrievals.jsonl").open("a") as fh:
        fh.write(
            json.dumps(
                {
                    "timestamp": at(18),
                    "file_path": "notes/closet.md",
                    "session_id": "s-forged",
                    "revision": "ab" * 32,
                    "revision_basis": "file_sha256",
                }
            )
            + "\n"
        )
        fh.write(json.dumps({"timestamp": at(18), "file_path": "notes/never.md", "session_id": "s-never"}) + "\n")
    rows = by_session(audit(root, capsys=capsys))
    assert rows["s-forged"]["revision_match"] == "unknown" and rows["s-forged"]["commit"] is None
    assert "hashes to the receipt's file_sha256" in rows["s-forged"]["note"]
    assert rows["s-forged"]["revision"] == "ab" * 32
    assert rows["s-never"]["revision_match"] == "unknown" and "never committed" in rows["s-never"]["note"]


def test_hostile_rows_are_one_line_each_and_nothing_outside_is_read(forgotten_here, tmp_path, capsys):
    root, _old, _struck = forgotten_here
    outside = tmp_path / "outside.md"
    outside.write_text(SENTENCE)
    good = {"timestamp": at(18), "session_id": "s-ok", "file_path": "notes/garden.md"}
    hostile = [
        json.dumps({**good, "file_path": "../outside.md", "session_id": "s-up"}),
        json.dumps({**good, "file_path": str(outside), "session_id": "s-abs"}),
        json.dumps({**good, "file_path": "notes/../../outside.md", "session_id": "s-mid"}),
        '{"timestamp": "' + "x" * (2 << 20) + '", "file_path": "notes/garden.md"}',
        json.dumps({**good, "timestamp": 12}),
        json.dumps({**good, "timestamp": "yesterday"}),
        json.dumps({**good, "file_path": ["notes/garden.md"]}),
        json.dumps({**good, "session_id": {"x": 1}, "query": 7, "chunk_id": [1]}),
        "[1, 2]",
        "{not json",
        json.dumps(good),
    ]
    with (root / ".audit/retrievals.jsonl").open("a") as fh:
        fh.write("\n".join(hostile) + "\n")
    report = audit(root, capsys=capsys)
    rows = by_session(report)
    problems = report["log"]["problems"]
    for name in ("s-up", "s-abs", "s-mid"):
        assert rows[name]["class"] == "unrelated" and rows[name]["revision_match"] == "unknown"
        assert rows[name]["sentence"] is None
    assert sum("outside the store" in p or "climbs out" in p for p in problems) == 3
    assert sum("longer than" in p for p in problems) == 1
    assert sum("not a time" in p or "not an ISO 8601" in p for p in problems) == 2
    assert sum("file_path is" in p for p in problems) == 1
    assert sum("not text; ignored" in p for p in problems) == 2 and sum("chunk_id is" in p for p in problems) == 1
    assert sum("not an object" in p for p in problems) == 1 and sum("not a JSON line" in p for p in problems) == 1
    assert all("\n" not in p and len(p) < 300 for p in problems)
    assert rows["s-ok"]["class"] == "unrelated" and rows["s-ok"]["revision_match"] == "inferred"


def test_a_linked_audit_folder_is_not_followed(tmp_path, capsys):
    root = make_git_store(tmp_path / "store", {"notes/garden.md": GARDEN})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "retrievals.jsonl").write_text(json.dumps({"timestamp": at(9), "file_path": "notes/garden.md"}) + "\n")
    (root / ".audit").symlink_to(elsewhere)
    report = audit(root, capsys=capsys)
    assert report["rows"] == [] and report["log"]["files"] == []
    assert any("symbolic link" in p for p in report["log"]["problems"])


def test_missing_and_rotated_logs_are_said_plainly(tmp_path, capsys):
    root = make_git_store(tmp_path / "store", {"notes/garden.md": GARDEN})
    assert main(["deliveries", str(root)]) == 0
    assert "no retrieval log at .audit/retrievals.jsonl" in capsys.readouterr().out
    (root / ".audit").mkdir()
    import gzip

    with gzip.open(root / ".audit/retrievals.jsonl.2.gz", "wt") as fh:
        fh.write(json.dumps({"timestamp": at(9), "file_path": "notes/garden.md", "session_id": "oldest"}) + "\n")
    (root / ".audit/retrievals.jsonl.1").write_text(
        json.dumps({"timestamp": at(10), "file_path": "notes/garden.md", "session_id": "older"}) + "\n"
    )
    report = audit(root, capsys=capsys)
    assert [r["session_id"] for r in report["rows"]] == ["oldest", "older"]
    assert report["log"]["missing"] is True
    assert any("rotated logs read too" in n for n in report["log"]["notes"])


def test_a_store_palinode_forgot_in(tmp_path, monkeypatch, capsys):
    """Palinode's own retract (its lifecycle code, frozen clock) between the deliveries."""
    root = tmp_path / "store"
    monkeypatch.setenv("GIT_AUTHOR_DATE", at(9))
    monkeypatch.setenv("GIT_COMMITTER_DATE", at(9))
    make_git_store(root, {"notes/shoes.md": SHOES, "insights/forget-sneakers.md": REQUEST})
    log = Logger(root)
    try:
        log.read("notes/shoes.md", at(10), "s-window")
        old = (root / "notes/shoes.md").read_bytes()
        monkeypatch.setenv("GIT_AUTHOR_DATE", at(12))
        monkeypatch.setenv("GIT_COMMITTER_DATE", at(12))
        palinode = Driver()
        try:
            palinode.send(
                {
                    "root": str(root),
                    "op": "retract",
                    "ref": "notes/shoes.md",
                    "pref": PREF,
                    "superseded_by": "insights/forget-sneakers.md",
                    "now": at(12),
                }
            )
            reply = palinode.recv()
        finally:
            palinode.close()
        assert reply["ok"], reply
        assert b"~~" in (root / "notes/shoes.md").read_bytes()
        log.deliver("notes/shoes.md", at(13), "s-struck", "file_sha256")
        struck = (root / "notes/shoes.md").read_bytes()
        (root / "notes/shoes.md").write_bytes(old)
        log.deliver("notes/shoes.md", at(14), "s-stale", "file_sha256")
        (root / "notes/shoes.md").write_bytes(struck)
    finally:
        log.close()
    rows = by_session(audit(root, capsys=capsys))
    assert rows["s-window"]["class"] == "exposure_window"
    assert rows["s-struck"]["class"] == "delivered_retracted"
    assert rows["s-stale"]["class"] == "leak" and rows["s-stale"]["sentence"] == SENTENCE


def report_of(root: Path, fmt: str, *extra: str, capsys) -> str:
    args = ["report", str(root), "--request", "insights/forget-sneakers.md", "--format", fmt, *extra]
    assert main(args) == 0
    return capsys.readouterr().out


def test_report_shows_the_exposure_window_and_the_leaks(forgotten_here, capsys):
    import jsonschema
    from helpers import ROOT

    root, _old, _struck = forgotten_here
    schema = json.loads((ROOT / "docs" / "report-schema.json").read_text(encoding="utf-8"))
    report = json.loads(report_of(root, "json", capsys=capsys))
    jsonschema.Draft202012Validator(schema).validate(report)
    found = report["requests"][0]["deliveries"]
    assert found["counts"]["leak"] == 2 and found["counts"]["exposure_window"] == 1
    assert found["window"]["from"].startswith("2025-06-01T11:00") and found["window"]["to"].startswith(
        "2025-06-01T13:00"
    )
    assert [r["session_id"] for r in found["leaks"]] == ["s-stale", "s-renamed"]
    assert found["leaks"][0]["sentence"] == SENTENCE and found["leaks"][0]["revision_match"] == "exact"
    markdown = report_of(root, "md", capsys=capsys)
    assert "### Deliveries" in markdown and "leak: 2" in markdown and "s-stale" in markdown
    page = report_of(root, "html", capsys=capsys)
    assert "<h3>Deliveries" in page and "leak: 2" in page and "s-renamed" in page


@pytest.mark.parametrize("fmt", ["json", "md", "html"])
def test_the_redacted_report_carries_no_preference_text(forgotten_here, capsys, fmt):
    import jsonschema
    from helpers import ROOT

    root, _old, _struck = forgotten_here
    plain = report_of(root, fmt, capsys=capsys)
    redacted = report_of(root, fmt, "--redact", capsys=capsys)
    for secret in (PREF, SENTENCE, "vintage sneakers", "what shoes do I like"):
        assert secret.lower() in plain.lower()  # the check can fail: the plain report carries them
        assert secret.lower() not in redacted.lower(), secret
    rid = json.loads(report_of(root, "json", capsys=capsys))["requests"][0]["rid"]
    assert rid in redacted and "hmac:" in redacted
    if fmt == "json":
        schema = json.loads((ROOT / "docs" / "report-schema.json").read_text(encoding="utf-8"))
        jsonschema.Draft202012Validator(schema).validate(json.loads(redacted))
