"""Apply what was reviewed (issue 21): `plan --out FILE` saves the plan a
person approved; `apply --plan FILE` executes exactly it, here or in another
clone, without planning again, and refuses with one line (writing nothing)
when the request or a target changed, or when the file was edited by hand."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timezone

import pytest
from helpers import Clock, git, make_git_store, palinode_file, subjects

from palinode_core.forget.saved import dumps, loads
from palinode_core.session import Session

FILES = {
    "insights/pref-bees.md": palinode_file({"id": "pref-bees", "created_at": "2025-05-01T10:00:00+00:00"},
                                           "I keep bees in the back garden."),
    "projects/weekly.md": palinode_file({"id": "weekly", "created_at": "2025-05-02T10:00:00+00:00"},
                                        "The printer was fixed. I keep bees in the back garden. Invoices are due."),
    "people/ann.md": palinode_file({"id": "ann", "created_at": "2025-05-02T10:00:00+00:00"}, "Ann likes tea."),
    "insights/forget-bees.md": palinode_file({"id": "forget-bees", "created_at": "2025-05-20T10:00:00+00:00"},
                                             "Please forget that I keep bees."),
}
REQUEST = "insights/forget-bees.md"


def audit(*args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "palinode_core", *args], capture_output=True, text=True)
    if ok:
        assert proc.returncode == 0, proc.stderr
    return proc


def snapshot(root) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.md"))}


@pytest.fixture
def store(tmp_path):
    return make_git_store(tmp_path / "a", FILES)


def test_a_saved_plan_applies_exactly_in_another_clone(store, tmp_path):
    out = tmp_path / "bees.plan.json"
    shown = json.loads(audit("--json", "plan", str(store), REQUEST, "--lexical", "--out", str(out)).stdout)
    saved = json.loads(out.read_text())
    assert shown["saved"]["steps"] and saved["base_commit"] == git(store, "rev-parse", "HEAD").strip()
    assert {s["target"] for s in saved["steps"]} == {s["path"] for s in shown["saved"]["steps"]}
    clone = tmp_path / "b"
    subprocess.run(["git", "clone", "-q", str(store), str(clone)], check=True)
    for name, value in (("user.name", "B"), ("user.email", "b@example.org")):
        git(clone, "config", name, value)
    preview = json.loads(audit("--json", "apply", str(clone), "--plan", str(out)).stdout)
    assert preview["applied"] is False and snapshot(clone) == snapshot(store)
    said = audit("plan", str(store), REQUEST, "--lexical", "--out", str(tmp_path / "again.json")).stdout
    assert f"Saved to {tmp_path / 'again.json'}" in said and "nothing was written to the store" in said
    shown_text = audit("apply", str(clone), "--plan", str(out)).stdout  # the same preview, for a person
    assert all(step["target"] in shown_text for step in saved["steps"]) and "--yes" in shown_text
    done = json.loads(audit("--json", "apply", str(clone), "--plan", str(out), "--yes").stdout)
    assert done["applied"] is True and len(done["commits"]) == len(saved["steps"])
    for step in saved["steps"]:  # the very bytes the reviewer saw
        assert (clone / step["target"]).read_text() == step["plan"]["new_text"]
    assert git(clone, "status", "--porcelain") == ""
    states = json.loads(audit("--json", "requests", str(clone)).stdout)["requests"]
    assert [s["state"] for s in states if s["path"] == REQUEST] == ["applied"]


def test_a_target_changed_since_is_refused_and_nothing_written(store, tmp_path):
    out = tmp_path / "p.json"
    audit("plan", str(store), REQUEST, "--lexical", "--out", str(out))
    target = json.loads(out.read_text())["steps"][0]["target"]
    (store / target).write_text((store / target).read_text() + "\nA line added since.\n")
    git(store, "commit", "-qam", "an edit since the review")
    before, log = snapshot(store), subjects(store)
    proc = audit("apply", str(store), "--plan", str(out), "--yes", ok=False)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "changed since the plan was saved" in proc.stderr
    assert snapshot(store) == before and subjects(store) == log


@pytest.mark.parametrize("forgery", ["new_text", "target", "history_line", "route", "trailers", "superseded_by",
                                     "ledger_target"])
def test_a_plan_file_edited_by_hand_is_refused(store, tmp_path, forgery):
    out = tmp_path / "p.json"
    audit("plan", str(store), REQUEST, "--lexical", "--out", str(out))
    data = json.loads(out.read_text())
    plan = data["steps"][0]["plan"]
    if forgery == "new_text":
        plan["new_text"] = plan["new_text"].replace("---\n", "---\nowner: mallory\n", 1)
    elif forgery == "target":
        plan["target"] = data["steps"][0]["target"] = ".git/config"
    elif forgery == "route":
        data["steps"][0]["route"] = "explode"
    elif forgery == "trailers":
        plan["trailers"] = {"Forget-Request": "x\nEvil: y"}
    elif forgery == "superseded_by":
        plan["superseded_by"] = "people/someone.md"
    elif forgery == "ledger_target":  # the tool's own record is no memory to change
        plan["target"] = data["steps"][0]["target"] = ".palinode-audit/ledger.jsonl"
    else:
        plan["history_line"] = "- all is well\n"
    out.write_text(json.dumps(data))
    before, log = snapshot(store), subjects(store)
    proc = audit("apply", str(store), "--plan", str(out), "--yes", ok=False)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert snapshot(store) == before and subjects(store) == log
    assert "owner: mallory" not in (store / ".git/config").read_text()


def test_not_a_plan_file_is_one_line(store, tmp_path):
    shapes = [{"format": "palinode-audit.forget-plan", "version": 1}, {"format": "palinode-audit.forget-plan",
              "version": 1, "request": {}, "steps": [{"plan": None, "route": "x"}], "ledger": {}}]
    for text in ("{}", "[1, 2]", "not json", json.dumps({"format": "palinode-audit.forget-plan", "version": 99}),
                 *map(json.dumps, shapes)):
        bad = tmp_path / "bad.json"
        bad.write_text(text)
        proc = audit("apply", str(store), "--plan", str(bad), "--yes", ok=False)
        assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "plan file" in proc.stderr
        assert "NoneType" not in proc.stderr and "__init__" not in proc.stderr and "Traceback" not in proc.stderr


def test_the_strike_carries_the_date_it_was_reviewed(store):
    reviewed = Session.open(store, clock=Clock(datetime(2025, 6, 1, 11, 0, tzinfo=timezone.utc)), vectors=False)
    index = reviewed.search_index()
    index.update_lexical(memories=reviewed.memories)
    approved = reviewed.approve(reviewed.plan(REQUEST, index=index))
    text = dumps(approved)
    later = Session.open(store, clock=Clock(datetime(2025, 6, 9, 8, 0, tzinfo=timezone.utc)), vectors=False)
    later.apply_saved(loads(text))
    struck = [p.target for p, _r in approved.steps if p.op == "retract"]
    assert struck and all("[RETRACTED 2025-06-01" in (store / rel).read_text() for rel in struck)


def test_a_saved_plan_flags_the_dependents_of_what_it_archives(tmp_path):
    """The dependents a saved plan's archive flags, listed from the scan at
    apply time (no git grep); one with uncommitted changes is left alone."""
    dependent = palinode_file({"id": "honey", "backed_by": ["insights/pref-bees"]}, "Rests on the bees note.")
    root = make_git_store(tmp_path / "a", {**FILES, "projects/honey.md": dependent})
    (root / "research").mkdir()  # never committed: the user's own
    late = palinode_file({"id": "late", "backed_by": "insights/pref-bees.md"}, "Also rests on it.")
    (root / "research/late.md").write_text(late)
    out = tmp_path / "bees.plan.json"
    audit("--json", "plan", str(root), REQUEST, "--lexical", "--out", str(out))
    assert [f["rel"] for s in json.loads(out.read_text())["steps"] for f in s["plan"]["flags"]] == [
        "projects/honey.md", "research/late.md"]
    done = json.loads(audit("--json", "apply", str(root), "--plan", str(out), "--yes").stdout)
    assert done["applied"] is True
    assert "stale_backing:\n- ref: insights/pref-bees\n  op: supersede" in (root / "projects/honey.md").read_text()
    assert (root / "research/late.md").read_text() == late
    assert "palinode backed_by review: insights/pref-bees supersede -> 1 dependent(s)" in subjects(root)


def _commit_dependent(root, rel: str) -> None:
    """A memory citing insights/pref-bees, committed (another clone's pull, Palinode itself)."""
    (root / rel).parent.mkdir(exist_ok=True)
    (root / rel).write_text(palinode_file({"id": rel[:-3].rsplit("/", 1)[-1], "backed_by": ["insights/pref-bees"]},
                                          "Cites the bees note."))
    git(root, "add", "--", rel)
    git(root, "commit", "-q", "-m", "a dependent")


def test_a_dependent_added_since_the_plan_was_saved_is_refused_as_stale(store, tmp_path):
    out = tmp_path / "bees.plan.json"
    audit("--json", "plan", str(store), REQUEST, "--lexical", "--out", str(out))
    _commit_dependent(store, "research/new.md")
    before = snapshot(store)
    proc = audit("apply", str(store), "--plan", str(out), "--yes", ok=False)
    assert proc.returncode != 0
    assert proc.stderr.strip().endswith(
        "the memories citing insights/pref-bees.md changed since the plan was saved (research/new.md); plan it again")
    assert len(proc.stderr.strip().splitlines()) == 1 and snapshot(store) == before


def test_a_dependent_added_after_the_sessions_scan_is_seen_by_its_apply(tmp_path):
    """A long-lived session (the API, the app) applies a saved plan against the
    store as it is then, not as it last scanned it: a memory that started
    citing the target since makes the plan stale."""
    from palinode_core.errors import StalePlan
    from palinode_core.forget.selection import APPROVE_ALL

    root = make_git_store(tmp_path / "s", FILES)
    session = Session.open(root, vectors=False, cache_dir=tmp_path / "c", clock=Clock())
    fplan = session.plan(REQUEST)
    text = dumps(session.approve(fplan, {c.path: APPROVE_ALL for c in fplan.actionable}))
    _commit_dependent(root, "research/honey.md")
    before = snapshot(root)
    with pytest.raises(StalePlan, match=r"the memories citing insights/pref-bees\.md changed .*research/honey\.md"):
        session.apply_saved(loads(text))
    assert snapshot(root) == before


def test_a_plan_that_resolves_across_a_minute_is_saved_at_one_time(store, tmp_path):
    """A plan's steps are made while it resolves; approved a minute later, each
    is made again at the approval's time, so its apply finds exactly that."""
    clock = Clock(datetime(2025, 6, 1, 11, 0, 59, tzinfo=timezone.utc))
    session = Session.open(store, clock=clock, vectors=False)
    index = session.search_index()
    index.update_lexical(memories=session.memories)
    fplan = session.plan(REQUEST, index=index)
    clock.when = datetime(2025, 6, 1, 11, 1, 0, tzinfo=timezone.utc)  # the minute turns before it is saved
    approved = session.approve(fplan)
    assert approved.planned_at.startswith("2025-06-01T11:01:00")
    assert all("[2025-06-01 11:01]" in plan.history_line for plan, _route in approved.steps)
    out = tmp_path / "p.json"
    out.write_text(dumps(approved))
    done = json.loads(audit("--json", "apply", str(store), "--plan", str(out), "--yes").stdout)
    assert done["applied"] is True


def test_a_target_changed_between_planning_and_saving_is_never_saved(store, tmp_path):
    from palinode_core.errors import StalePlan

    session = Session.open(store, clock=Clock(), vectors=False)
    index = session.search_index()
    index.update_lexical(memories=session.memories)
    fplan = session.plan(REQUEST, index=index)
    target = next(c.path for c in fplan.actionable if c.preapproved)
    (store / target).write_text((store / target).read_text() + "\nWritten meanwhile.\n")
    with pytest.raises(StalePlan):
        session.approve(fplan)  # what the reviewer saw is not what would be saved


def test_a_saved_plans_apply_asks_git_only_what_it_must(store, tmp_path):
    """Each git process is CPU on every apply: one status check for the whole
    request and one per step, no `git add` of files already tracked, and what HEAD holds after
    each commit read back in one process (no rev-parse, no cat-file per file)."""
    session = Session.open(store, vectors=False, cache_dir=tmp_path / "c", clock=Clock())
    fplan = session.plan(REQUEST)
    text = dumps(session.approve(fplan))
    tracked = set(git(store, "ls-files").splitlines())
    ran: list[str] = []
    later = Session.open(store, vectors=False, cache_dir=tmp_path / "c", clock=Clock())
    later.store.git.on_command = ran.append
    done = later.apply_saved(loads(text))
    commits = [c for c in ran if c.startswith("git commit")]
    assert done.commits and len(commits) == len(done.commits) + 1  # the steps and the ledger's
    steps = len(loads(text).steps)
    assert steps == 2 and sum(c.startswith("git status") for c in ran) == steps + 1  # once before all, then per step
    assert sum(c.startswith("git cat-file --batch-check") for c in ran) == len(commits)
    assert not [c for c in ran if c.startswith(("git rev-parse", "git cat-file blob", "git log"))], ran
    added = [c.split(" -- ", 1)[1].split(" ") for c in ran if c.startswith("git add")]
    assert added and not {path for paths in added for path in paths} & tracked  # new files only (histories, ledger)
    assert "projects/weekly.md" in git(store, "show", "--stat", "--format=", "HEAD~1")  # committed without an add
    assert git(store, "status", "--porcelain") == ""  # everything it wrote is committed


def test_the_residue_after_a_saved_plan_reads_the_dependents_it_flagged_as_written(tmp_path):
    """The apply writes each target, its history and the dependents it flags: the
    leak check recorded with it names their lines as the files now have them."""
    dependent = palinode_file({"id": "desk", "backed_by": ["insights/pref-bees"]},
                              "My desk notes.\n\nI keep bees in the back garden, next to the shed.")
    root = make_git_store(tmp_path / "a", {**FILES, "people/desk.md": dependent})
    out = tmp_path / "bees.plan.json"
    audit("--json", "plan", str(root), REQUEST, "--lexical", "--only", "insights/pref-bees.md", "--out", str(out))
    audit("--json", "apply", str(root), "--plan", str(out), "--yes")
    assert "stale_backing" in (root / "people/desk.md").read_text()  # flagged: its frontmatter grew
    ledger = [json.loads(line) for line in (root / ".palinode-audit/ledger.jsonl").read_text().splitlines()]
    mentions = [m for r in ledger if r["action"] == "residue" for m in r["mentions"] if m["path"] == "people/desk.md"]
    lines = (root / "people/desk.md").read_text().splitlines()
    assert mentions and all(m["text"] in lines[m["line"] - 1] for m in mentions)
