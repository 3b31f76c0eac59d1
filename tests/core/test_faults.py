"""Crashes, interleaved writers, git in odd states, full disks: nothing lost,
nothing silently inconsistent."""
from __future__ import annotations

import errno
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from helpers import Clock, git, make_git_store, palinode_file, subjects
from palinode_core.forget import ledger, review
from palinode_core.ops import journal, lifecycle
from palinode_core.ops.apply import APPLY_STEPS, apply
from palinode_core.session import Session
from palinode_core.undo import recover, withdraw
from palinode_core.errors import PalinodeError, StalePlan, UncommittedEdits
from palinode_core.storage.store import Store

ANN = palinode_file({"id": "people-ann"}, "Ann Lee likes tea. She runs on Sundays.")
KILL = textwrap.dedent("""
    import os, sys
    from palinode_core.forget import review
    from palinode_core.ops import lifecycle
    from palinode_core.ops.apply import apply
    from palinode_core.session import Session
    from palinode_core.undo import withdraw
    from palinode_core.storage.store import Store
    root, op, step = sys.argv[1:4]
    store = Store(root)
    def fault(name):
        if name == step:
            os._exit(9)
    if op == "archive":
        apply(store, lifecycle.plan_archive(store, "people/ann.md", superseded_by="people/bob.md"), fault=fault)
    elif op == "retract":
        apply(store, lifecycle.plan_retract(store, "people/ann.md", "I know Ann Lee"), fault=fault)
    elif op == "withdraw":
        withdraw.apply_withdraw(store, Session(store).plan_withdraw("insights/forget-ann.md"), fault=fault)
""")


def kill_at(root, op: str, step: str) -> None:
    proc = subprocess.run([sys.executable, "-c", KILL, str(root), op, step], capture_output=True, text=True)
    assert proc.returncode == 9, proc.stderr


def cli(*args: str) -> dict:
    proc = subprocess.run([sys.executable, "-m", "palinode_core", "--json", *args], capture_output=True, text=True)
    data = json.loads(proc.stdout)
    found_errors = args[0] == "integrity" and data["ok"] is False  # exits 1, as git fsck does
    assert proc.returncode == (1 if found_errors else 0), proc.stderr
    return data


@pytest.fixture
def small(tmp_path):
    return make_git_store(tmp_path / "s", {"people/ann.md": ANN,
                                           "people/bob.md": palinode_file({"id": "people-bob"}, "Bob.")})


EXPECTED = {"after_check": "before anything was written",
            "after_file_write": "after the file write (history not appended, not committed)",
            "after_history_write": "after the history write (not committed)",
            "before_commit": "after the history write (not committed)"}


@pytest.mark.parametrize("op", ["archive", "retract"])
@pytest.mark.parametrize("step", list(EXPECTED))
@pytest.mark.parametrize("how", ["complete", "rollback"])
def test_killed_apply_is_reported_and_repaired(small, op, step, how):
    original = (small / "people/ann.md").read_bytes()
    kill_at(small, op, step)
    problems = cli("integrity", str(small))["problems"]
    assert [p["kind"] for p in problems] == ["interrupted_apply"]
    assert problems[0]["detail"].startswith(f"{op} people/ann.md was interrupted {EXPECTED[step]}")
    assert cli("recover", str(small))["interrupted"][0]["can_" + ("complete" if how == "complete" else "roll_back")]
    cli("recover", str(small), f"--{how}", "--yes")
    assert journal.pending(Store(small)) == []
    assert cli("integrity", str(small))["problems"] == []
    if how == "rollback":
        assert (small / "people/ann.md").read_bytes() == original
        assert not (small / "people/ann-history.md").exists()
        assert subjects(small) == ["initial"]
    else:
        want = "palinode supersede: people/ann.md -> people/bob.md" if op == "archive" else \
            "palinode retract: people/ann.md (1 mentions)"
        assert subjects(small)[0] == want
        assert git(small, "status", "--porcelain") == ""


def test_an_apply_after_a_killed_one_points_at_recover_not_at_the_persons_edits(small):
    kill_at(small, "archive", "after_file_write")
    half_done = (small / "people/ann.md").read_bytes()
    head = git(small, "rev-parse", "HEAD")
    store = Store(small)
    with pytest.raises(UncommittedEdits, match=r"interrupted operation is on record: recover it first"):
        apply(store, lifecycle.plan_retract(store, "people/ann.md", "I know Ann Lee"))
    assert (small / "people/ann.md").read_bytes() == half_done and git(small, "rev-parse", "HEAD") == head
    cli("recover", str(small), "--rollback", "--yes")
    (small / "people/ann.md").write_text(ANN + "My own line.\n")  # now truly the person's edit
    with pytest.raises(UncommittedEdits, match=r"commit or stash your edits to people/ann.md first"):
        apply(store, lifecycle.plan_retract(store, "people/ann.md", "I know Ann Lee"))


@pytest.fixture
def applied(tmp_path):
    root = make_git_store(tmp_path / "w", {
        "people/ann.md": ANN,
        "insights/pref-ann.md": palinode_file({"id": "insights-pref-ann"}, "I know Ann Lee well."),
        "insights/forget-ann.md": palinode_file({"id": "insights-forget-ann"}, "Please forget that I know Ann Lee."),
    })
    store = Store(root, clock=Clock())
    apply(store, lifecycle.plan_archive(store, "insights/pref-ann.md", superseded_by="insights/forget-ann.md"))
    apply(store, lifecycle.plan_retract(store, "people/ann.md", "I know Ann Lee",
                                                  superseded_by="insights/forget-ann.md"))
    return root


@pytest.mark.parametrize("how", ["complete", "rollback"])
def test_withdraw_killed_between_commits(applied, how):
    before = {p: (applied / p).read_bytes() for p in ("people/ann.md", "insights/pref-ann.md", "insights/forget-ann.md")}
    kill_at(applied, "withdraw", "before_step_1")
    problems = cli("integrity", str(applied))["problems"]
    assert [p["kind"] for p in problems] == ["interrupted_withdraw"]
    assert "withdraw of insights/forget-ann.md stopped after 1 of 3 step(s)" in problems[0]["detail"]
    cli("recover", str(applied), f"--{how}", "--yes")
    store = Store(applied)
    assert journal.pending(store) == [] and cli("integrity", str(applied))["problems"] == []
    states = {s.path: s.state for s in Session(store).request_states()}
    if how == "complete":
        assert states["insights/forget-ann.md"] == "withdrawn"
        assert not store.load("people/ann.md").struck and not store.load("insights/pref-ann.md").archived
    else:
        assert states["insights/forget-ann.md"] == "applied"
        assert store.load("insights/pref-ann.md").archived and store.load("people/ann.md").struck
        assert (applied / "insights/forget-ann.md").read_bytes() == before["insights/forget-ann.md"]


def test_stale_plans_are_refused_in_every_interleaving(small):
    """An external writer lands before apply or at any step of it: the plan is
    refused and the writer's bytes survive, every time."""
    rng = random.Random(20311201)
    store = Store(small, clock=Clock())
    steps = ["before", *APPLY_STEPS]
    for i in range(120):
        make = rng.choice([lambda: lifecycle.plan_archive(store, "people/ann.md"),
                           lambda: lifecycle.plan_retract(store, "people/ann.md", "I know Ann Lee")])
        plan = make()
        when = rng.choice(steps + ["never"])
        foreign = f"---\nid: people-ann\n---\nexternal edit {i}: Ann Lee moved.\n"

        def writer(step, when=when, foreign=foreign):
            if step == when:
                (small / "people/ann.md").write_text(foreign)

        if when == "before":
            writer("before")
        if when == "never":
            apply(store, plan)
            apply(store, lifecycle.plan_inverse(store, plan.op, plan.target, pref=plan.pref, counterpart=plan.superseded_by))
            continue
        with pytest.raises(StalePlan):
            apply(store, plan, fault=writer)
        assert (small / "people/ann.md").read_text() == foreign, when
        assert journal.pending(store) == []
        git(small, "checkout", "--", "people/ann.md")
        assert git(small, "status", "--porcelain", "--", "people") == "", when


def test_disk_full_during_write_keeps_the_original(small, monkeypatch):
    store = Store(small, clock=Clock())
    before = (small / "people/ann.md").read_bytes()
    plan = lifecycle.plan_archive(store, "people/ann.md")

    def full(_fd):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr("palinode_core.storage.textio.os.fsync", full)
    with pytest.raises(PalinodeError, match="No space left on device; nothing was changed"):
        apply(store, plan)
    monkeypatch.undo()
    assert (small / "people/ann.md").read_bytes() == before
    assert not list((small / "people").glob(".*.tmp"))
    assert git(small, "status", "--porcelain") == ""
    assert journal.pending(store) == []


def _cli_fails(root, *extra_env, env=None):
    before = {p: p.read_bytes() for p in root.rglob("*.md")}
    proc = subprocess.run([sys.executable, "-m", "palinode_core", "archive", str(root), "people/ann.md", "--yes"],
                          capture_output=True, text=True, env={**os.environ, **(env or {})})
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert {p: p.read_bytes() for p in root.rglob("*.md")} == before
    assert not (root / "people/ann-history.md").exists()
    return proc.stderr


def test_index_lock_held(small):
    (small / ".git/index.lock").write_text("")
    assert "index.lock" in _cli_fails(small)


def test_detached_head(small):
    git(small, "checkout", "-q", "--detach")
    assert "detached" in _cli_fails(small)


def test_merge_in_progress(small):
    git(small, "checkout", "-q", "-b", "other")
    (small / "people/bob.md").write_text("other side\n")
    git(small, "commit", "-qam", "other")
    git(small, "checkout", "-q", "main")
    (small / "people/bob.md").write_text("main side\n")
    git(small, "commit", "-qam", "main")
    subprocess.run(["git", "-C", str(small), "merge", "other"], capture_output=True)
    assert (small / ".git/MERGE_HEAD").exists()
    assert "merge is in progress" in _cli_fails(small)


def test_not_a_git_repository(tmp_path):
    root = tmp_path / "plain"
    (root / "people").mkdir(parents=True)
    (root / "people/ann.md").write_text(ANN)
    assert "not a git repository" in _cli_fails(root)


def test_no_git_identity(small, tmp_path):
    cfg = (small / ".git/config").read_text()
    (small / ".git/config").write_text(cfg.split("[user]")[0])
    env = {k: "" for k in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL")}
    env.update(HOME=str(tmp_path / "nohome"), GIT_CONFIG_GLOBAL=str(tmp_path / "none"), GIT_CONFIG_NOSYSTEM="1")
    for key in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        os.environ.pop(key, None)
    assert "no git identity" in _cli_fails(small, env=env)


def test_read_only_checkout():
    """As an unprivileged user on a checkout they cannot write."""
    setpriv = "/usr/bin/setpriv"
    if os.geteuid() != 0 or not os.path.exists(setpriv):
        pytest.skip("needs root and setpriv to drop privileges")
    # Its own world-readable root in /tmp: pytest's temp folder may sit under a
    # private directory the unprivileged user cannot enter, and its parents are not ours to chmod.
    base = Path(tempfile.mkdtemp(prefix="palinode-ro-", dir="/tmp"))
    opened = _traversable(Path(sys.prefix), Path(__file__).resolve().parents[2])
    try:
        os.chmod(base, 0o755)
        root = make_git_store(base / "store", {"people/ann.md": ANN})
        subprocess.run(["chmod", "-R", "a+rX,a-w", str(root)], check=True)
        env = {**os.environ, "HOME": "/tmp", "GIT_CONFIG_GLOBAL": "/dev/null"}
        proc = subprocess.run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m",
                               "palinode_core", "archive", str(root), "people/ann.md", "--yes"],
                              capture_output=True, text=True, env=env)
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert "read-only" in proc.stderr or "dubious ownership" in proc.stderr or "not a git repository" in proc.stderr
        assert (root / "people/ann.md").read_text() == ANN
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(base)], check=True)
        shutil.rmtree(base)
        for folder, mode in opened:
            os.chmod(folder, mode)


def _traversable(*paths: Path) -> list[tuple[Path, int]]:
    """Let others pass through (x only, never list) the folders above the
    checkout and its virtualenv that are ours and closed, as a clone in a
    private ``mktemp -d`` folder is; (folder, old mode) to put back."""
    opened = []
    for path in paths:
        for folder in [path, *path.parents]:
            st = folder.stat()
            if st.st_uid == os.geteuid() and not st.st_mode & 0o001 and folder not in {f for f, _m in opened}:
                opened.append((folder, st.st_mode & 0o7777))
                os.chmod(folder, (st.st_mode & 0o7777) | 0o001)
    return opened


def test_every_mutation_refuses_in_read_only_mode(small, monkeypatch):
    monkeypatch.setenv("PALINODE_AUDIT_READ_ONLY", "1")
    store = Store(small, clock=Clock())
    (small / "insights").mkdir()
    (small / "insights/forget-ann.md").write_text(palinode_file({"id": "f"}, "Please forget that I know Ann Lee."))
    git(small, "add", "-A")
    git(small, "commit", "-qm", "request")
    before = {p: p.read_bytes() for p in small.rglob("*") if p.is_file() and ".git" not in p.parts}
    head = git(small, "rev-parse", "HEAD")
    from palinode_core.errors import ReadOnlyError
    from palinode_core.forget.resolve import ForgetPlan, Request, Resolution
    request = Request("insights/forget-ann.md", "I know Ann Lee", store.load("insights/forget-ann.md"))
    empty = ForgetPlan(request, store.config.forget, (), Resolution(request, (), 10, "lexical", None, None, ()))
    mutations = [
        lambda: apply(store, lifecycle.plan_archive(store, "people/ann.md")),
        lambda: apply(store, lifecycle.plan_retract(store, "people/ann.md", "I know Ann Lee")),
        lambda: review.apply_forget(store, empty),
        lambda: review.dismiss(store, "insights/forget-ann.md", "no"),
        lambda: review.flag(store, "people/ann.md", 1, "live", "x", "note"),
        lambda: ledger.record(store, {"action": "note"}),
        lambda: withdraw.apply_withdraw(store, Session(store).plan_withdraw("insights/forget-ann.md")),
        lambda: recover.recover(store, "complete"),
    ]
    for mutate in mutations:
        with pytest.raises(ReadOnlyError):
            mutate()
    for cmd in (["archive", "people/ann.md", "--yes"], ["restore", "people/ann.md", "--yes"],
                ["retract", "people/ann.md", "--pref", "I know Ann Lee", "--yes"],
                ["unretract", "people/ann.md", "--pref", "I know Ann Lee", "--yes"],
                ["dismiss", "insights/forget-ann.md", "--note", "x", "--yes"],
                ["withdraw", "insights/forget-ann.md", "--yes"],
                ["apply", "insights/forget-ann.md", "--lexical", "--yes"], ["recover", "--complete", "--yes"]):
        proc = subprocess.run([sys.executable, "-m", "palinode_core", cmd[0], str(small), *cmd[1:]],
                              capture_output=True, text=True)
        assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, (cmd, proc.stderr)
    after = {p: p.read_bytes() for p in small.rglob("*") if p.is_file() and ".git" not in p.parts}
    assert after == before and git(small, "rev-parse", "HEAD") == head
