"""Every write is a transaction (issue 11, items 4-7): a failed commit leaves
git's index as the user had it, recovery reads what HEAD, the index and the
worktree hold, a forget apply or withdraw is journaled and recovered whole,
and two writers never lose a decision."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import Clock, git, make_git_store, palinode_file, subjects

from palinode_core.errors import PalinodeError, UncommittedEdits
from palinode_core.forget import ledger
from palinode_core.inspect.integrity import integrity
from palinode_core.ops import journal, lifecycle
from palinode_core.ops.apply import apply
from palinode_core.session import Session
from palinode_core.storage.store import Store
from palinode_core.undo import recover

REQUEST = "insights/forget-ann.md"
TARGETS = ("people/ann.md", "notes/trip.md", "insights/pref-ann.md")
FILES = {
    "people/ann.md": palinode_file({"id": "people-ann"}, "Ann Lee likes tea. She runs on Sundays."),
    "notes/trip.md": palinode_file({"id": "notes-trip"}, "Went hiking with Ann Lee. The weather held."),
    "insights/pref-ann.md": palinode_file({"id": "insights-pref-ann"}, "I know Ann Lee well."),
    "people/bob.md": palinode_file({"id": "people-bob"}, "Bob."),
    REQUEST: palinode_file({"id": "insights-forget-ann"}, "Please forget that I know Ann Lee."),
}
# The request as the resolver would route it (two strikes, one archive), built
# without a search index so a killed child starts fast; apply_forget is real.
WORKER = textwrap.dedent("""
    import os, sys
    from palinode_core.forget import review
    from palinode_core.forget.requests import request_at
    from palinode_core.forget.resolve import Candidate, ForgetPlan, Resolution
    from palinode_core.ops import lifecycle
    from palinode_core.session import Session
    from palinode_core.storage.store import Store
    from palinode_core.undo import withdraw

    def three_targets(store, request_path):
        request = request_at(store, request_path)
        trailers = {"Forget-Request": request.path, "Retraction-Id": request.rid}
        cands = []
        for rank, path in enumerate(["people/ann.md", "notes/trip.md"], 1):
            plan = lifecycle.plan_retract(store, path, request.pref, superseded_by=request.path, trailers=trailers)
            cands.append(Candidate(path, rank, "bm25", ("ann", "lee"), 0.1, "strike", "test", plan))
        plan = lifecycle.plan_archive(store, "insights/pref-ann.md", superseded_by=request.path,
                                      reason=f'forget request: "{request.pref}"', trailers=trailers)
        cands.append(Candidate("insights/pref-ann.md", 3, "bm25", ("ann", "lee"), 0.9, "archive", "test", plan))
        return ForgetPlan(request, store.config.forget, tuple(cands),
                          Resolution(request, (), 10, "lexical", None, None, ()))

    if __name__ == "__main__":
        root, mode, step = sys.argv[1:4]
        store = Store(root)
        def fault(name):
            if name == step:
                os._exit(9)
        if mode == "apply":
            review.apply_forget(store, three_targets(store, "insights/forget-ann.md"), fault=fault)
        else:
            withdraw.apply_withdraw(store, Session(store).plan_withdraw("insights/forget-ann.md"), fault=fault)
""")
APPLY_KILL_STEPS = [*(f"{pre}step_{i}{post}" for i in range(3) for pre, post in
                      [("before_", "")] + [("", f":{s}") for s in ("after_check", "after_file_write",
                                                                      "after_history_write", "before_commit",
                                                                      "after_commit")]),
                    "before_ledger", "ledger:after_check", "ledger:after_ledger_write", "ledger:before_commit",
                    "ledger:after_commit", "after_ledger"]


def run_worker(root: Path, mode: str, step: str, env: dict[str, str] | None = None) -> int:
    script = root.parent / "worker.py"
    script.write_text(WORKER)
    proc = subprocess.Popen([sys.executable, str(script), str(root), mode, step], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})},
                            start_new_session=True)
    _, err = proc.communicate()
    wait_group(proc.pid)  # a git command the killed worker started ends on its own first
    # a run refused before its first commit (a rival changed a target) writes nothing and says so
    assert proc.returncode in (0, 9, -9) or "recover --complete" in err or "nothing was changed" in err, err
    return proc.returncode


def wait_group(pgid: int) -> None:
    import time
    for _ in range(1000):
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.01)


@pytest.fixture
def store_root(tmp_path):
    return make_git_store(tmp_path / "s", FILES)


def temp_leftovers(root: Path) -> list[str]:
    return [str(p) for p in root.rglob(".*.tmp")]


def request_consistent(root: Path) -> str:
    """'' when the request's state agrees with its files and the ledger, else why not."""
    store = Store(root)
    session = Session(store)
    state = {s.path: s for s in session.request_states()}[REQUEST]
    memories = store.scan().memories
    changed = [t for t in TARGETS if memories[t].archived or "i know ann lee" in memories[t].retracted_prefs]
    records = ledger.decisions_for(ledger.read_ledger(store), REQUEST)
    applies = [r for r in records if r["action"] == "apply"]
    withdraws = [r for r in records if r["action"] == "withdraw"]
    if state.state == "withdrawn":
        ok = not changed and withdraws and withdraws[-1]["complete"]
    elif state.state == "applied":
        ok = len(changed) == 3 and applies and applies[-1]["complete"] and len(applies[-1]["approved"]) == 3
    elif state.state == "pending":
        ok = not changed and not applies
    else:
        ok = False
    return "" if ok else f"state {state.state} with {len(changed)} target(s) changed, {len(records)} record(s)"


def assert_consistent(root: Path) -> None:
    store = Store(root)
    assert journal.pending(store) == []
    assert [p.to_dict() for p in integrity(store, store.scan().memories)] == []
    assert temp_leftovers(root) == []
    assert git(root, "status", "--porcelain") == ""  # nothing staged or written is left over
    assert request_consistent(root) == ""


# -- item 4: a failed commit puts git's index back too ------------------------------------

def _users_staged_work(root: Path, rel: str = "people/bob.md") -> tuple[str, str]:
    """The user staged one version of ``rel`` and kept editing: index and worktree differ."""
    path = root / rel
    path.write_text(FILES[rel] + "\nStaged by the user.\n")
    git(root, "add", rel)
    path.write_text(FILES[rel] + "\nStaged by the user.\nStill typing. Ann Lee called.\n")
    return git(root, "ls-files", "-s", "--", rel), git(root, "diff", "--cached")


@pytest.mark.parametrize("failure", ["ref_lock", "signer"])
def test_failed_commit_puts_the_index_back_and_leaves_the_users_staged_work(store_root, failure):
    staged, cached_diff = _users_staged_work(store_root)
    ours = git(store_root, "ls-files", "-s", "--", "people/ann.md")
    worktree = (store_root / "people/bob.md").read_bytes()
    status = git(store_root, "status", "--porcelain")
    if failure == "ref_lock":
        (store_root / ".git/refs/heads/main.lock").write_text("")
    else:
        git(store_root, "config", "commit.gpgsign", "true")
        git(store_root, "config", "gpg.program", "false")
    store = Store(store_root, clock=Clock())
    head = git(store_root, "rev-parse", "HEAD")
    try:
        apply(store, lifecycle.plan_retract(store, "people/ann.md", "I know Ann Lee"))
    except PalinodeError as exc:
        assert "nothing was changed" in str(exc) and "Traceback" not in str(exc)
        assert failure != "ref_lock" or "try again" in str(exc)  # a busy lock is a retryable error
    else:  # a store whose signer we neutralise commits: then it must be exactly our commit
        assert git(store_root, "rev-parse", "HEAD~1") == head
        assert git(store_root, "ls-files", "-s", "--", "people/bob.md") == staged
        return
    assert git(store_root, "ls-files", "-s", "--", "people/ann.md") == ours  # our staging is taken back
    assert git(store_root, "ls-files", "-s", "--", "people/bob.md") == staged  # byte-identical blob
    assert git(store_root, "diff", "--cached") == cached_diff
    assert (store_root / "people/bob.md").read_bytes() == worktree
    assert git(store_root, "status", "--porcelain") == status
    assert not (store_root / "people/ann-history.md").exists()
    assert git(store_root, "rev-parse", "HEAD") == head
    assert journal.pending(store) == [] and temp_leftovers(store_root) == []


def test_a_target_with_the_users_own_edits_is_refused_untouched(store_root):
    """Never commit someone's own edits under our subject: staged or not, they stay theirs."""
    staged, cached_diff = _users_staged_work(store_root, "people/ann.md")
    worktree = (store_root / "people/ann.md").read_bytes()
    status = git(store_root, "status", "--porcelain")
    head = git(store_root, "rev-parse", "HEAD")
    store = Store(store_root, clock=Clock())
    with pytest.raises(UncommittedEdits, match="commit or stash your edits to people/ann.md first"):
        apply(store, lifecycle.plan_retract(store, "people/ann.md", "I know Ann Lee"))
    assert git(store_root, "ls-files", "-s", "--", "people/ann.md") == staged
    assert git(store_root, "diff", "--cached") == cached_diff
    assert (store_root / "people/ann.md").read_bytes() == worktree
    assert git(store_root, "status", "--porcelain") == status and git(store_root, "rev-parse", "HEAD") == head
    assert journal.pending(store) == []


GIT_WRAPPER = """#!/bin/sh
for a in "$@"; do
  if [ "$a" = commit ]; then kill -9 $PPID; {then}; fi
done
exec {git} "$@"
"""


@pytest.mark.parametrize("then", ["exit 1", "sleep 0.2"])
@pytest.mark.parametrize("how", ["complete", "rollback"])
def test_killed_inside_git_commit(store_root, tmp_path, then, how):
    """Our process dies while git commits (git then fails, or finishes on its own)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    real = subprocess.run(["which", "git"], capture_output=True, text=True).stdout.strip()
    (bindir / "git").write_text(GIT_WRAPPER.format(then=then, git=real))
    (bindir / "git").chmod(0o755)
    staged, _ = _users_staged_work(store_root)
    ours = git(store_root, "ls-files", "-s", "--", "people/ann.md")
    code = run_worker(store_root, "apply", "never", env={"PATH": f"{bindir}:{os.environ['PATH']}"})
    assert code in (9, -9)
    store = Store(store_root)
    assert [p.kind for p in integrity(store, store.scan().memories)] == ["interrupted_forget"]
    recover.recover(store, how)
    assert journal.pending(store) == [] and integrity(store, store.scan().memories) == [] and temp_leftovers(store_root) == []
    # the user's staged work on another file is theirs throughout; ours is committed or taken back
    assert git(store_root, "ls-files", "-s", "--", "people/bob.md") == staged
    if git(store_root, "log", "-1", "--format=%s", "--", "people/ann.md").startswith("initial"):
        assert git(store_root, "ls-files", "-s", "--", "people/ann.md") == ours
    assert git(store_root, "status", "--porcelain", "--", "people/ann.md", "people/ann-history.md") == ""
    assert request_consistent(store_root) == ""


def _killed_holding_the_index_lock(store_root: Path, tmp_path: Path) -> None:
    """Our process and the git it runs are killed inside `git commit`, after git took
    .git/index.lock (a kill of the whole group): git never removes it."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    real = subprocess.run(["which", "git"], capture_output=True, text=True).stdout.strip()
    (bindir / "git").write_text(GIT_WRAPPER.format(then=": > .git/index.lock; exit 1", git=real))
    (bindir / "git").chmod(0o755)
    assert run_worker(store_root, "apply", "never", env={"PATH": f"{bindir}:{os.environ['PATH']}"}) in (9, -9)
    assert (store_root / ".git/index.lock").exists()


def recover_cli(root: Path, how: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "palinode_core", "--json", "recover", str(root), f"--{how}", "--yes"],
                          capture_output=True, text=True)


@pytest.mark.parametrize("how", ["complete", "rollback"])
def test_recover_clears_the_index_lock_a_git_killed_inside_our_commit_left(store_root, tmp_path, how):
    _killed_holding_the_index_lock(store_root, tmp_path)
    proc = recover_cli(store_root, how)
    assert proc.returncode == 0, proc.stderr
    removed = [r for r in json.loads(proc.stdout)["recovered"] if r.get("kind") == "git_locks"]
    assert removed and removed[0]["paths"] == [".git/index.lock"], proc.stdout
    assert not (store_root / ".git/index.lock").exists()
    assert_consistent(store_root)


def test_recover_says_how_to_go_on_when_the_index_lock_may_be_a_running_gits(store_root, tmp_path):
    _killed_holding_the_index_lock(store_root, tmp_path)
    # a git at work in the store (reading, as a user's `git log` would): the lock may be its
    reader = subprocess.Popen(["git", "cat-file", "--batch"], cwd=store_root, stdin=subprocess.PIPE,
                              stdout=subprocess.DEVNULL)
    try:
        proc = recover_cli(store_root, "complete")
    finally:
        reader.stdin.close()
        reader.wait()
    lock = store_root / ".git/index.lock"
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert f"git (process {reader.pid}) is running in the store" in proc.stderr, proc.stderr
    assert f"rm -- {lock}" in proc.stderr and "recover again" in proc.stderr and "nothing was changed" in proc.stderr
    assert lock.exists() and [i.kind for i in journal.pending(Store(store_root))] == ["forget"]
    lock.unlink()  # as the message says, once no git is running
    assert recover_cli(store_root, "complete").returncode == 0
    assert_consistent(store_root)


# -- item 5: recovery reads the real state, never git's wording -----------------------------

def test_recover_when_someone_else_committed_our_change(store_root):
    run_worker(store_root, "apply", "step_0:before_commit")
    # an agent commits everything tracked; the user then has unrelated unstaged work
    git(store_root, "commit", "-qam", "agent autosave")
    (store_root / "people/bob.md").write_text("Bob, unsaved work.\n")
    struck = (store_root / "people/ann.md").read_bytes()
    store = Store(store_root)
    results = recover.recover(store, "complete")
    assert results[0]["result"] == "completed"
    assert (store_root / "people/ann.md").read_bytes() == struck  # never put the old text back
    assert (store_root / "people/bob.md").read_text() == "Bob, unsaved work.\n"
    assert git(store_root, "status", "--porcelain") == " M people/bob.md\n"
    git(store_root, "checkout", "--", "people/bob.md")
    assert_consistent(store_root)


@pytest.mark.parametrize("step", ["step_1:after_commit", "step_2:before_commit", "ledger:before_commit"])
def test_withdraw_rollback_commits_every_undo(store_root, step):
    run_worker(store_root, "apply", "none")
    before = {t: Store(store_root).load(t) for t in TARGETS}
    assert run_worker(store_root, "withdraw", step) in (9, -9)
    head = git(store_root, "rev-parse", "HEAD")
    store = Store(store_root)
    recover.recover(store, "rollback")
    assert_consistent(store_root)  # clean status: a committed step was undone by a commit, not rewritten
    after = Store(store_root)
    assert {s.path: s.state for s in Session(after).request_states()}[REQUEST] == "applied"
    for t in TARGETS:
        assert after.load(t).archived == before[t].archived
        assert after.load(t).retracted_prefs == before[t].retracted_prefs
    assert git(store_root, "rev-list", "--count", f"{head.strip()}..HEAD") != "0\n" or step == "ledger:before_commit"


# -- item 6: one request, one transaction ----------------------------------------------------

@pytest.mark.parametrize("step", APPLY_KILL_STEPS)
def test_kill_at_every_step_of_a_three_target_apply(store_root, step):
    how = "complete" if APPLY_KILL_STEPS.index(step) % 2 == 0 else "rollback"
    assert run_worker(store_root, "apply", step) in (9, -9)
    store = Store(store_root)
    problems = integrity(store, store.scan().memories)
    assert [p.kind for p in problems] == ["interrupted_forget"], problems
    assert problems[0].path == REQUEST
    recover.recover(store, how)
    assert_consistent(store_root)
    state = {s.path: s.state for s in Session(Store(store_root)).request_states()}[REQUEST]
    ledger_done = APPLY_KILL_STEPS.index(step) >= APPLY_KILL_STEPS.index("ledger:after_commit")
    assert state == ("applied" if how == "complete" or ledger_done else "pending")


def test_one_unwritable_target_says_what_was_committed(store_root):
    # the third target's history sibling cannot be written: a folder squats on its name
    (store_root / "insights/pref-ann-history.md").mkdir()
    (store_root / "insights/pref-ann-history.md/keep").write_text("")
    proc = subprocess.run([sys.executable, "-c", WORKER.replace('if __name__ == "__main__":', "if False:") +
                           "\nimport json\nstore = Store(sys.argv[1])\n"
                           "out = review.apply_forget(store, three_targets(store, 'insights/forget-ann.md'))\n"
                           "print(json.dumps(out.to_dict()))", str(store_root)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["message"].startswith("committed 2 of 3 step(s) (people/ann.md, notes/trip.md)")
    assert "nothing was changed" not in out["message"]
    assert [f["path"] for f in out["failed"]] == ["insights/pref-ann.md"]
    assert {s.path: s.state for s in Session(Store(store_root)).request_states()}[REQUEST] == "partial"
    assert journal.pending(Store(store_root)) == []


def test_a_refused_first_step_records_nothing(store_root):
    """Nothing committed is no apply: no ledger record, no journal left, the request still pending."""
    (store_root / "people/ann-history.md").mkdir()
    (store_root / "people/ann-history.md/keep").write_text("")
    proc = subprocess.run([sys.executable, "-c", WORKER.replace('if __name__ == "__main__":', "if False:") +
                           "\nstore = Store(sys.argv[1])\n"
                           "review.apply_forget(store, three_targets(store, 'insights/forget-ann.md'))\n",
                           str(store_root)], capture_output=True, text=True)
    assert proc.returncode == 1 and "PalinodeError" in proc.stderr and "nothing was changed" in proc.stderr
    assert git(store_root, "rev-list", "--count", "HEAD") == "1\n"
    assert not (store_root / ".palinode-audit/ledger.jsonl").exists()
    store = Store(store_root)
    assert journal.pending(store) == []
    assert {s.path: s.state for s in Session(store).request_states()}[REQUEST] == "pending"


# -- item 7: rivals ---------------------------------------------------------------------------

RACER = textwrap.dedent("""
    import sys, time
    from palinode_core.forget import ledger
    from palinode_core.storage.store import Store
    root, who, runs, start = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    store = Store(root)
    while time.time() < start:
        time.sleep(0.005)
    for run in range(runs):
        ledger.record(store, {"action": "note", "path": f"{who}-{run}", "note": "race"})
""")


def test_two_writers_never_lose_a_decision(store_root):
    """30 decisions from each of two processes racing on the ledger: all 60 kept."""
    import time
    start = str(time.time() + 2.0)
    procs = [subprocess.Popen([sys.executable, "-c", RACER, str(store_root), who, "30", start],
                              stderr=subprocess.PIPE, text=True) for who in ("a", "b")]
    for proc in procs:
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
    kept = {e["path"] for e in ledger.read_ledger(Store(store_root))}
    assert kept == {f"{who}-{run}" for who in "ab" for run in range(30)}
    assert len([s for s in subjects(store_root) if s.startswith("palinode-audit ledger: note")]) == 60
    assert git(store_root, "status", "--porcelain") == ""


def test_an_autosaving_agent_under_us(store_root):
    """An agent commits everything tracked every 30 ms while the request is applied."""
    agent = subprocess.Popen(["sh", "-c", "while :; do git -C \"$0\" commit -qam autosave >/dev/null 2>&1; "
                              "sleep 0.03; done", str(store_root)])
    try:
        code = run_worker(store_root, "apply", "none")
    finally:
        agent.kill()
        agent.wait()
    assert code == 0
    assert_consistent(store_root)
    assert {s.path: s.state for s in Session(Store(store_root)).request_states()}[REQUEST] == "applied"


def test_a_briefly_held_ref_lock_is_waited_out(store_root):
    import threading
    lock = store_root / ".git/refs/heads/main.lock"
    lock.write_text("")
    threading.Timer(0.4, lock.unlink).start()
    store = Store(store_root, clock=Clock())
    done = apply(store, lifecycle.plan_retract(store, "people/ann.md", "I know Ann Lee"))
    assert done.commit and subjects(store_root)[0].startswith("palinode retract: people/ann.md")
    assert git(store_root, "status", "--porcelain") == ""


def test_a_reset_loop_under_us(store_root):
    """`git reset --hard` every 30 ms while the request is applied: whatever
    survives, the ledger lists exactly the targets the files show changed."""
    resetter = subprocess.Popen(["sh", "-c", "while :; do git -C \"$0\" reset -q --hard >/dev/null 2>&1; "
                                 "sleep 0.03; done", str(store_root)])
    try:
        run_worker(store_root, "apply", "none")
    finally:
        resetter.kill()
        resetter.wait()
    store = Store(store_root)
    if journal.pending(store):  # the ledger commit lost the race: the journal keeps it
        recover.recover(store, "complete")
    store = Store(store_root)
    assert journal.pending(store) == [] and temp_leftovers(store_root) == []
    assert git(store_root, "status", "--porcelain") == ""
    memories = store.scan().memories
    changed = {t for t in TARGETS if memories[t].archived or "i know ann lee" in memories[t].retracted_prefs}
    records = [r for r in ledger.read_ledger(store) if r.get("request") == REQUEST and r.get("action") == "apply"]
    if not records:  # refused before the first commit: nothing changed, nothing recorded
        assert changed == set()
        return
    assert {a["path"] for a in records[-1]["approved"]} == changed
    assert records[-1]["complete"] == (len(changed) == 3)


def test_a_left_temp_file_is_reported_and_removed(store_root):
    """What a stop inside atomic_write leaves: named by integrity, removed by recover."""
    (store_root / "people/.ann.md.k3x9_q2z.tmp").write_text("half a memory")
    (store_root / "people/.notes.tmp").write_text("not ours: another program's name")
    store = Store(store_root)
    assert [(p.path, p.kind) for p in integrity(store, store.scan().memories)] == [("people/.ann.md.k3x9_q2z.tmp", "temp_file")]
    results = recover.recover(store, "complete")
    assert results == [{"kind": "temp_files", "result": "removed", "paths": ["people/.ann.md.k3x9_q2z.tmp"],
                        "summary": "removed 1 temp file(s) a stop left behind"}]
    assert not (store_root / "people/.ann.md.k3x9_q2z.tmp").exists() and (store_root / "people/.notes.tmp").exists()
    assert Session(Store(store_root)).integrity() == []
