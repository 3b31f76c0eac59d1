"""The records clones merge and recovery reads back (issue 25): one definition
each (palinode_core.storage.records), the documented schema generated from it,
and every record the real commands write valid against it."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from helpers import ROOT

from palinode_core.demo import build_demo_store
from palinode_core.storage import records

SCHEMAS = {"ledger-record.schema.json": records.LedgerRecord, "journal-entry.schema.json": records.JournalEntry}


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_the_documented_schema_is_the_type(name):
    documented = json.loads((ROOT / "docs" / name).read_text())
    assert documented == records.schema(SCHEMAS[name]), (
        f"docs/{name} is generated from palinode_core.storage.records: "
        f"python -m palinode_core.storage.records > docs/{name} after changing the type")


def cli(store: Path, *args: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "palinode_core", args[0], str(store), *args[1:]],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_every_record_the_commands_write_is_valid_and_carries_who_and_version(tmp_path):
    store = tmp_path / "demo"
    build_demo_store(store)
    before = len((store / ".palinode-audit/ledger.jsonl").read_text().splitlines())
    cli(store, "apply", "insights/forget-berlin.md", "--lexical", "--yes")
    cli(store, "dismiss", "insights/forget-tea.md", "--note", "work-related", "--yes")
    cli(store, "withdraw", "insights/forget-poker.md", "--yes")
    cli(store, "leaks", "insights/forget-sneakers.md", "--record", "--lexical")
    lines = (store / ".palinode-audit/ledger.jsonl").read_text().splitlines()
    validator = jsonschema.Draft202012Validator(records.schema(records.LedgerRecord))
    new = [json.loads(line) for line in lines[before:]]
    assert {r["action"] for r in new} >= {"apply", "residue", "dismiss", "withdraw"}
    for line in lines:
        validator.validate(json.loads(line))
    for record in new:
        assert record["v"] == records.RECORD_VERSION and record["decided_by"] and record["at"]
        assert records.to_line(record) in lines, "one serialisation: keys sorted, UTF-8 kept"
    applied = next(r for r in new if r["action"] == "apply")
    assert all(ref["op_id"].endswith(".0") or "." in ref["op_id"] for ref in applied["approved"])
    bad = dict(new[0], action="approve")  # an action the vocabulary does not hold
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(bad)


def test_a_journal_entry_left_by_a_kill_is_valid(tmp_path):
    from test_transactions import FILES, REQUEST, WORKER, make_git_store  # the suite's own kill harness

    root = make_git_store(tmp_path / "s", FILES)
    worker = tmp_path / "worker.py"
    worker.write_text(WORKER)
    proc = subprocess.run([sys.executable, str(worker), str(root), "apply", "step_1:after_file_write"])
    assert proc.returncode == 9
    entries = [json.loads(p.read_text()) for p in (root / ".git/palinode-audit/journal").glob("*.json")]
    assert {e["kind"] for e in entries} == {"forget", "apply"} and any(e.get("request") == REQUEST for e in entries)
    validator = jsonschema.Draft202012Validator(records.schema(records.JournalEntry))
    for entry in entries:
        validator.validate(entry)


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85"])
def test_a_record_holding_a_line_separator_stays_one_record(tmp_path, separator):
    """JSON keeps U+2028, U+2029 and U+0085 raw, and str.splitlines breaks lines on them:
    a note holding one had made its dismissal vanish (the request stayed pending)."""
    from helpers import git, make_git_store, palinode_file

    root = make_git_store(tmp_path / "s", {
        "insights/forget-tea.md": palinode_file({"id": "f", "created_at": "2025-05-20T10:00:00+00:00"},
                                                "Please forget my oolong tea habit."),
        "insights/pref-tea.md": palinode_file({"id": "p"}, "My oolong tea habit is two pots a day."),
    })
    git(root, "config", "user.name", f"Ann{separator}Lee")
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith(("GIT_AUTHOR_", "GIT_COMMITTER_"))}

    def audit(*args: str) -> dict:
        proc = subprocess.run([sys.executable, "-m", "palinode_core", "--json", *args], capture_output=True,
                              text=True, env=env)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    audit("dismiss", str(root), "insights/forget-tea.md", "--note", f"a{separator}b", "--yes")
    line = (root / ".palinode-audit/ledger.jsonl").read_text().splitlines()[-1]
    assert records.from_line(line)["note"] == f"a{separator}b"  # escaped: one line for every reader
    state = {r["path"]: r for r in audit("requests", str(root))["requests"]}["insights/forget-tea.md"]
    assert state["state"] == "dismissed" and state["last_decision"]["decided_by"].startswith(f"Ann{separator}Lee")
    assert audit("integrity", str(root))["ok"]
    # a record written raw (before this escaping) is still read as one line
    raw = json.dumps({"action": "dismiss", "note": f"x{separator}y"}, ensure_ascii=False)
    assert records.record_lines(raw + "\n") == [raw, ""]


def test_a_line_separator_in_a_value_is_no_line_of_its_own_anywhere():
    """git's lines are newline-separated: a U+2028 in a request path cannot forge a
    trailer, nor one in an old raw ledger record read as a merge conflict."""
    from palinode_core.storage.commits import parse_trailers

    assert parse_trailers("Forget-Request: insights/forget-a\u2028Undoes: 1234567.md\nOperation-Id: x\r") == {
        "Forget-Request": "insights/forget-a\u2028Undoes: 1234567.md", "Operation-Id": "x"}
    raw = json.dumps({"action": "dismiss", "note": "old note\u2028=======\u2029x"}, ensure_ascii=False)
    assert not any(line.startswith("=======") for line in records.record_lines(raw + "\n"))
