"""A file name that is not UTF-8 (legal on Linux, cloned as is) is one
unreadable entry naming the file, never a store that stops working once the
scan cache would keep it (issue 24, finding 6)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from helpers import make_git_store, palinode_file


def test_a_non_utf8_name_is_one_entry_and_the_store_keeps_working(tmp_path):
    root = make_git_store(tmp_path / "s", {
        "notes/ok.md": palinode_file({"id": "ok"}, "I keep bees in the garden."),
        "insights/forget-bees.md": palinode_file({"id": "f", "created_at": "2025-05-20T10:00:00+00:00"},
                                                 "Please forget that I keep bees."),
    })
    with open(os.path.join(os.fsencode(root), b"notes", b"bad\xff.md"), "wb") as f:
        f.write(palinode_file({"id": "bad"}, "I keep bees.").encode())
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}

    def audit(*args: str) -> dict:
        proc = subprocess.run([sys.executable, "-m", "palinode_core", "--json", *args], capture_output=True,
                              text=True, env=env)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    for _ in range(2):  # the second round runs once the file is old enough for the scan cache to keep
        scan = audit("scan", str(root))
        assert [(e["path"], "UTF-8" in e["reason"]) for e in scan["errors"]] == [("notes/bad\\xff.md", True)]
        assert scan["memories"] == 2
        assert [r["state"] for r in audit("requests", str(root))["requests"]] == ["pending"]
        plan = audit("plan", str(root), "insights/forget-bees.md", "--lexical")
        assert "notes/ok.md" in {c["path"] for c in plan["candidates"]}
        time.sleep(2.2)


def test_diff_of_a_version_over_the_memory_limit_is_refused_not_printed(tmp_path):
    """Issue 24, 8b: `diff` printed a 50 MB version whole (show and trace refuse it)."""
    from helpers import git

    root = make_git_store(tmp_path / "s", {"notes/a.md": palinode_file({"id": "a"}, "small")})
    (root / "notes/a.md").write_text(palinode_file({"id": "a"}, "x" * (9 << 20)))
    git(root, "commit", "-qam", "big")
    proc = subprocess.run([sys.executable, "-m", "palinode_core", "diff", str(root), "notes/a.md", "--from", "HEAD~1"],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and proc.stdout == "" and "over the" in proc.stderr and proc.stderr.count("\n") == 1


def test_an_unborn_head_says_to_make_the_first_commit(tmp_path):
    """Issue 24, 8: on a repository with no commit, archive said 'commit or stash your edits'."""
    root = tmp_path / "s"
    (root / "notes").mkdir(parents=True)
    (root / "notes/a.md").write_text(palinode_file({"id": "a"}, "Ann likes tea."))
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    proc = subprocess.run([sys.executable, "-m", "palinode_core", "archive", str(root), "notes/a.md", "--yes"],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and "no commit yet" in proc.stderr and proc.stderr.count("\n") == 1


def test_an_untracked_non_utf8_name_stops_no_plan_on_the_demo_store(tmp_path):
    """Issue 24, finding 8b: one untracked file named ``notes/bad\\xe9.md`` made ``plan`` fail for
    every request ("can't encode '\\udce9'") while ``scan`` reported no error."""
    from palinode_core.demo import build_demo_store

    root = tmp_path / "demo"
    build_demo_store(root)
    os.mkdir(os.path.join(os.fsencode(root), b"notes"))
    with open(os.path.join(os.fsencode(root), b"notes", b"bad\xe9.md"), "wb") as f:
        f.write(palinode_file({"id": "bad"}, "I live in Berlin.").encode())
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}

    def audit(*args: str) -> dict:
        proc = subprocess.run([sys.executable, "-m", "palinode_core", "--json", args[0], str(root), *args[1:]],
                              capture_output=True, text=True, env=env)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, (args, proc.stderr)
        return json.loads(proc.stdout)

    for _ in range(2):  # again once the file is old enough for the scan cache to keep
        requests = [r["path"] for r in audit("requests")["requests"]]
        assert "insights/forget-berlin.md" in requests
        for request in requests:
            assert audit("plan", request, "--lexical")["request"] == request
        assert [(e["path"], "UTF-8" in e["reason"]) for e in audit("scan")["errors"]] == [("notes/bad\\xe9.md", True)]
        time.sleep(2.2)
    assert b"bad\xe9.md" in os.listdir(os.path.join(os.fsencode(root), b"notes")), "the file is left as it was"


def test_what_head_holds_is_read_for_any_name_in_one_process(tmp_path):
    """After a commit an apply reads back what HEAD holds, every file in one
    `cat-file --batch-check -z`: a name with a newline, a space or a colon,
    a folder and a missing file each get their own answer, and the content is
    compared by git's object id of its bytes."""
    from palinode_core.storage.gitstore import GitStore

    odd = ["notes/two\nlines.md", "notes/a b: c.md", "notes/plain.md"]
    root = make_git_store(tmp_path / "s", {rel: f"text of {rel}\n" for rel in odd})
    ran: list[str] = []
    store_git = GitStore(root, on_command=ran.append)
    head = store_git.head_objects([*odd, "notes/missing.md", "notes"])
    assert ran == ["git cat-file --batch-check -z"]
    expected = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    assert head.commit == expected.strip()
    for rel in odd:
        assert head.holds(rel, f"text of {rel}\n") and not head.holds(rel, f"text of {rel}")
    assert head.blobs["notes/missing.md"] is None and head.blobs["notes"] is None  # absent; a folder is no file
    assert head.holds("notes/missing.md", None) and not head.holds("notes/plain.md", None)
    assert not head.holds("notes/plain.md", "\udcff") and not head.holds("notes/plain.md", "\ud800")
