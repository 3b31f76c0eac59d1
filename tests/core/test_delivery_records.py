"""The delivery audit's records at the edges: a row logged at the very second
a request was filed or applied, hostile text in every logged field (the JSON
stream is exactly the records, ASCII only), and lines that JSON itself
refuses or barely accepts (the fast reader takes exactly what json.loads takes)."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime

import pytest
from helpers import Clock, git, make_git_store, palinode_file

from palinode_core.session import Session

ANN = palinode_file({"id": "people-ann"}, "Ann Lee likes tea. She runs on Sundays.")
REQUEST = palinode_file({"id": "insights-forget-ann"}, "Please forget that I know Ann Lee.")


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat()


def write_log(root, lines: list[str]) -> None:
    (root / ".audit").mkdir(exist_ok=True)
    (root / ".audit/retrievals.jsonl").write_bytes("\n".join(lines).encode("utf-8", "surrogatepass") + b"\n")


def applied_store(tmp_path, monkeypatch):
    """Ann's memory, a request to forget her filed at one second and applied (struck) at a later one."""
    monkeypatch.setenv("GIT_AUTHOR_DATE", "2025-06-01T09:00:00+00:00")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2025-06-01T09:00:00+00:00")
    root = make_git_store(tmp_path / "s", {"people/ann.md": ANN})
    (root / "insights").mkdir()
    (root / "insights/forget-ann.md").write_text(REQUEST)
    monkeypatch.setenv("GIT_AUTHOR_DATE", "2025-06-01T11:00:00+00:00")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2025-06-01T11:00:00+00:00")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "palinode auto-save: insights/forget-ann.md")
    old = (root / "people/ann.md").read_bytes()
    monkeypatch.setenv("GIT_AUTHOR_DATE", "2025-06-01T13:00:00+00:00")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2025-06-01T13:00:00+00:00")
    session = Session.open(root, clock=Clock(datetime(2025, 6, 1, 13, tzinfo=UTC)), vectors=False)
    line = next(i for i, t in enumerate(old.decode().splitlines(), 1) if "Ann Lee likes tea." in t)
    session.apply(session.plan_strike("insights/forget-ann.md", "people/ann.md", line, "Ann Lee likes tea."))
    return root, hashlib.sha256(old).hexdigest()


def test_a_row_at_the_very_second_of_filing_or_apply_is_classed_by_it(tmp_path, monkeypatch):
    root, old_sha = applied_store(tmp_path, monkeypatch)
    filed = datetime(2025, 6, 1, 11, tzinfo=UTC).timestamp()
    applied = datetime(2025, 6, 1, 13, tzinfo=UTC).timestamp()
    moments = {"a": filed - 1, "b": filed, "c": filed + 0.5, "d": applied - 1, "e": applied, "f": applied + 3600}
    write_log(root, [
        json.dumps({"timestamp": iso(t), "file_path": "people/ann.md", "session_id": name,
                    "revision": old_sha, "revision_basis": "file_sha256"})
        for name, t in moments.items()
    ])
    audit = Session.open(root, clock=Clock(), vectors=False).deliveries(show_queries=True)
    classes = {r["session_id"]: r["class"] for r in audit.rows()}
    assert classes == {"a": "before_request", "b": "exposure_window", "c": "exposure_window",
                       "d": "exposure_window", "e": "leak", "f": "leak"}
    counts = audit.summary()["insights/forget-ann.md"]["counts"]
    assert counts == {"before_request": 1, "exposure_window": 3, "leak": 2, "delivered_retracted": 0,
                      "withdrawn": 0, "dismissed": 0}


RECORD_FIELDS = [
    "log", "line", "entry", "timestamp", "file_path", "session_id", "bundle_id", "chunk_id", "mode", "source", "query",
    "class", "revision_match", "revision_basis", "revision", "policy_version", "scope", "disposition", "coverage",
    "next_transition", "path", "commit", "blob", "request", "rid", "state", "sentence", "sentence_line",
    "sentence_sha256", "note", "also",
]


def test_a_stream_that_fails_part_way_keeps_what_it_wrote(capsys):
    """Rows already judged are written even when git stops under the audit."""
    from palinode_core.cli import _write_batched
    from palinode_core.errors import PalinodeError

    def chunks():
        yield "one\n"
        yield "two\n"
        raise PalinodeError("git stopped")

    with pytest.raises(PalinodeError):
        _write_batched(chunks())
    assert capsys.readouterr().out == "one\ntwo\n"


HOSTILE = [
    "\u202eevil\u202c", "\x1b[31mred\x1b[0m", 'say "hi" \\ back', "ünïcödé ✓", "line\nbreak\ttab",
    "\x00nul", "\u2028sep", "",
]


def test_the_json_stream_is_exactly_the_records_and_ascii(tmp_path, monkeypatch):
    root, old_sha = applied_store(tmp_path, monkeypatch)
    lines = []
    for i, text in enumerate(HOSTILE):
        row = {"timestamp": f"2025-06-01T1{i}:30:00+00:00", "file_path": "people/ann.md", "session_id": text,
               "query": text, "mode": text, "source": text, "bundle_id": text, "chunk_id": text or None,
               "revision": old_sha if i % 2 else text, "revision_basis": "file_sha256" if i % 2 else text}
        lines.append(json.dumps(row, ensure_ascii=i % 3 == 0))
    lines.append('{"timestamp": "2025-06-01T12:00:00Z", "file_path": "people/ann.md", "query": "\\ud800 lone"}')
    write_log(root, lines)
    session = Session.open(root, clock=Clock(), vectors=False)
    records = list(session.deliveries(show_queries=True).rows())
    streamed = [line for batch in session.deliveries(show_queries=True).json_rows() for line in batch]
    assert len(records) == len(streamed) == len(lines)
    assert streamed == [json.dumps(r, ensure_ascii=True, separators=(",", ":")) for r in records]  # byte for byte
    assert list(records[0]) == RECORD_FIELDS  # the documented order, kept from before it was made fast
    assert all(line.isascii() and line.isprintable() for line in streamed)
    assert {r["session_id"] for r in records} >= set(HOSTILE)


def test_the_reader_takes_exactly_the_lines_json_takes(tmp_path):
    root = make_git_store(tmp_path / "s", {"people/ann.md": ANN})
    good = {"timestamp": "2025-06-01T10:00:00+00:00", "file_path": "people/ann.md"}
    body = json.dumps(good)
    candidates = [
        "\ufeff" + body,  # a byte-order mark: json.loads of the bytes takes it
        "   " + body,
        body + "   \t",
        body + "\x0b",  # not a JSON blank: extra data
        body + " {}",
        "[" * 200_000,  # nested past the parser's depth
        "{" * 5 + body,
        json.dumps({**good, "score": float("nan")}),
        body.replace("people", "pe\\u006fple"),
        body[:-1],
        "\u00a0" + body,
    ]
    raw = [c.encode("utf-8") for c in candidates] + [b"\xff" + body.encode(), body.encode("utf-16")]
    (root / ".audit").mkdir()
    (root / ".audit/retrievals.jsonl").write_bytes(b"\n".join(raw) + b"\n")

    def takes(line: bytes) -> bool:  # a line as the log holds it, its newline kept
        try:
            return isinstance(json.loads(line + b"\n"), dict)
        except (ValueError, RecursionError):
            return False

    audit = Session.open(root, clock=Clock(), vectors=False).deliveries(show_queries=True)
    lines = [r["line"] for r in audit.rows()]
    expected = [n for n, line in enumerate(b"\n".join(raw).split(b"\n"), 1) if takes(line)]
    assert lines == expected and len(expected) >= 4
    assert audit.log.problem_count == len([line for line in raw if not takes(line) and line.strip()])


def test_a_kept_judgment_is_not_reused_once_the_user_has_a_name(tmp_path, monkeypatch):
    """Whose a sentence is depends on the user's names (a profile memory): a
    judgment kept in the cache before the profile named the user is judged again."""
    monkeypatch.setenv("GIT_AUTHOR_DATE", "2025-06-01T09:00:00+00:00")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2025-06-01T09:00:00+00:00")
    root = make_git_store(tmp_path / "s", {
        "notes/river.md": palinode_file({"category": "notes"}, "Ingrid goes kayaking every Sunday."),
        "insights/forget-kayak.md": palinode_file({"category": "insights"}, "Please forget that I go kayaking."),
    })
    write_log(root, [json.dumps({"timestamp": "2025-06-01T10:00:00+00:00", "file_path": "notes/river.md"})])
    before = [r["class"] for r in Session.open(root, clock=Clock(), vectors=False).deliveries().rows()]
    (root / "people").mkdir()
    (root / "people/me-profile.md").write_text(palinode_file({"category": "people", "title": "Me"}, "Name: Ingrid Solberg"))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "profile")
    after = [r["class"] for r in Session.open(root, clock=Clock(), vectors=False).deliveries().rows()]
    assert before == ["unrelated"]  # Ingrid was someone else
    assert after == ["exposure_window"]  # now she is the user


def test_what_explain_reads_is_streamed_exactly_as_the_records_say_it(tmp_path, monkeypatch):
    """A receipt's scope and coverage are encoded once per distinct value: the
    stream stays byte for byte json.dumps of each record, whatever their shape
    or key order, and a shape that is no coverage is one problem line."""
    root, old_sha = applied_store(tmp_path, monkeypatch)
    shapes = [
        ({"status": "not_requested", "reasons": []}, []),
        ({"reasons": [], "status": "not_requested"}, []),  # the same, its keys in another order
        ({"status": "partial", "reasons": ["degraded:keyword_only"]}, ["project/a"]),
        ({"status": "partial", "reasons": "degraded"}, ["project/a", "user"]),  # text, not a list of reasons
        ({"status": ["x"], "reasons": []}, None),
        ({"status": "partial", "reasons": [], "extra": "ünï"}, ["\u202e"]),
        ({"status": "partial", "reasons": [{"deep": 1}]}, [1]),  # no coverage, no scope: ignored, said
        (None, None),
    ]
    lines = []
    for i, (coverage, scope) in enumerate(shapes * 2):
        lines.append(json.dumps({"timestamp": f"2025-06-01T14:{i:02d}:00+00:00", "file_path": "people/ann.md",
                                 "revision": old_sha, "revision_basis": "file_sha256", "coverage": coverage,
                                 "scope": scope, "policy_version": "palinode/0.23.0", "disposition": "selected"}))
    write_log(root, lines)
    session = Session.open(root, clock=Clock(), vectors=False)
    records = list(session.deliveries().rows())
    streamed = [line for batch in session.deliveries().json_rows() for line in batch]
    assert streamed == [json.dumps(r, ensure_ascii=True, separators=(",", ":")) for r in records]
    assert [r["coverage"] for r in records[:2]] == [shapes[0][0], shapes[1][0]]
    assert list(records[1]["coverage"]) == ["reasons", "status"]  # as logged
    audit = session.deliveries()
    list(audit.rows())
    assert sum("coverage is" in p for p in audit.log.problems) == 2
    assert sum("scope is" in p for p in audit.log.problems) == 2
    assert all(line.isascii() for line in streamed)
