"""The crash journal is read and written through typed records
(storage.records: CommitIntent, TxnIntent and their steps): every entry a kill
leaves reads back as its record and writes out as the very bytes it was, and
an entry that is not one this tool wrote is listed, never acted on."""
from __future__ import annotations

import json

import pytest
from helpers import Clock, make_git_store, palinode_file
from test_transactions import FILES, run_worker

from palinode_core.ops import journal, lifecycle
from palinode_core.ops.apply import apply
from palinode_core.session import Session
from palinode_core.storage import records
from palinode_core.storage.records import CommitIntent, Malformed, TxnIntent, parse_entry
from palinode_core.storage.store import Store


def entries(root) -> dict[str, str]:
    return {p.name: p.read_text() for p in (root / ".git/palinode-audit/journal").glob("*.json")}


def round_trip(text: str) -> str:
    entry = parse_entry(json.loads(text))
    assert isinstance(entry, (CommitIntent, TxnIntent))
    return json.dumps(entry.to_json(), ensure_ascii=False)


@pytest.mark.parametrize(("mode", "step"), [
    ("apply", "step_1:after_file_write"),  # a forget with one step done, one cut short
    ("apply", "ledger:after_ledger_write"),  # its ledger commit cut short
    ("withdraw", "step_1:before_commit"),
])
def test_every_entry_a_kill_leaves_is_its_record_byte_for_byte(tmp_path, mode, step):
    root = make_git_store(tmp_path / "s", FILES)
    if mode == "withdraw":
        assert run_worker(root, "apply", "never") == 0
    assert run_worker(root, mode, step) == 9
    left = entries(root)
    kinds = {json.loads(text)["kind"] for text in left.values()}
    assert kinds == {"forget" if mode == "apply" else "withdraw", "ledger" if "ledger" in step else "apply"}
    for name, text in left.items():
        assert round_trip(text) == text, name
    [item] = journal.pending(Store(root))
    assert isinstance(item.entry, TxnIntent) and [type(c) for _, c in item.children] == [CommitIntent]
    assert item.entry.committed() and all(isinstance(d, records.DoneStep) for d in item.entry.done)


def test_a_flags_entry_is_its_record(tmp_path, monkeypatch):
    """The third kind of commit entry: the flags a retired source's dependents get."""
    root = make_git_store(tmp_path / "s", {
        "insights/pref-ann.md": palinode_file({"id": "p"}, "I know Ann Lee well."),
        "notes/dep.md": palinode_file({"id": "d", "backed_by": ["insights/pref-ann"]}, "Rests on it."),
    })
    monkeypatch.setattr(journal, "clear", lambda path: None)  # keep every entry the apply writes
    store = Store(root, clock=Clock())
    done = apply(store, lifecycle.plan_archive(store, "insights/pref-ann.md"))
    assert done.flags_commit is not None
    left = entries(root)
    assert sorted(json.loads(t)["kind"] for t in left.values()) == ["apply", "flags"]
    for name, text in left.items():
        assert round_trip(text) == text, name


def test_a_hand_strike_entry_is_its_record_with_its_sentence(tmp_path, monkeypatch):
    """The third kind of transaction: a sentence a reviewer struck by hand, and its record."""
    body = "Weekly notes. I keep bees behind the shed. The fence is broken."
    root = make_git_store(tmp_path / "s", {
        "notes/allotment.md": palinode_file({"id": "n", "created_at": "2025-05-01T00:00:00+00:00"}, body),
        "insights/forget-bees.md": palinode_file({"id": "f", "created_at": "2025-06-01T00:00:00+00:00"},
                                                 "Please forget that I keep bees."),
    })
    monkeypatch.setattr(journal, "clear", lambda path: None)  # keep every entry the strike writes
    session = Session.open(root, clock=Clock(), vectors=False)
    mention = next(m for m in session.residue("I keep bees") if m.kind == "live" and "the shed" in m.text)
    session.strike(session.plan_strike("insights/forget-bees.md", mention.path, mention.line, mention.text),
                   mention.line, mention.text)
    left = entries(root)
    assert sorted(json.loads(t)["kind"] for t in left.values()) == ["apply", "ledger", "strike"]
    for name, text in left.items():
        assert round_trip(text) == text, name
    [txn] = [parse_entry(json.loads(t)) for t in left.values() if json.loads(t)["kind"] == "strike"]
    assert isinstance(txn, TxnIntent) and txn.struck == records.StruckSentence(
        "notes/allotment.md", mention.line, mention.text, None)
    assert [d.path for d in txn.committed()] == ["notes/allotment.md"]


@pytest.mark.parametrize(("entry", "why"), [
    ({"kind": "forget", "steps": [], "done": []}, "its 'failed' is missing or not a list"),
    ({"kind": "forget", "steps": [{"op": "archive"}], "done": [], "failed": []}, "a step is not a recorded operation"),
    ({"kind": "forget", "request": "r.md", "pref": "p", "rid": "0", "steps": [], "done": [{"index": 0}],
      "failed": []}, "a done step names no recorded step"),
    ({"kind": "apply", "files": [{"rel": 3}]}, "a file it writes is not a recorded write"),
    ({"kind": "apply", "files": [{"rel": "a.md", "before": None, "after": "x"}], "trailers": {"A": 1}},
     "its trailers are not a mapping"),
    ({"kind": "archive", "files": [{"rel": "a.md", "before": None, "after": "x"}]},
     "its kind is none of apply, ledger, flags"),
    ({"kind": "strike", "request": "r.md", "pref": "p", "rid": "0", "steps": [], "done": [], "failed": [],
      "path": "a.md", "text": "x", "note": None}, "the sentence it strikes is not a recorded one"),
])
def test_an_entry_of_the_wrong_shape_is_malformed_with_why(entry, why):
    with pytest.raises(Malformed, match=why):
        parse_entry(entry)


@pytest.mark.parametrize("entry", [
    # a commit of a kind this tool never journals, on a real memory: recover had written it
    {"kind": "archive", "id": "archive-forged", "target": "insights/pref-ann.md", "index_before": {},
     "files": [{"rel": "insights/pref-ann.md", "before": "ANN", "after": "---\nstatus: archived\n---\nx\n"}]},
    # a transaction whose done step names no step
    {"kind": "forget", "id": "forget-forged", "request": "r.md", "pref": "p", "rid": "0", "steps": [],
     "done": [{"index": 3, "commit": None}], "failed": [], "ledger_rel": ".palinode-audit/ledger.jsonl"},
])
def test_a_malformed_entry_is_listed_by_integrity_and_never_acted_on(tmp_path, entry):
    import subprocess
    import sys

    from helpers import git

    ann = palinode_file({"id": "p"}, "I know Ann Lee.")
    root = make_git_store(tmp_path / "s", {"insights/pref-ann.md": ann})
    folder = root / ".git/palinode-audit/journal"
    folder.mkdir(parents=True, exist_ok=True)
    for f in entry.get("files", []):
        f["before"] = ann  # the memory as it is: an entry recover would otherwise complete
    (folder / f"{entry['id']}.json").write_text(json.dumps(entry))
    head, text = git(root, "rev-parse", "HEAD"), (root / "insights/pref-ann.md").read_bytes()

    def audit(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "palinode_core", *args], capture_output=True, text=True)

    listed = audit("--json", "integrity", str(root))
    assert listed.returncode == 1 and "did not write" in listed.stdout, listed.stdout
    for how in ("--complete", "--rollback"):
        proc = audit("recover", str(root), how, "--yes")
        assert "Traceback" not in proc.stderr
    assert git(root, "rev-parse", "HEAD") == head and (root / "insights/pref-ann.md").read_bytes() == text
    assert (folder / f"{entry['id']}.json").exists()  # left for a person to look at
