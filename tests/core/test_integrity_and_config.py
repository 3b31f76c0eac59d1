"""Every integrity problem kind is reported, recovery refuses what it cannot
repair (writing nothing), and a bad palinode.config.yaml is one clear error."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers import Clock, git, make_git_store, palinode_file, subjects
from palinode_core.forget import ledger
from palinode_core.ops import journal, lifecycle
from palinode_core.ops.apply import apply
from palinode_core.session import Session
from palinode_core.undo import recover, withdraw
from palinode_core.storage.config import ForgetKnobs, StoreConfig, load_store_config
from palinode_core.errors import PalinodeError
from palinode_core.storage.store import Store
from palinode_core.text.words import retraction_id

ANN = palinode_file({"id": "people-ann"}, "Ann Lee likes tea. She runs on Sundays.")
PREF = "I know Ann Lee"
RID = retraction_id(PREF)


class Crash(BaseException):
    """Stands for a kill: not an error the apply path catches and rolls back."""


def crash_at(name: str):
    def fault(step: str) -> None:
        if step == name:
            raise Crash(step)
    return fault


@pytest.fixture
def retracted(tmp_path):
    """A store with one real, consistent retraction in people/ann.md."""
    root = make_git_store(tmp_path / "s", {"people/ann.md": ANN, "people/bob.md": palinode_file({"id": "b"}, "Bob.")})
    store = Store(root, clock=Clock())
    apply(store, lifecycle.plan_retract(store, "people/ann.md", PREF))
    assert Session(Store(root)).integrity() == []
    return root


def kinds(root) -> list[tuple[str, str, str]]:
    return [(p.path, p.kind, p.severity) for p in Session(Store(root)).integrity()]


def edit(path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new))


# -- one test per problem kind -------------------------------------------------
def test_interrupted_apply(retracted):
    store = Store(retracted, clock=Clock())
    with pytest.raises(Crash):
        apply(store, lifecycle.plan_archive(store, "people/bob.md"), fault=crash_at("after_file_write"))
    problems = Session(Store(retracted)).integrity()
    assert [(p.path, p.kind) for p in problems] == [("people/bob.md", "interrupted_apply")]
    assert problems[0].detail.endswith("run recover to complete or roll back")


def test_interrupted_withdraw(tmp_path):
    root = make_git_store(tmp_path / "w", {
        "people/ann.md": ANN,
        "insights/pref-ann.md": palinode_file({"id": "insights-pref-ann"}, "I know Ann Lee well."),
        "insights/forget-ann.md": palinode_file({"id": "insights-forget-ann"}, "Please forget that I know Ann Lee."),
    })
    store = Store(root, clock=Clock())
    apply(store, lifecycle.plan_archive(store, "insights/pref-ann.md", superseded_by="insights/forget-ann.md"))
    apply(store, lifecycle.plan_retract(store, "people/ann.md", PREF, superseded_by="insights/forget-ann.md"))
    with pytest.raises(Crash):
        withdraw.apply_withdraw(store, Session(store).plan_withdraw("insights/forget-ann.md"), fault=crash_at("before_step_1"))
    problems = Session(Store(root)).integrity()
    assert [(p.path, p.kind) for p in problems] == [("insights/forget-ann.md", "interrupted_withdraw")]
    assert "stopped after 1 of" in problems[0].detail


# a store copied as a folder carries .git/palinode-audit too: bytes that are not UTF-8 and nesting
# deeper than the JSON parser's recursion once made integrity and recover fail outright
GARBLED = [b"{not json", b"\xff\xfe{", b"[" * 100_000]


@pytest.mark.parametrize("garbled", GARBLED, ids=["not-json", "not-utf8", "deep"])
def test_unreadable_journal_entry(retracted, garbled):
    folder = journal.journal_dir(Store(retracted))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "apply-garbled.json").write_bytes(garbled)
    problems = Session(Store(retracted)).integrity()
    assert [(p.path, p.kind) for p in problems] == [("apply-garbled.json", "interrupted_unknown")]
    assert "unreadable journal entry" in problems[0].detail
    assert "run recover" not in problems[0].detail  # recover cannot do anything about it


def test_dangling_superseded_by(tmp_path):
    root = make_git_store(tmp_path / "s", {
        "people/old.md": palinode_file({"status": "archived", "superseded_by": "people/gone.md"}, "Old.")})
    assert kinds(root) == [("people/old.md", "dangling_superseded_by", "warning")]


def test_marker_without_record(retracted):
    edit(retracted / "people/ann.md", f"retracted_prefs:\n- {PREF.lower()}\n", "")
    assert kinds(retracted) == [("people/ann.md", "marker_without_record", "error")]


def test_record_without_markers(retracted):
    ann = retracted / "people/ann.md"
    text = ann.read_text()
    start, end = text.index("~~"), text.index(f"r:{RID}].") + len(f"r:{RID}].")
    ann.write_text(text[:start] + "Ann Lee likes tea." + text[end:])  # a hand edit undid the strike
    assert kinds(retracted) == [("people/ann.md", "record_without_markers", "warning")]


def test_missing_history_line(retracted):
    (retracted / "people/ann-history.md").unlink()
    assert kinds(retracted) == [("people/ann.md", "missing_history_line", "error")]


def test_unanchored_marker(retracted):
    edit(retracted / "people/ann.md", "She runs", f"[RETRACTED 2025-06-01 r:{RID}]. She runs")
    assert kinds(retracted) == [("people/ann.md", "unanchored_marker", "error")]


def test_multiline_strike(retracted):
    edit(retracted / "people/ann.md", "~~Ann Lee likes", "~~Ann Lee\nlikes")
    problems = Session(Store(retracted)).integrity()
    assert [(p.path, p.kind, p.severity) for p in problems] == [("people/ann.md", "multiline_strike", "warning")]
    assert "crosses a line break" in problems[0].detail


def test_ledger_conflict(retracted):
    """Issue 25: mid-merge, a ledger with conflict markers is a problem, not "ok"."""
    ledger = retracted / ".palinode-audit/ledger.jsonl"
    ledger.parent.mkdir(exist_ok=True)
    ledger.write_text('<<<<<<< HEAD\n{"action": "dismiss"}\n=======\n{"action": "apply"}\n>>>>>>> other\n')
    assert kinds(retracted) == [(".palinode-audit/ledger.jsonl", "ledger_conflict", "error")]


def test_every_problem_kind_has_a_test():
    """A new Problem kind in the core must come with its own test above."""
    import re
    from pathlib import Path
    import palinode_core
    source = "".join(p.read_text() for p in Path(palinode_core.__file__).parent.rglob("*.py"))
    found = set(re.findall(r'Problem\(\s*\w+,\s*"([a-z_]+)"', source)) | {
        f"interrupted_{k}" for k in ("apply", "withdraw", "unknown")}  # journal kinds, named by an f-string
    assert len(found) >= 9
    tested = {"interrupted_apply", "interrupted_withdraw", "interrupted_unknown", "dangling_superseded_by",
              "marker_without_record", "record_without_markers", "missing_history_line", "unanchored_marker",
              "multiline_strike", "temp_file", "ledger_conflict",
              "ledger_unbacked",  # tests/core/test_team.py, every forgery
              "decision_conflict",  # tests/core/test_team.py, an apply and a dismissal made apart
              "unmerged_file"}  # tests/core/test_team.py, mid-merge reads
    assert found == tested


def test_temp_file_left_by_a_stop_is_reported_and_recover_removes_it(retracted):
    leftover = retracted / "people/.bob.md.k2j4h1ab.tmp"
    leftover.write_text("half a write")
    problems = [(p.path, p.kind) for p in Session(Store(retracted)).integrity()]
    assert ("people/.bob.md.k2j4h1ab.tmp", "temp_file") in problems
    results = recover.recover(Store(retracted), "complete")
    assert not leftover.exists() and any(r.get("kind") == "temp_files" for r in results)
    assert all(kind != "temp_file" for _path, kind in
               [(p.path, p.kind) for p in Session(Store(retracted)).integrity()])


# -- recovery that cannot repair -----------------------------------------------
def test_recover_refuses_when_the_file_was_changed_by_someone_else(retracted):
    store = Store(retracted, clock=Clock())
    with pytest.raises(Crash):
        apply(store, lifecycle.plan_archive(store, "people/bob.md"), fault=crash_at("after_file_write"))
    bob = retracted / "people/bob.md"
    bob.write_text(bob.read_text() + "An agent wrote here after the crash.\n")
    files = {p: p.read_bytes() for p in retracted.rglob("*") if p.is_file() and ".git" not in p.parts}
    head = git(retracted, "rev-parse", "HEAD")
    [item] = journal.pending(Store(retracted))
    assert not item.can_complete and not item.can_roll_back
    assert "has since been changed by someone else; resolve by hand" in item.summary
    [problem] = Session(Store(retracted)).integrity()
    assert problem.kind == "interrupted_apply" and "run recover" not in problem.detail
    for how in ("complete", "rollback"):
        with pytest.raises(PalinodeError, match=f"cannot {how} people/bob.md: it was changed by someone else "
                                                 "since; resolve it by hand"):
            recover.recover(Store(retracted), how)
    # nothing written, nothing committed, the journal kept for the human
    assert {p: p.read_bytes() for p in retracted.rglob("*") if p.is_file() and ".git" not in p.parts} == files
    assert git(retracted, "rev-parse", "HEAD") == head
    assert len(journal.pending(Store(retracted))) == 1
    # and the CLI says so in one line
    proc = subprocess.run([sys.executable, "-m", "palinode_core", "recover", str(retracted), "--rollback", "--yes"],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and "resolve it by hand" in proc.stderr
    assert {p: p.read_bytes() for p in retracted.rglob("*") if p.is_file() and ".git" not in p.parts} == files


@pytest.mark.parametrize("garbled", GARBLED, ids=["not-json", "not-utf8", "deep"])
def test_recover_refuses_an_unreadable_journal_entry(retracted, garbled):
    folder = journal.journal_dir(Store(retracted))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "apply-garbled.json").write_bytes(garbled)
    with pytest.raises(PalinodeError, match="cannot complete: an unreadable journal entry"):
        recover.recover(Store(retracted), "complete")
    assert (folder / "apply-garbled.json").read_bytes() == garbled
    assert git(retracted, "status", "--porcelain") == ""


def test_a_ledger_line_that_does_not_parse_is_skipped(retracted):
    """docs/format.md: a ledger line that does not parse is skipped, never
    fatal. A committed ledger is store text: a line nested 100,000 deep or
    holding a 5,000-digit number made 'requests' and 'report' fail outright."""
    good = {"action": "dismiss", "request": "insights/forget-ann.md", "note": "kept"}
    lines = ["[" * 100_000, '{"n": ' + "1" * 5000 + "}", json.dumps(good)]
    (retracted / ".palinode-audit").mkdir()
    (retracted / ".palinode-audit/ledger.jsonl").write_text("\n".join(lines) + "\n")
    git(retracted, "add", "-A")
    git(retracted, "commit", "-qm", "a hostile ledger")
    assert ledger.read_ledger(Store(retracted)) == [good]
    for command in ("requests", "report --since 2000-01-01"):
        proc = subprocess.run([sys.executable, "-m", "palinode_core", *command.split()[:1], str(retracted),
                               *command.split()[1:]], capture_output=True, text=True)
        assert proc.returncode == 0 and proc.stderr == "", (command, proc.stderr)


# -- palinode.config.yaml ----------------------------------------------------
def write_config(root, text: str) -> None:
    (root / "palinode.config.yaml").write_text(text)


@pytest.mark.parametrize("text,message", [
    ("consolidation: [unclosed\n", "palinode.config.yaml cannot be read: "),
    ("- just\n- a list\n", "palinode.config.yaml is not a mapping"),
    ("consolidation:\n  forget:\n    search_k: ten\n", "palinode.config.yaml: consolidation.forget has a bad value"),
    ("consolidation:\n  forget:\n    min_target_coverage: [1]\n",
     "palinode.config.yaml: consolidation.forget has a bad value"),
    (b"consolidation: \xff\xfe\n", "palinode.config.yaml cannot be read: UnicodeDecodeError"),
    # int(.inf) raised OverflowError: a traceback
    ("consolidation:\n  forget:\n    search_k: .inf\n", "palinode.config.yaml: consolidation.forget has a bad value"),
    # nine levels of nine aliases: the store never opened (30 s and 700 MB, still growing, when stopped)
    ("l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
     + "".join(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 9))
     + "search:\n  exclude_status: [*l8, *l8, *l8, *l8, *l8, *l8, *l8, *l8, *l8]\n",
     "palinode.config.yaml uses YAML anchors/aliases"),
    pytest.param("a: " + "[" * 5000 + "]" * 5000 + "\n", "palinode.config.yaml cannot be read",
                 id="nested-5000-deep"),  # a RecursionError
])
def test_a_bad_config_is_one_clear_error(tmp_path, text, message):
    root = make_git_store(tmp_path / "s", {"people/ann.md": ANN})
    path = root / "palinode.config.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(PalinodeError) as caught:
        load_store_config(root)
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)
    store = Store(root)  # reads go on with Palinode's defaults; nothing is written with knobs it could not read
    assert store.config.forget.search_k == 10 and str(store.config_error).startswith(message)
    with pytest.raises(PalinodeError, match="fix it before changing the store"):
        store.check_writable()
    proc = subprocess.run([sys.executable, "-m", "palinode_core", "scan", str(root)], capture_output=True, text=True,
                          env={**os.environ})
    assert proc.returncode == 0 and "memories: 1" in proc.stdout and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and "palinode.config.yaml" in proc.stderr


@pytest.mark.parametrize("text", [
    "",  # empty file
    "other: 1\n",  # no sections this tool reads
    "consolidation: 3\ngit: [x]\nsearch: text\n",  # sections of the wrong shape are absent
    "consolidation:\n  forget: null\n",
])
def test_absent_or_misshapen_sections_mean_palinodes_defaults(tmp_path, text):
    root = make_git_store(tmp_path / "s", {"people/ann.md": ANN})
    write_config(root, text)
    config = load_store_config(root)
    assert config.forget == ForgetKnobs()
    assert (config.commit_prefix, config.exclude_status) == (StoreConfig().commit_prefix, ("archived",))
    assert config.source == str(root / "palinode.config.yaml")


def test_good_values_are_read_and_used(tmp_path):
    root = make_git_store(tmp_path / "s", {"people/ann.md": ANN})
    write_config(root, "consolidation:\n  forget:\n    enabled: true\n    search_k: '7'\n    max_targets: 3\n"
                       "git:\n  commit_prefix: mem\nsearch:\n  exclude_status: [archived, draft]\n")
    config = load_store_config(root)
    assert config.forget == ForgetKnobs(enabled=True, search_k=7, max_targets=3)
    assert config.commit_prefix == "mem" and config.exclude_status == ("archived", "draft")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "config")
    store = Store(root, clock=Clock())
    apply(store, lifecycle.plan_archive(store, "people/ann.md"))
    assert subjects(root)[0] == "mem archive: people/ann.md"
    assert json.loads(json.dumps(store.config.forget.__dict__))["search_k"] == 7


@pytest.mark.parametrize("broken", ["consolidation: [unclosed\n", "- a list\n", "a: &x 1\nb: *x\n",
                                    "consolidation:\n  forget:\n    search_k: lots\n"])
def test_a_broken_config_stops_no_read_and_every_write(tmp_path, broken):
    """Issue 24, finding 8: reads fall back to Palinode's defaults with one warning line;
    writes are refused with one line until the file is fixed."""
    import subprocess
    import sys

    from palinode_core.demo import build_demo_store

    root = tmp_path / "demo"
    build_demo_store(root)
    (root / "palinode.config.yaml").write_text(broken)
    for command in (["scan"], ["requests"], ["integrity"], ["plan", "insights/forget-berlin.md", "--lexical"],
                    ["search", "Berlin", "--lexical"], ["operations"]):
        proc = subprocess.run([sys.executable, "-m", "palinode_core", command[0], str(root), *command[1:]],
                              capture_output=True, text=True)
        assert proc.returncode == 0, (command, proc.stderr)
        warnings = [line for line in proc.stderr.splitlines() if "palinode.config.yaml" in line]
        assert len(warnings) == 1 and "Palinode's defaults" in warnings[0], (command, proc.stderr)
    before = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    for command in (["apply", "insights/forget-berlin.md", "--lexical", "--yes"],
                    ["archive", "people/alice-chen.md", "--yes"],
                    ["dismiss", "insights/forget-tea.md", "--note", "n", "--yes"]):
        proc = subprocess.run([sys.executable, "-m", "palinode_core", command[0], str(root), *command[1:]],
                              capture_output=True, text=True)
        errors_ = [line for line in proc.stderr.splitlines() if "nothing was changed" in line]
        assert proc.returncode != 0 and len(errors_) == 1 and "fix it" in errors_[0], (command, proc.stderr)
    assert subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout == before


def test_a_config_broken_while_a_session_is_open_stops_no_read(tmp_path):
    """Issue 24, finding 8: the app's session reads the config again when it changes; broken
    then, the reads go on with Palinode's defaults (said in config_error) and writes wait."""
    from palinode_core.demo import build_demo_store
    from palinode_core.storage.config import CONFIG_NAME

    root = tmp_path / "demo"
    build_demo_store(root)
    good = (root / CONFIG_NAME).read_text()
    session = Session.open(root, vectors=False)
    session.rescan()
    assert session.store.config_error is None and session.store.config.forget != ForgetKnobs()
    (root / CONFIG_NAME).write_text("consolidation: [unclosed\n")
    for read in (lambda: session.refresh({CONFIG_NAME}), session.rescan):
        scan = read()
        assert scan.memories and str(session.store.config_error).startswith(f"{CONFIG_NAME} cannot be read")
        assert session.store.config.forget == ForgetKnobs()  # what a fresh read would use
    assert session.plan("insights/forget-berlin.md").request.pref == "I live in Berlin"
    with pytest.raises(PalinodeError, match="fix it before changing the store"):
        session.store.check_writable()
    (root / CONFIG_NAME).write_text(good)
    session.refresh({CONFIG_NAME})
    assert session.store.config_error is None and session.store.config.forget != ForgetKnobs()
    session.store.check_writable()


def test_a_broken_config_in_history_stops_no_read_as_of_that_commit(tmp_path):
    """Issue 24, finding 8: ``--at``/``--as-of`` read the config of that commit; broken there,
    the history is read with Palinode's defaults and one warning line."""
    from palinode_core.demo import build_demo_store

    root = tmp_path / "demo"
    build_demo_store(root)
    (root / "palinode.config.yaml").write_text("- a list\n")
    git(root, "commit", "-qam", "a broken config")
    for command in (["scan"], ["requests"], ["integrity"], ["residue", "--pref", "I live in Berlin"], ["report", "--request", "insights/forget-berlin.md"],
                    ["trace", "insights/forget-berlin.md"]):
        proc = subprocess.run([sys.executable, "-m", "palinode_core", command[0], str(root), *command[1:],
                               "--at", "HEAD"], capture_output=True, text=True)
        assert proc.returncode == 0, (command, proc.stderr)
        warnings = [line for line in proc.stderr.splitlines() if "palinode.config.yaml" in line]
        assert len(warnings) == 1 and "Palinode's defaults" in warnings[0], (command, proc.stderr)


# -- an operation is what its commit changed (issue 38, item 14) ----------------
@pytest.mark.parametrize("forged", ["empty", "another file", "no unstrike"])
def test_a_forged_undo_commit_neither_undoes_nor_blocks_a_real_strike(retracted, forged):
    """A commit in this tool's unretract form naming the real strike as undone, that
    unstrikes nothing: undo and redo of the strike go on as if it were not there."""
    store = Store(retracted, clock=Clock())
    strike = next(o for o in Session(store).operations() if o.op == "retract")
    message = (f"palinode unretract: people/ann.md (1 mentions)\n\nUndoes: {strike.commit}\n"
               f"Undoes-Operation: {strike.op_id}\nRetraction-Id: {RID}\n")
    if forged == "another file":
        edit(retracted / "people/bob.md", "Bob.", "Bob, again.")
    elif forged == "no unstrike":
        edit(retracted / "people/ann.md", "She runs on Sundays.", "She runs on Sundays and Mondays.")
    git(retracted, "commit", "-qa", "--allow-empty", "-m", message)
    strike = next(o for o in Session(Store(retracted)).operations() if o.commit == strike.commit)
    assert strike.undone_by is None, "a commit that took nothing back undid nothing"
    session = Session(Store(retracted, clock=Clock()))
    apply(session.store, session.plan_undo(strike))
    assert "[RETRACTED" not in (retracted / "people/ann.md").read_text()
    session = Session(Store(retracted, clock=Clock()))
    apply(session.store, session.plan_redo(session.operation(strike.commit)))
    assert "~~Ann Lee likes tea.~~ [RETRACTED" in (retracted / "people/ann.md").read_text()
