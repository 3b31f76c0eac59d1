"""Team review over a git remote (issue 25): decisions recorded in different
clones merge without a conflict, whatever the order of pulls and pushes, and a
merge neither loses nor duplicates one. Real bare remote, real clones, the real
CLI writing the decisions."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from helpers import git, make_git_store, palinode_file

FILES = {
    "insights/pref-tea.md": palinode_file({"id": "pref-tea", "created_at": "2025-05-01T10:00:00+00:00"},
                                          "I drink oolong tea every morning."),
    "insights/pref-bees.md": palinode_file({"id": "pref-bees", "created_at": "2025-05-01T10:00:00+00:00"},
                                           "I keep bees in the back garden."),
    "insights/pref-chess.md": palinode_file({"id": "pref-chess", "created_at": "2025-05-01T10:00:00+00:00"},
                                            "I play chess on Sundays."),
    "insights/forget-tea.md": palinode_file({"id": "forget-tea", "created_at": "2025-05-20T10:00:00+00:00"},
                                            "Please forget that I drink oolong tea."),
    "insights/forget-bees.md": palinode_file({"id": "forget-bees", "created_at": "2025-05-20T10:00:00+00:00"},
                                             "Please forget that I keep bees."),
    "insights/forget-chess.md": palinode_file({"id": "forget-chess", "created_at": "2025-05-20T10:00:00+00:00"},
                                              "Please forget that I play chess."),
}


# Each reviewer commits as their clone's own git identity, not the suite's.
def reviewer_env() -> dict[str, str]:
    """The environment as the test has it (its private XDG cache included), without the fixed git identity."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("GIT_AUTHOR_", "GIT_COMMITTER_"))}


def audit(clone, *args: str) -> dict:
    proc = subprocess.run([sys.executable, "-m", "palinode_core", "--json", args[0], str(clone), *args[1:]],
                          capture_output=True, text=True, env=reviewer_env())
    data = json.loads(proc.stdout)
    found_errors = args[0] == "integrity" and data["ok"] is False  # exits 1, as git fsck does
    assert proc.returncode == (1 if found_errors else 0), proc.stderr
    return data


@pytest.fixture
def team(tmp_path):
    origin = make_git_store(tmp_path / "origin-work", FILES)
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(origin), str(bare)], check=True)
    clones = []
    for name in ("a", "b", "c"):
        clone = tmp_path / name
        subprocess.run(["git", "clone", "-q", str(bare), str(clone)], check=True)
        git(clone, "config", "user.name", name.upper())
        git(clone, "config", "user.email", f"{name}@example.org")
        clones.append(clone)
    return clones


def sync(clone, how: str) -> None:
    git(clone, "pull", "-q", "--no-edit", "--rebase" if how == "rebase" else "--no-rebase")
    git(clone, "push", "-q")


@pytest.mark.parametrize("how", ["merge", "rebase"])
@pytest.mark.parametrize("order", ["abc", "acb", "bac", "bca", "cab", "cba"])
def test_three_reviewers_decisions_merge_exactly_once(team, how, order):
    a, b, c = team
    audit(a, "apply", "insights/forget-tea.md", "--lexical", "--yes")
    audit(b, "apply", "insights/forget-bees.md", "--lexical", "--yes")
    audit(c, "dismiss", "insights/forget-chess.md", "--note", "kept on purpose", "--yes")
    by_name = {"a": a, "b": b, "c": c}
    for name in order:  # each pulls what the others pushed, then pushes
        sync(by_name[name], how)
    for clone in (a, b, c):
        git(clone, "pull", "-q", "--no-edit", "--rebase" if how == "rebase" else "--no-rebase")
    for clone in (a, b, c):
        ledger = (clone / ".palinode-audit/ledger.jsonl").read_text()
        assert "<<<<<<<" not in ledger
        decisions = [(e["action"], e["request"]) for e in map(json.loads, ledger.splitlines())
                     if e.get("action") in ("apply", "dismiss")]
        assert sorted(decisions) == [("apply", "insights/forget-bees.md"), ("apply", "insights/forget-tea.md"),
                                     ("dismiss", "insights/forget-chess.md")]
        states = {r["path"]: r["state"] for r in audit(clone, "requests")["requests"]}
        assert states == {"insights/forget-tea.md": "applied", "insights/forget-bees.md": "applied",
                          "insights/forget-chess.md": "dismissed"}
        assert audit(clone, "integrity")["problems"] == []
    # an operation A made is undone in B, exactly, from B's own history
    ops = [o for o in audit(b, "operations")["operations"] if o["path"] == "insights/pref-tea.md"]
    assert len(ops) == 1 and ops[0]["op"] == "supersede"  # archived as superseded by the request
    undone = audit(b, "undo", ops[0]["commit"], "--yes")
    assert "status: archived" not in (b / "insights/pref-tea.md").read_text(), undone
    assert audit(b, "integrity")["problems"] == []
    assert {r["path"]: r["state"] for r in audit(b, "requests")["requests"]}["insights/forget-tea.md"] == "pending"


@pytest.mark.parametrize("how", ["merge", "rebase"])
def test_the_same_request_applied_in_two_clones_is_one_application(team, how):
    a, b, _c = team
    audit(a, "apply", "insights/forget-tea.md", "--lexical", "--yes")
    audit(b, "apply", "insights/forget-tea.md", "--lexical", "--yes")
    sync(a, how)
    sync(b, how)
    git(a, "pull", "-q", "--no-edit", "--rebase" if how == "rebase" else "--no-rebase")
    for clone in (a, b):
        text = (clone / "insights/pref-tea.md").read_text()
        assert text.count("status: archived") == 1 and "<<<<<<<" not in text
        states = {r["path"]: r["state"] for r in audit(clone, "requests")["requests"]}
        assert states["insights/forget-tea.md"] == "applied"
        assert audit(clone, "integrity")["problems"] == []
        report = audit(clone, "report", "--request", "insights/forget-tea.md")["requests"][0]
        applications = [o for o in report["operations"] if "same_as" not in o]
        assert len(applications) == 1 and applications[0]["path"] == "insights/pref-tea.md", report["operations"]
        applies = [d for d in report["decisions"] if d["action"] == "apply"]
        assert {d["by"] for d in applies} == {"A <a@example.org>", "B <b@example.org>"}, "both decisions kept"
        assert sum("same_application_as" not in d for d in applies) == 1, "one application"
        assert audit(clone, "integrity", "--history")["history"]["ok"]


def run_audit(clone, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "palinode_core", "--json", args[0], str(clone), *args[1:]],
                          capture_output=True, text=True, env=reviewer_env())


@pytest.mark.parametrize("how", ["--merge", "--rebase"])
def test_sync_brings_clones_together_and_checks_them_again(team, how):
    a, b, _c = team
    audit(a, "apply", "insights/forget-tea.md", "--lexical", "--yes")
    audit(b, "dismiss", "insights/forget-chess.md", "--note", "kept", "--yes")
    first = audit(a, "sync", how, "--yes")
    assert first["synced"] and first["pushed"] and first["problems"] == []
    second = audit(b, "sync", how, "--yes")
    states = {s["path"]: s["state"] for s in second["states"]}
    assert states["insights/forget-tea.md"] == "applied" and states["insights/forget-chess.md"] == "dismissed"
    assert second["pushed"] and second["problems"] == []
    third = audit(a, "sync", how, "--yes")
    assert {s["path"]: s["state"] for s in third["states"]} == states


def test_sync_refuses_with_one_line_and_fetches_nothing(team):
    a, b, _c = team
    audit(b, "apply", "insights/forget-bees.md", "--lexical", "--yes")
    git(b, "push", "-q")
    (a / "insights/pref-tea.md").write_text("an edit of my own\n")
    head = git(a, "rev-parse", "HEAD")
    for args in (("sync", "--yes"), ("sync",)):
        proc = run_audit(a, *args)
        assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "uncommitted changes" in proc.stderr
    assert git(a, "rev-parse", "HEAD") == head
    assert git(a, "rev-parse", "--verify", "-q", "refs/remotes/origin/main", ) == git(a, "rev-parse", "HEAD")


def test_a_conflict_in_memories_is_named_and_left_as_git_left_it(team):
    a, b, _c = team
    for clone, text in ((a, "I drink green tea.\n"), (b, "I drink black tea.\n")):
        (clone / "insights/pref-tea.md").write_text(palinode_file({"id": "pref-tea"}, text))
        git(clone, "commit", "-qam", "an edit")
    git(a, "push", "-q")
    proc = run_audit(b, "sync", "--yes")
    assert proc.returncode == 1 and "conflict in insights/pref-tea.md" in proc.stderr
    assert (b / ".git/MERGE_HEAD").exists()  # left for the person: nothing resolved silently
    again = run_audit(b, "sync", "--yes")
    assert again.returncode == 1 and "in progress" in again.stderr


def test_sync_runs_no_hook_the_store_or_remote_names(team, tmp_path):
    a, b, _c = team
    marker = tmp_path / "ran"
    # the remote's history names a filter for every file (committed before any hook exists)
    (b / ".gitattributes").write_text("* filter=evil\n")
    git(b, "add", ".gitattributes")
    git(b, "commit", "-qm", "attributes")
    for clone in (a, b):
        for name in ("post-merge", "pre-push", "post-checkout", "reference-transaction", "post-rewrite"):
            hook = clone / ".git/hooks" / name
            hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
            hook.chmod(0o755)
        # a store's own config naming programs for the transport: never run by sync
        git(clone, "config", "remote.origin.uploadpack", f"touch {marker}; git-upload-pack")
        git(clone, "config", "remote.origin.receivepack", f"touch {marker}; git-receive-pack")
    # ... and the clone's own config defines it
    git(a, "config", "filter.evil.smudge", f"sh -c 'touch {marker}; cat'")
    git(a, "config", "filter.evil.clean", f"sh -c 'touch {marker}; cat'")
    audit(b, "dismiss", "insights/forget-chess.md", "--note", "kept", "--yes")
    audit(b, "sync", "--yes")
    audit(a, "sync", "--yes")
    audit(a, "sync", "--rebase", "--yes")
    assert not marker.exists()
    assert "insights/forget-chess.md" in (a / ".palinode-audit/ledger.jsonl").read_text()


def test_an_undo_still_names_its_operation_after_a_rebase_rewrote_both(team):
    a, b, _c = team
    audit(b, "apply", "insights/forget-tea.md", "--lexical", "--yes")
    op = next(o for o in audit(b, "operations")["operations"] if o["path"] == "insights/pref-tea.md")
    audit(b, "undo", op["commit"], "--yes")
    audit(a, "apply", "insights/forget-bees.md", "--lexical", "--yes")
    sync(a, "merge")
    sync(b, "rebase")  # B's apply and undo are replayed on A's work: new shas for both
    ops = [o for o in audit(b, "operations")["operations"] if o["path"] == "insights/pref-tea.md"]
    original = next(o for o in ops if o["op"] == "supersede")
    assert original["commit"] != op["commit"], "the rebase rewrote the operation"
    assert original["undone_by"], "the undo still names it, by its Operation-Id"
    assert git(b, "log", "-1", "--format=%(trailers:key=Undoes-Operation,valueonly)", original["undone_by"]).strip() \
        == git(b, "log", "-1", "--format=%(trailers:key=Operation-Id,valueonly)", original["commit"]).strip()
    states = {r["path"]: r["state"] for r in audit(b, "requests")["requests"]}
    assert states["insights/forget-tea.md"] == "pending" and states["insights/forget-bees.md"] == "applied"
    redone = audit(b, "redo", original["commit"], "--yes")
    assert "status: archived" in (b / "insights/pref-tea.md").read_text(), redone
    assert audit(b, "integrity")["problems"] == []


def test_every_decision_names_who_made_it(team):
    a, b, c = team
    audit(a, "apply", "insights/forget-tea.md", "--lexical", "--yes")
    audit(c, "dismiss", "insights/forget-chess.md", "--note", "kept on purpose", "--yes")
    for clone in (a, c, a):
        sync(clone, "merge")
    entries = [json.loads(line) for line in (a / ".palinode-audit/ledger.jsonl").read_text().splitlines()]
    by = {(e["action"], e["request"]): e["decided_by"] for e in entries}
    assert by[("apply", "insights/forget-tea.md")] == "A <a@example.org>"
    assert by[("dismiss", "insights/forget-chess.md")] == "C <c@example.org>"
    assert all(e["v"] == 1 for e in entries)
    report = audit(a, "report", "--since", "2000-01-01")
    decisions = {(d["action"], r["path"]): d["by"] for r in report["requests"] for d in r["decisions"]}
    assert decisions[("dismiss", "insights/forget-chess.md")] == "C <c@example.org>"


def commit_ledger_line(clone, entry: dict, subject: str, trailers: str = "") -> None:
    with (clone / ".palinode-audit/ledger.jsonl").open("a") as fh:
        fh.write(json.dumps(entry, sort_keys=True) + "\n")
    git(clone, "add", ".palinode-audit/ledger.jsonl")
    git(clone, "commit", "-qm", subject + (f"\n\n{trailers}" if trailers else ""))


@pytest.mark.parametrize("forgery", ["plain commit", "other request", "other decider", "no such commit"])
def test_a_pulled_record_history_does_not_back_is_reported_and_not_believed(team, forgery):
    a, b, _c = team
    audit(a, "apply", "insights/forget-bees.md", "--lexical", "--yes")  # a real decision, believed
    dismiss = {"action": "dismiss", "at": "2025-06-01T00:00:00+00:00", "note": "nobody said so",
               "request": "insights/forget-tea.md", "v": 1}
    if forgery == "plain commit":
        commit_ledger_line(a, dismiss, "tidy notes")
    elif forgery == "other request":
        commit_ledger_line(a, dismiss, "palinode-audit ledger: dismiss insights/forget-chess.md",
                           "Forget-Request: insights/forget-chess.md")
    elif forgery == "other decider":
        commit_ledger_line(a, {**dismiss, "decided_by": "Boss <boss@example.org>"},
                           "palinode-audit ledger: dismiss insights/forget-tea.md",
                           "Forget-Request: insights/forget-tea.md")
    else:
        apply = {"action": "apply", "at": "2025-06-01T00:00:00+00:00", "request": "insights/forget-tea.md",
                 "approved": [{"commit": "0" * 40, "op_id": "forget-000000000000.0", "path": "insights/pref-tea.md",
                               "route": "archive"}], "v": 1}
        commit_ledger_line(a, apply, "palinode-audit ledger: apply insights/forget-tea.md",
                           "Forget-Request: insights/forget-tea.md")
    sync(a, "merge")
    sync(b, "merge")
    problems = audit(b, "integrity")["problems"]
    assert [p["kind"] for p in problems] == ["ledger_unbacked"], problems
    assert "forget-tea.md" in problems[0]["detail"] and "not believed" in problems[0]["detail"]
    states = {r["path"]: r["state"] for r in audit(b, "requests")["requests"]}
    assert states["insights/forget-tea.md"] == "pending", "a forged decision decides nothing"
    assert states["insights/forget-bees.md"] == "applied"


def test_a_request_dismissed_in_another_clone_says_who_before_an_apply(team):
    a, _b, c = team
    audit(c, "dismiss", "insights/forget-tea.md", "--note", "the tea is work-related", "--yes")
    sync(c, "merge")
    sync(a, "merge")
    refused = run_audit(a, "apply", "insights/forget-tea.md", "--lexical", "--yes")
    assert refused.returncode != 0 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "dismissed by C <c@example.org>" in refused.stderr and "work-related" in refused.stderr
    assert "status: archived" not in (a / "insights/pref-tea.md").read_text()
    audit(a, "apply", "insights/forget-tea.md", "--lexical", "--yes", "--reopen")
    assert "status: archived" in (a / "insights/pref-tea.md").read_text()
    again = run_audit(a, "apply", "insights/forget-tea.md", "--lexical", "--yes")
    assert "already applied by A <a@example.org>" in again.stderr


@pytest.mark.parametrize("how", ["merge", "rebase"])
def test_history_credits_a_merged_strike_to_its_retract_commit(tmp_path, how):
    from palinode_core.demo import build_demo_store

    origin = tmp_path / "origin"
    build_demo_store(origin)
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(origin), str(bare)], check=True)
    a, b = tmp_path / "a", tmp_path / "b"
    for clone in (a, b):
        subprocess.run(["git", "clone", "-q", str(bare), str(clone)], check=True)
        git(clone, "config", "user.name", clone.name.upper())
        git(clone, "config", "user.email", f"{clone.name}@example.org")
    audit(a, "apply", "insights/forget-berlin.md", "--lexical", "--yes")  # a strike in people/me-profile.md
    audit(b, "apply", "insights/forget-sneakers.md", "--lexical", "--yes")
    audit(a, "sync", f"--{how}", "--yes")
    audit(b, "sync", f"--{how}", "--yes")
    history = audit(b, "integrity", "--history")["history"]
    berlin = [m for m in history["markers"] if m["path"] == "people/me-profile.md" and m["author"] == "A"]
    assert len(berlin) == 1 and berlin[0]["retract_commit"] and berlin[0]["op"] == "retract", history["markers"]
    assert history["unsound_markers"] == 0 and history["ok"]


def test_every_read_says_when_git_is_mid_merge_with_unmerged_files(team):
    a, b, _c = team
    for clone, line in ((a, "I drink it with milk."), (b, "I drink it black.")):
        target = clone / "insights/pref-tea.md"
        target.write_text(target.read_text() + line + "\n")
        git(clone, "commit", "-qam", f"edit in {clone.name}")
    git(a, "push", "-q")
    git(b, "fetch", "-q")
    subprocess.run(["git", "-C", str(b), "merge", "-q", "origin/main"], capture_output=True, env=reviewer_env())
    for command in (["scan"], ["requests"], ["integrity"], ["plan", "insights/forget-bees.md", "--lexical"],
                    ["search", "bees", "--lexical"], ["leaks", "insights/forget-bees.md", "--lexical"]):
        proc = run_audit(b, *command)
        assert "a merge is in progress with 1 unmerged file(s) (insights/pref-tea.md)" in proc.stderr, (command, proc)
    problems = json.loads(run_audit(b, "integrity").stdout)["problems"]
    assert [(p["path"], p["kind"]) for p in problems] == [("insights/pref-tea.md", "unmerged_file")]
    refused = run_audit(b, "apply", "insights/forget-bees.md", "--lexical", "--yes")
    assert refused.returncode != 0 and "merge is in progress" in refused.stderr


def test_sync_says_what_it_did_in_words(team):
    a, _b, _c = team
    audit(a, "dismiss", "insights/forget-chess.md", "--note", "kept", "--yes")
    proc = subprocess.run([sys.executable, "-m", "palinode_core", "sync", str(a), "--yes"],
                          capture_output=True, text=True, env=reviewer_env())
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "merged origin/main: already up to date, pushed" and lines[1] == "ok"
    chess = next(line for line in lines if "forget-chess.md" in line)
    assert chess.split()[0] == "dismissed" and chess.endswith("dismiss by A <a@example.org>")


# -- issue 38: sync runs nothing an untrusted store or a remote on this machine names ------------------------
def payload(tmp_path, exit_code: int = 0):
    """A program that records each run (and its arguments) in a marker file."""
    marker, script = tmp_path / "payload-ran", tmp_path / "payload.sh"
    script.write_text(f'#!/bin/sh\necho "$0 $*" >> "{marker}"\nexit {exit_code}\n')
    script.chmod(0o755)
    return script, marker


REMOTE_HOOKS = ("pre-receive", "update", "proc-receive", "post-receive", "post-update", "reference-transaction",
                "push-to-checkout", "pre-auto-gc")


def arm_hooks(folder, script) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in REMOTE_HOOKS:
        (folder / name).write_text(f"#!/bin/sh\n{script} {name}\ncat >/dev/null\n")
        (folder / name).chmod(0o755)


@pytest.mark.parametrize("url", ["path", "file://", "relative"])
@pytest.mark.parametrize("setup", ["hooks", "hooksPath", "alternates"])
def test_sync_runs_nothing_a_remote_on_this_machine_names(team, tmp_path, url, setup):
    """Finding 1: a push to a remote on this machine runs that repository's receive-pack here, with
    its hooks and config; a fetch runs its upload-pack. While the store is untrusted, none of them runs,
    and the push still lands."""
    a, b, _c = team
    bare = tmp_path / "remote.git"
    script, marker = payload(tmp_path)
    if setup == "hooks":
        arm_hooks(bare / "hooks", script)
    elif setup == "hooksPath":
        arm_hooks(tmp_path / "their-hooks", script)
        git(bare, "config", "core.hooksPath", str(tmp_path / "their-hooks"))
    else:  # receive-pack advertises the alternates' refs through this command
        (bare / "objects/info/alternates").write_text(f"{b}/.git/objects\n")
        git(bare, "config", "core.alternateRefsCommand", str(script))
    git(bare, "config", "uploadpack.packObjectsHook", str(script))  # git itself ignores it here
    git(a, "remote", "set-url", "origin", {"path": str(bare), "file://": f"file://{bare}",
                                           "relative": os.path.relpath(bare, a)}[url])
    audit(b, "dismiss", "insights/forget-chess.md", "--note", "kept", "--yes")
    git(b, "push", "-q")
    marker.unlink(missing_ok=True)  # b's plain git push ran them, as git does
    audit(a, "apply", "insights/forget-tea.md", "--lexical", "--yes")
    done = audit(a, "sync", "--yes")
    assert not marker.exists(), marker.read_text()
    assert done["pushed"] and git(bare, "rev-parse", "main") == git(a, "rev-parse", "HEAD")
    assert "insights/forget-chess.md" in (a / ".palinode-audit/ledger.jsonl").read_text(), "fetched and merged"


def test_a_trusted_store_s_local_remote_runs_its_hooks_as_git_would(team, tmp_path):
    a, _b, _c = team
    script, marker = payload(tmp_path)
    arm_hooks(tmp_path / "remote.git/hooks", script)
    audit(a, "dismiss", "insights/forget-chess.md", "--note", "kept", "--yes")
    audit(a, "trust")
    assert audit(a, "sync", "--yes")["pushed"]
    assert {"pre-receive", "post-receive"} <= {line.split()[1] for line in marker.read_text().splitlines()}


def test_a_remote_checked_out_here_is_never_checked_out_by_an_untrusted_push(tmp_path):
    """A non-bare remote set to receive.denyCurrentBranch=updateInstead checks the pushed branch out,
    running its smudge filters and push-to-checkout hook: refused, with git's own words, as git's default is."""
    remote = make_git_store(tmp_path / "remote", FILES)
    script, marker = payload(tmp_path)
    arm_hooks(remote / ".git/hooks", script)
    git(remote, "config", "receive.denyCurrentBranch", "updateInstead")
    git(remote, "config", "filter.evil.smudge", f"sh -c '{script} smudge; cat'")
    (remote / ".git/info/attributes").write_text("* filter=evil\n")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(remote), str(clone)], check=True)
    git(clone, "config", "user.name", "A")
    git(clone, "config", "user.email", "a@example.org")
    marker.unlink(missing_ok=True)
    audit(clone, "dismiss", "insights/forget-chess.md", "--note", "kept", "--yes")
    proc = run_audit(clone, "sync", "--yes")
    assert proc.returncode == 1 and "push was refused" in proc.stderr and len(proc.stderr.splitlines()) == 1
    assert not marker.exists(), marker.read_text()
    assert git(remote, "rev-parse", "main") != git(clone, "rev-parse", "HEAD")


def test_sync_never_runs_the_store_s_git_proxy(team, tmp_path):
    """Finding 2: core.gitProxy runs for a git:// remote; git keeps the first one it reads (the store's),
    so no override outranks it: GIT_PROXY_COMMAND does. The fetch then fails on its own, in one line."""
    a, _b, _c = team
    script, marker = payload(tmp_path, exit_code=1)
    git(a, "config", "core.gitProxy", str(script))
    git(a, "remote", "set-url", "origin", "git://127.0.0.1:1/remote.git")
    proc = run_audit(a, "sync", "--yes")
    assert proc.returncode == 1 and len(proc.stderr.splitlines()) == 1 and "git fetch failed" in proc.stderr
    assert not marker.exists(), marker.read_text()


def test_sync_never_runs_the_store_s_alternate_refs_command(team, tmp_path):
    """Finding 3: a fetch runs core.alternateRefsCommand for each objects/info/alternates entry."""
    a, b, _c = team
    script, marker = payload(tmp_path)
    (a / ".git/objects/info/alternates").write_text(f"{b}/.git/objects\n")
    git(a, "config", "core.alternateRefsCommand", str(script))
    audit(b, "dismiss", "insights/forget-chess.md", "--note", "kept", "--yes")
    git(b, "push", "-q")
    audit(a, "sync", "--yes")
    assert not marker.exists(), marker.read_text()
    assert "insights/forget-chess.md" in (a / ".palinode-audit/ledger.jsonl").read_text()


def push_a_signed_looking_commit(clone) -> None:
    """A commit carrying a gpgsig header (any bytes: whoever can push can write one)."""
    target = clone / "insights/pref-bees.md"
    target.write_text(target.read_text() + "They swarmed in May.\n")
    git(clone, "add", "-A")
    raw = (f"tree {git(clone, 'write-tree').strip()}\nparent {git(clone, 'rev-parse', 'HEAD').strip()}\n"
           "author B <b@example.org> 1748000000 +0000\ncommitter B <b@example.org> 1748000000 +0000\n"
           "gpgsig -----BEGIN PGP SIGNATURE-----\n \n AAAA\n -----END PGP SIGNATURE-----\n\nsigned, it says\n")
    sha = subprocess.run(["git", "-C", str(clone), "hash-object", "-t", "commit", "-w", "--stdin"], input=raw,
                         capture_output=True, text=True, check=True).stdout.strip()
    git(clone, "update-ref", "refs/heads/main", sha)
    git(clone, "reset", "-q", "--hard")
    git(clone, "push", "-q")


@pytest.mark.parametrize("asker", ["store", "person"])
def test_a_merge_that_would_verify_with_the_store_s_program_is_refused_untrusted(team, tmp_path, asker):
    """Finding 4: merge.verifySignatures runs gpg.program on every signed commit merged. Untrusted, the
    store's program never runs: a merge that would verify with any say of the store's config (its own
    merge.verifySignatures, or the person's with the store's gpg.program) is refused up front, never
    silently left unverified; a rebase verifies nothing and syncs."""
    a, b, _c = team
    script, marker = payload(tmp_path)
    if asker == "store":
        git(a, "config", "merge.verifySignatures", "true")
    else:  # the person's own global config
        (tmp_path / "xdg-config/git").mkdir(parents=True)
        (tmp_path / "xdg-config/git/config").write_text("[merge]\n\tverifySignatures = true\n")
    git(a, "config", "gpg.program", str(script))
    push_a_signed_looking_commit(b)
    before = git(a, "rev-parse", "origin/main")
    for args in (("sync", "--yes"), ("sync",)):
        proc = run_audit(a, *args)
        assert proc.returncode == 1 and len(proc.stderr.splitlines()) == 1, proc.stderr
        named = "merge.verifysignatures=true" if asker == "store" else f"gpg.program={script}"
        assert named in proc.stderr and "palinode-audit trust" in proc.stderr and "nothing was fetched" in proc.stderr
    assert git(a, "rev-parse", "origin/main") == before
    assert audit(a, "sync", "--rebase", "--yes")["after"] == git(b, "rev-parse", "HEAD").strip()
    assert not marker.exists(), marker.read_text()


def test_a_signature_refusal_is_reported_as_one_not_as_a_conflict(team, tmp_path):
    """Trusted, the store's gpg.program runs as git would; when it finds no good signature, git refuses
    the merge before changing anything: that is what sync says, and the store is left as it was."""
    a, b, _c = team
    script, marker = payload(tmp_path, exit_code=1)
    git(a, "config", "merge.verifySignatures", "true")
    git(a, "config", "gpg.program", str(script))
    audit(a, "trust")
    push_a_signed_looking_commit(b)
    head = git(a, "rev-parse", "HEAD")
    proc = run_audit(a, "sync", "--yes")
    assert proc.returncode == 1 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert "conflict" not in proc.stderr and "GPG signature" in proc.stderr and "fetched only" in proc.stderr
    assert marker.exists(), "trusted: the store's program ran, as git runs it"
    assert git(a, "rev-parse", "HEAD") == head and not (a / ".git/MERGE_HEAD").exists()


def test_sync_looks_into_no_submodule(team, tmp_path):
    """git status looks into each submodule with that repository's own config (its clean filter
    runs on a file whose timestamp changed): sync's check for uncommitted changes does not."""
    a, _b, _c = team
    script, marker = payload(tmp_path)
    sub = make_git_store(tmp_path / "sub", {"notes.md": "a note\n"})
    subprocess.run(["git", "-C", str(a), "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub),
                    "vendor/sub"], check=True, capture_output=True)
    git(a, "commit", "-qm", "a submodule")
    modules = a / ".git/modules/vendor/sub"
    (modules / "info").mkdir(exist_ok=True)
    (modules / "info/attributes").write_text("* filter=evil\n")
    git(a / "vendor/sub", "config", "filter.evil.clean", f"sh -c '{script} clean; cat'")
    os.utime(a / "vendor/sub/notes.md", (1_600_000_000, 1_600_000_000))  # stat changed: git must read it
    audit(a, "sync", "--yes")
    assert not marker.exists(), marker.read_text()


def test_a_remote_both_here_and_elsewhere_is_refused_in_one_line(team, tmp_path):
    """git runs one --receive-pack for every push URL: it cannot be neutralised here and plain on a server."""
    a, _b, _c = team
    script, marker = payload(tmp_path)
    arm_hooks(tmp_path / "remote.git/hooks", script)
    git(a, "remote", "set-url", "--add", "--push", "origin", str(tmp_path / "remote.git"))
    git(a, "remote", "set-url", "--add", "--push", "origin", "ssh://git@example.invalid/remote.git")
    audit(a, "dismiss", "insights/forget-chess.md", "--note", "kept", "--yes")
    proc = run_audit(a, "sync", "--yes")
    assert proc.returncode == 1 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert "both on this machine and elsewhere" in proc.stderr and "push was refused" in proc.stderr
    assert not marker.exists()


TEA = "insights/forget-tea.md"


def states_of(clone) -> dict[str, str]:
    return {r["path"]: r["state"] for r in audit(clone, "requests")["requests"]}


def commit_as_the_tool(clone, entry: dict, when: str | None = None) -> None:
    """A teammate's decision written in this tool's exact form: the ledger commit's subject and
    trailer, the line naming the commit's author as its decider (their own git identity)."""
    folder = clone / ".palinode-audit"
    folder.mkdir(exist_ok=True)
    (folder / ".gitattributes").write_text("ledger.jsonl merge=union\n")
    with (folder / "ledger.jsonl").open("a") as fh:
        fh.write(json.dumps(entry, sort_keys=True) + "\n")
    env = {**reviewer_env(), **({"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when} if when else {})}
    subprocess.run(["git", "-C", str(clone), "add", ".palinode-audit"], check=True, env=env)
    subprocess.run(["git", "-C", str(clone), "commit", "-qm",
                    f"palinode-audit ledger: {entry['action']} {entry['request']}\n\nForget-Request: {entry['request']}"],
                   check=True, env=env)


@pytest.mark.parametrize("dated", ["9999, after its commit", "ahead, as its commit is"])
def test_decisions_are_ordered_by_the_history_that_added_them_not_by_their_time(team, dated):
    a, b, _c = team
    # a teammate's dismissal, dated ahead of every later decision: written by hand (9999, a
    # commit of today), or by a clone whose clock runs years ahead (its commit dated the same)
    at, when = (("9999-01-01T00:00:00+00:00", None) if dated.startswith("9999")
                else ("2040-01-01T00:00:00+00:00", "2040-01-01T00:00:05+00:00"))
    commit_as_the_tool(a, {"action": "dismiss", "at": at, "decided_by": "A <a@example.org>", "note": "keep it",
                           "request": TEA, "pref": "I drink oolong tea", "v": 1}, when)
    git(a, "push", "-q")
    audit(b, "sync", "--yes")
    assert states_of(b)[TEA] == ("pending" if dated.startswith("9999") else "dismissed")
    audit(b, "apply", TEA, "--lexical", "--yes", "--reopen")  # decided later, knowing of the dismissal
    assert "status: archived" in (b / "insights/pref-tea.md").read_text()
    assert states_of(b)[TEA] == "applied"
    problems = audit(b, "integrity")["problems"]
    if dated.startswith("9999"):  # a time its commit cannot back: reported, and it decides nothing
        assert [p["kind"] for p in problems] == ["ledger_unbacked"], problems
        assert "9999" in problems[0]["detail"] and "after its commit" in problems[0]["detail"]
    else:
        assert problems == []
    audit(b, "sync", "--yes")
    audit(a, "sync", "--yes")
    assert states_of(a)[TEA] == "applied"


@pytest.mark.parametrize("settle", ["apply --reopen", "withdraw"])
@pytest.mark.parametrize("how", ["--merge", "--rebase"])
def test_an_apply_and_a_dismissal_made_apart_are_a_conflict_until_someone_decides_again(team, how, settle):
    a, b, _c = team
    audit(a, "apply", TEA, "--lexical", "--yes")
    audit(b, "dismiss", TEA, "--note", "the tea is work-related", "--yes")  # before B has A's apply
    audit(a, "sync", how, "--yes")
    second = audit(b, "sync", how, "--yes")
    assert {s["path"]: s["state"] for s in second["states"]}[TEA] == "conflicted"
    assert [p["kind"] for p in second["problems"]] == ["decision_conflict"], second["problems"]
    audit(a, "sync", how, "--yes")
    for clone in (a, b):
        assert "status: archived" in (clone / "insights/pref-tea.md").read_text()
        assert states_of(clone)[TEA] == "conflicted", "never 'dismissed' while its target is archived"
        problems = audit(clone, "integrity")["problems"]
        assert [(p["path"], p["kind"]) for p in problems] == [(TEA, "decision_conflict")]
        assert "A <a@example.org>" in problems[0]["detail"] and "B <b@example.org>" in problems[0]["detail"]
    # a dismissal stands while an apply's archive does; an apply asks for --reopen
    assert "withdraw it first" in run_audit(b, "dismiss", TEA, "--note", "again", "--yes").stderr
    assert "dismissed by B <b@example.org>" in run_audit(b, "apply", TEA, "--lexical", "--yes").stderr
    # someone decides again, knowing of both: that settles it, in every clone once synced
    if settle == "withdraw":
        audit(b, "withdraw", TEA, "--yes")
        assert "status: archived" not in (b / "insights/pref-tea.md").read_text()
    else:
        audit(b, "apply", TEA, "--lexical", "--yes", "--reopen")  # nothing left to change: the decision is recorded
    audit(b, "sync", how, "--yes")
    audit(a, "sync", how, "--yes")
    for clone in (a, b):
        assert states_of(clone)[TEA] == ("withdrawn" if settle == "withdraw" else "applied")
        assert audit(clone, "integrity")["problems"] == []
