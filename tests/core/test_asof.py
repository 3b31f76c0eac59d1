"""The store as of a commit or a date, read from git objects: it matches
``git show REV:PATH`` for every memory, never touches the worktree or the
index, and refuses every mutation. Plus a memory's timeline, the diff between
two points, and integrity over the whole history."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import git

from palinode_core.demo import build_demo_store
from palinode_core.errors import PalinodeError, ReadOnlyError
from palinode_core.forget.selection import APPROVE_ALL
from palinode_core.session import Session
from palinode_core.storage.snapshot import is_memory_path


@pytest.fixture
def demo(tmp_path):
    root = tmp_path / "demo"
    build_demo_store(root)
    return root


def run_cli(*args: str, ok: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "palinode_core", *args], capture_output=True, text=True)
    if ok:
        assert proc.returncode == 0, proc.stderr
    return proc


def fingerprint_worktree(root: Path) -> dict[str, tuple[bytes, int]]:
    """Bytes and mtime of every worktree file and of .git/index and HEAD."""
    seen = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(".git/") and rel not in (".git/index", ".git/HEAD"):
            continue
        if path.is_file():
            seen[rel] = (path.read_bytes(), path.stat().st_mtime_ns)
    return seen


def memory_paths(root: Path, rev: str) -> set[str]:
    listed = git(root, "ls-tree", "-r", "-z", "--name-only", rev).split("\0")
    return {p for p in listed if p and is_memory_path(p)}


def test_state_as_of_every_commit_and_date_matches_git_show_and_touches_nothing(demo):
    before = fingerprint_worktree(demo)
    log = [line.split(" ") for line in git(demo, "log", "--format=%H %cI").splitlines()]
    assert len(log) > 30
    checked = 0
    verified: dict[str, dict[str, bytes]] = {}
    for sha, when in log:
        for session in (Session.open_as_of(demo, at=sha), Session.open_as_of(demo, date=when)):
            point = session.as_of
            assert point is not None
            # a date resolves to the last commit at or before it, as git itself says
            expected = git(demo, "rev-list", "-1", f"--before={when}", "HEAD").strip() if point.asked.startswith(
                "--as-of") else sha
            assert point.commit == expected
            scan = session.scanned()
            state = {rel: m.text.encode("utf-8") for rel, m in {**scan.memories, **scan.history}.items()}
            assert set(state) == memory_paths(demo, point.commit)
            if point.commit in verified:  # a date that resolved to a commit already compared file by file
                assert state == verified[point.commit]
            else:
                for rel, data in state.items():
                    blob = subprocess.run(["git", "-C", str(demo), "show", f"{point.commit}:{rel}"],
                                          capture_output=True, check=True).stdout
                    assert data == blob, (point.commit, rel)
                    checked += 1
                verified[point.commit] = state
            session.close()
    assert checked > 400 and len(verified) == len(log)
    # whole days: the end of that day, UTC
    for day in sorted({when[:10] for _, when in log}):
        session = Session.open_as_of(demo, date=day)
        assert session.as_of.commit == git(demo, "rev-list", "-1", f"--before={day}T23:59:59+00:00", "HEAD").strip()
        session.close()
    assert fingerprint_worktree(demo) == before


def test_history_shows_what_was_true_then(demo):
    subjects = git(demo, "log", "--format=%H %s").splitlines()
    withdraw_restore = next(line.split(" ")[0] for line in subjects if "restore: insights/pref-gym.md" in line)
    then = Session.open_as_of(demo, at=withdraw_restore + "^")
    states = {s.path: s.state for s in then.request_states()}
    assert states["insights/forget-gym.md"] == "applied"
    assert then.memories["insights/pref-gym.md"].archived
    assert then.trace("insights/pref-gym.md").retired_by.request == "insights/forget-gym.md"
    # the ledger is read from that commit too: the withdrawal was not recorded yet
    assert all(s.last_decision is None for s in then.request_states())
    now = Session.open(demo, vectors=False)
    assert {s.path: s.state for s in now.request_states()}["insights/forget-gym.md"] == "withdrawn"
    assert not now.memories["insights/pref-gym.md"].archived
    # a trace's commits stop at the point shown
    shown = [c.sha for c in then.trace("insights/pref-gym.md").commits]
    assert withdraw_restore not in shown and len(shown) == 2


def test_every_mutation_is_refused_as_of(demo):
    head = git(demo, "rev-parse", "HEAD")
    session = Session.open_as_of(demo, date="2025-05-13")
    live = Session.open(demo, vectors=False)
    live.update_index(vectors=False)
    fplan = live.plan("insights/forget-w.md")
    attempts = {
        "apply_forget": lambda: session.apply_forget(fplan, {fplan.targets[0].path: APPROVE_ALL}),
        "dismiss": lambda: session.dismiss("insights/forget-w.md", "no"),
        "flag": lambda: session.flag("people/wilhelmina-fair.md", 1, "live", "x", "note"),
        "plan": lambda: session.plan("insights/forget-w.md"),
        "search": lambda: session.update_index(vectors=False),
        "plan_op": lambda: session.plan_op("archive", "people/alice-chen.md"),
        "apply": lambda: session.apply(live.plan_op("archive", "people/alice-chen.md")),
        "withdraw": lambda: session.plan_withdraw("insights/forget-poker.md"),
        "recover": lambda: session.recover("rollback"),
    }
    for name, attempt in attempts.items():
        with pytest.raises(ReadOnlyError, match="as of --as-of 2025-05-13 = commit") as caught:
            attempt()
        assert "--as-of/--at" in str(caught.value), name
    with pytest.raises(ReadOnlyError, match="history cannot be changed"):
        session.store.check_writable()
    with pytest.raises(ReadOnlyError):
        session.store.git.commit(["x.md"], "x")
    assert session.read_only and session.interrupted() == []
    assert git(demo, "rev-parse", "HEAD") == head  # nothing was committed


def test_cli_as_of_flags_and_refusals(demo):
    # the commit that archived the gym preference (restored since)
    sha = git(demo, "log", "-1", "--format=%H", "--grep", "supersede: insights/pref-gym.md").strip()
    shown = json.loads(run_cli("--json", "show", str(demo), "insights/pref-gym.md", "--at", sha).stdout)
    assert shown["as_of"]["commit"] == sha and shown["status"] == "archived"
    assert shown["body"] in git(demo, "show", f"{sha}:insights/pref-gym.md")
    scan = json.loads(run_cli("--json", "scan", str(demo), "--as-of", "2025-04-01").stdout)
    assert scan["memories"] == 1 and scan["as_of"]["asked"] == "--as-of 2025-04-01"  # only alice by then
    for command in (["requests"], ["residue", "--pref", "my gym schedule"], ["trace", "insights/pref-gym.md"],
                    ["history", "insights/pref-gym.md"], ["integrity"]):
        out = json.loads(run_cli("--json", command[0], str(demo), *command[1:], "--at", sha).stdout)
        assert out["as_of"]["commit"] == sha, command
    # people reading the text output see which point of history it is
    text = run_cli("requests", str(demo), "--at", sha).stdout
    assert text.splitlines()[0] == f"as of --at {sha}: commit {sha[:10]} of {shown['as_of']['date']} (history, read-only)"
    early = run_cli("scan", str(demo), "--as-of", "2020-01-01", ok=False)
    assert early.returncode == 1 and "no commit at or before 2020-01-01T23:59:59+00:00" in early.stderr
    for bad in ("--output=/tmp/x", "no-such-branch", "HEAD~999"):
        proc = run_cli("show", str(demo), "people/alice-chen.md", f"--at={bad}", ok=False)
        assert proc.returncode == 1 and ("not a revision" in proc.stderr or "no commit" in proc.stderr), bad
    proc = run_cli("scan", str(demo), "--as-of", "last tuesday", ok=False)
    assert proc.returncode == 1 and "cannot read the date" in proc.stderr
    proc = run_cli("scan", str(demo), "--as-of", "2025-05-01", "--at", "HEAD", ok=False)
    assert proc.returncode == 2  # argparse: the two are exclusive
    # a zone is honoured: 2025-05-12T19:00Z is 21:00 in +02:00
    at_zone = json.loads(run_cli("--json", "scan", str(demo), "--as-of", "2025-05-12T20:59:00+02:00").stdout)
    assert at_zone["as_of"]["date"] < "2025-05-12T19:00:00+00:00"


def test_timeline_names_operations_and_diff_between_points(demo):
    out = json.loads(run_cli("--json", "timeline", str(demo), "insights/pref-gym.md").stdout)
    points = out["points"]
    assert [p["op"] for p in points] == [None, "supersede", "restore"]
    assert [p["actor"] for p in points] == ["palinode", "palinode", "palinode-audit"]
    assert [p["status"] for p in points] == ["active", "archived", "active"]
    assert points[1]["counterpart"] == "insights/forget-gym.md"
    diff = json.loads(run_cli("--json", "diff", str(demo), "insights/pref-gym.md", "--from", points[0]["commit"],
                              "--to", points[1]["commit"]).stdout)
    assert "+status: archived" in diff["diff"] and "+superseded_by: insights/forget-gym.md" in diff["diff"]
    assert "insights/pref-gym-history.md" in diff["diff"]
    struck = json.loads(run_cli("--json", "timeline", str(demo), "projects/weekly-plan.md").stdout)["points"]
    assert struck[-1]["op"] == "retract" and struck[-1]["markers"] == 1
    assert struck[-1]["retracted_prefs"] == ["i play poker on fridays"]
    missing = run_cli("timeline", str(demo), "people/nobody.md", ok=False)
    assert missing.returncode == 1 and "no commit ever changed people/nobody.md" in missing.stderr


def _commit_as(root: Path, message: str, name: str, when: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": "hand@example.test",
           "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    subprocess.run(["git", "-C", str(root), "commit", "-qam", message], check=True, env=env)
    return git(root, "rev-parse", "HEAD").strip()


def test_integrity_history_names_hand_edits_that_broke_a_chain(demo):
    clean = json.loads(run_cli("--json", "integrity", str(demo), "--history").stdout)
    assert clean["ok"] and clean["history"]["ok"] and clean["history"]["breaks"] == []
    [marker] = clean["history"]["markers"]
    assert marker["path"] == "projects/weekly-plan.md" and marker["record"] and marker["history_line"]
    assert marker["retract_commit"] and marker["op"] == "retract" and marker["actor"] == "palinode"
    # a hand edit drops the record: the chain breaks, and history names who and when
    plan = demo / "projects/weekly-plan.md"
    text = plan.read_text()
    plan.write_text(text.replace("retracted_prefs:\n- i play poker on fridays\n", ""))
    assert plan.read_text() != text
    broke = _commit_as(demo, "tidy frontmatter", "Mallory Hand", "2025-07-01T08:30:00+00:00")
    # another hand edit writes a marker with no record, history line or retract commit
    bob = demo / "people/bob-martinez.md"
    bob.write_text(bob.read_text().replace("Backend engineer.", "~~Backend engineer.~~ [RETRACTED 2025-07-02 r:deadbeef]."))
    forged = _commit_as(demo, "strike by hand", "Mallory Hand", "2025-07-02T09:00:00+00:00")
    proc = run_cli("--json", "integrity", str(demo), "--history", ok=False)
    out = json.loads(proc.stdout)
    assert proc.returncode == 1  # errors found
    history = out["history"]
    assert not out["ok"] and not history["ok"] and history["unsound_markers"] == 1
    forged_marker = next(m for m in history["markers"] if m["rid"] == "deadbeef")
    assert forged_marker["commit"] == forged and not forged_marker["record"] and not forged_marker["retract_commit"]
    text = run_cli("integrity", str(demo), "--history", ok=False).stdout
    assert "1 without record, history line or retract commit" in text and "Mallory Hand  hand edit" in text
    broken = {(b["path"], b["kind"]): b for b in history["open"]}
    dropped = broken[("projects/weekly-plan.md", "marker_without_record")]
    assert dropped["commit"] == broke and dropped["author"] == "Mallory Hand" and dropped["hand_edit"]
    assert dropped["date"] == "2025-07-01T08:30:00+00:00" and dropped["subject"] == "tidy frontmatter"
    assert broken[("people/bob-martinez.md", "marker_without_record")]["commit"] == forged
    # as of before the hand edits, history was sound
    then = json.loads(run_cli("--json", "integrity", str(demo), "--history", "--at", broke + "^").stdout)
    assert then["ok"] and then["history"]["commits_walked"] == clean["history"]["commits_walked"]
    with pytest.raises(PalinodeError):
        Session.open_as_of(demo)


def test_hostile_history_is_reported_never_followed(tmp_path):
    """Links, binary and broken files committed to history are scan errors of
    that point; a link is never followed out of the store."""
    from helpers import make_git_store, palinode_file
    secret = tmp_path / "secret.md"
    secret.write_text("---\ncategory: x\n---\n\nOUTSIDE SECRET\n")
    root = make_git_store(tmp_path / "store", {
        "people/ok.md": palinode_file({"category": "people"}, "Fine memory."),
        "people/binary.md": "---\ncategory: people\n---\n\nnul \x00 byte\n",
        "people/bad-yaml.md": "---\nkey: [unclosed\n---\n\nbody\n",
        ".hidden/secret.md": palinode_file({}, "dot folder: never a memory"),
        "logs/run.md": palinode_file({}, "skipped folder"),
    })
    (root / "people/link.md").symlink_to(secret)
    git(root, "add", "people/link.md")
    git(root, "commit", "-qm", "a link")
    session = Session.open_as_of(root, at="HEAD")
    scan = session.scanned()
    assert set(scan.memories) == {"people/ok.md"}
    errors = {e.path: e.reason for e in scan.errors}
    assert set(errors) == {"people/binary.md", "people/bad-yaml.md", "people/link.md"}
    assert "symlink" in errors["people/link.md"] and "NUL" in errors["people/binary.md"]
    with pytest.raises(PalinodeError, match="symlink"):
        session.store.read_optional("people/link.md")  # as the live store refuses an unusable file
    assert session.store.read_text("people/link.md") is None
    with pytest.raises(PalinodeError, match="symlink"):
        session.load("people/link.md")
    for bad in ("../secret.md", "/etc/passwd", "people/\x00.md"):
        with pytest.raises(PalinodeError):
            session.load(bad)
    assert all("OUTSIDE SECRET" not in m.text for m in scan.memories.values())


def test_a_scan_as_of_a_commit_reuses_what_any_earlier_one_parsed(demo, tmp_path):
    """Summaries of history are kept by (path, blob id), which is their
    content: a second scan at that commit, or at another sharing most files,
    parses nothing again and says exactly what a scan with no cache says."""
    from palinode_core.storage.snapshot import SnapshotStore

    cache = tmp_path / "cache"
    older, newer = git(demo, "rev-parse", "HEAD~6").strip(), git(demo, "rev-parse", "HEAD~2").strip()
    truth = {}
    for rev in (older, newer):
        bare = SnapshotStore.open(demo, at=rev)
        bare._summaries = None  # no cache at all: every blob parsed
        truth[rev] = bare.scan()
        bare.close()
    first = Session.open_as_of(demo, at=older, cache_dir=cache)
    assert {r: m.summary for r, m in first.rescan().memories.items()} == {
        r: m.summary for r, m in truth[older].memories.items()}
    first.close()
    for rev in (older, newer):
        again = Session.open_as_of(demo, at=rev, cache_dir=cache)
        scan = again.rescan()
        changed = {r for r, m in truth[rev].memories.items() if r not in truth[older].memories
                   or truth[older].memories[r].fingerprint != m.fingerprint}
        assert {r for r, m in scan.memories.items() if m.text_read} == changed  # only new blobs were parsed
        assert {r: (m.summary, m.fingerprint) for r, m in scan.memories.items()} == {
            r: (m.summary, m.fingerprint) for r, m in truth[rev].memories.items()}
        rel = next(iter(sorted(scan.memories)))
        assert scan.memories[rel].text == truth[rev].memories[rel].text  # read from its blob on first use
        again.close()


def test_scan_at_a_commit_with_a_cache_folder_of_its_own(demo, tmp_path):
    proc = run_cli("--json", "scan", str(demo), "--at", "HEAD~2", "--cache-dir", str(tmp_path / "cache"))
    assert json.loads(proc.stdout)["memories"] > 0
    assert (tmp_path / "cache" / "scan.sqlite3").is_file()  # history's summaries kept where it was told


def test_a_date_past_what_git_reads_means_every_commit():
    from palinode_core.storage.snapshot import date_bound

    assert date_bound("9999-12-31") == date_bound("2999-12-31") == "2099-12-31T23:59:59+00:00"
    assert date_bound("2025-05-12") == "2025-05-12T23:59:59+00:00"
