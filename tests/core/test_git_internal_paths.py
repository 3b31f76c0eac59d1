"""No path inside git's own files is ever a target (issue 24, finding 0):
whatever a forged commit, a journal entry, a draft or the user names
(`.git/config`, `.GIT/config`, `./.git/x`, a link to `.git`, `.gitattributes`),
every command refuses it with one line and git keeps working."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from helpers import git, make_git_store, palinode_file

from palinode_core.errors import PathError
from palinode_core.storage import safeio
from palinode_core.storage.store import Store

TEA = palinode_file({"id": "pref-tea", "created_at": "2025-05-01T10:00:00+00:00"}, "I drink oolong tea.")


def audit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "palinode_core", *args], capture_output=True, text=True)


@pytest.fixture
def store(tmp_path):
    root = make_git_store(tmp_path / "s", {"insights/pref-tea.md": TEA})
    os.symlink(".git", root / "gitlink")
    return root


@pytest.mark.parametrize("ref", [".git/config", ".GIT/config", "./.git/x", ".git/description", "gitlink/config",
                                 "notes/.git/config", ".gitattributes", ".git"])
def test_every_spelling_is_refused_by_the_one_choke_point(store, ref):
    with pytest.raises(PathError, match="git's own files"):
        Store(store).resolve(ref)
    with pytest.raises(OSError):
        safeio.read_file(ref, store, 1 << 20)


@pytest.mark.parametrize("args", [("archive", "{s}", ".git/description", "--dry-run"),
                                  ("archive", "{s}", ".git/config", "--yes"),
                                  ("restore", "{s}", ".GIT/config", "--yes"),
                                  ("retract", "{s}", "gitlink/config", "--pref", "I drink tea", "--yes"),
                                  ("show", "{s}", ".git/config")])
def test_commands_naming_git_files_are_refused_with_one_line(store, args):
    config = (store / ".git/config").read_bytes()
    proc = audit(*(a.format(s=store) for a in args))
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "git's own files" in proc.stderr
    assert (store / ".git/config").read_bytes() == config
    git(store, "status")  # git still works


def test_a_forged_operation_on_git_config_cannot_be_redone(store):
    git(store, "commit", "-q", "--allow-empty", "-m", 'palinode archive: ".git/config" -> insights/pref-tea.md')
    forged = git(store, "rev-parse", "HEAD").strip()
    git(store, "commit", "-q", "--allow-empty", "-m", f'palinode restore: ".git/config"\n\nUndoes: {forged}')
    config = (store / ".git/config").read_bytes()
    for extra in (("--dry-run",), ("--yes",)):
        proc = audit("redo", str(store), forged, *extra)
        assert proc.returncode != 0 and "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1
    assert (store / ".git/config").read_bytes() == config and not (store / ".git/config-history.md").exists()
    git(store, "status")


@pytest.mark.parametrize("entry", [
    {"kind": "forget", "id": "forget-forged", "request": "insights/pref-tea.md", "steps": [], "done": []},
    {"kind": "forget", "id": "forget-forged", "steps": [{"op": "archive"}], "done": [{"index": 3}], "failed": []},
    {"kind": "forget", "id": "forget-forged", "steps": "x", "done": [], "failed": []},
])
def test_a_forged_journal_entry_is_refused_with_one_line(store, entry):
    """Issue 24, finding 8b: a forged transaction made `recover --complete` end in a traceback."""
    import json

    folder = store / ".git" / "palinode-audit" / "journal"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "forget-forged.json").write_text(json.dumps(entry))
    before = (store / "insights/pref-tea.md").read_bytes()
    for args in (("recover", str(store)), ("recover", str(store), "--complete", "--yes"),
                 ("recover", str(store), "--rollback", "--yes"), ("integrity", str(store))):
        proc = audit(*args)
        assert "Traceback" not in proc.stderr and proc.stderr.count("\n") <= 1, (args, proc.stderr)
    assert (store / "insights/pref-tea.md").read_bytes() == before
    git(store, "status")


@pytest.mark.parametrize("value", ["relative/cache", "FILE"])
def test_xdg_cache_home_that_is_relative_or_a_file(store, tmp_path, value):
    """Issue 24, finding 8: a relative XDG_CACHE_HOME is ignored (the XDG spec), a file is one line."""
    if value == "FILE":
        value = str(tmp_path / "not-a-folder")
        (tmp_path / "not-a-folder").write_text("x")
    home = tmp_path / "home"  # the fallback for a relative one is ~/.cache: the test's own, not the developer's
    proc = subprocess.run([sys.executable, "-m", "palinode_core", "scan", str(store)], capture_output=True,
                          text=True, cwd=tmp_path, env={**os.environ, "XDG_CACHE_HOME": value, "HOME": str(home)})
    if value.startswith("relative"):
        assert proc.returncode == 0 and not (tmp_path / "relative").exists()
        assert any((home / ".cache" / "palinode-tui").iterdir())
    else:
        assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "not a folder" in proc.stderr


@pytest.mark.parametrize("rel", ["../outside.md", ".git/config", ".GIT/config"])
def test_a_journal_entry_naming_a_path_outside_the_store_is_listed_not_run(store, rel):
    """Issue 24, findings 0 and 8: a forged entry with `../` or a git path made integrity and
    recover fail as a whole; now it is one listed entry, and recover never writes it."""
    import json

    folder = store / ".git" / "palinode-audit" / "journal"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "archive-forged.json").write_text(json.dumps(
        {"kind": "archive", "id": "archive-forged", "target": rel, "index_before": {},
         "files": [{"rel": rel, "before": "[core]\n", "after": "---\nstatus: archived\n---\n"}]}))
    config = (store / ".git/config").read_bytes()
    listed = audit("--json", "integrity", str(store))
    assert listed.returncode == 1 and "did not write" in listed.stdout  # an error found: exit 1
    assert json.loads(listed.stdout)["ok"] is False and listed.stderr == ""
    for how in ("--rollback", "--complete"):
        proc = audit("recover", str(store), how, "--yes")
        assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert (store / ".git/config").read_bytes() == config
    git(store, "status")


@pytest.mark.parametrize("ref", [".palinode-audit/ledger.jsonl", "palinode.config.yaml", "insights/pref-tea-history.md",
                                 "logs/today.md"])
@pytest.mark.parametrize("command", [["archive"], ["retract", "--pref", "I drink oolong tea"]])
def test_no_change_is_made_to_what_is_not_a_memory(store, ref, command):
    """The ledger, Palinode's config, a history file or a skipped folder is never rewritten as a memory."""
    for rel, text in ((".palinode-audit/ledger.jsonl", '{"action": "dismiss"}\n'), ("palinode.config.yaml", "a: 1\n"),
                      ("insights/pref-tea-history.md", "- [2025-05-01 10:00] x\n"), ("logs/today.md", "I drink tea.\n")):
        (store / rel).parent.mkdir(parents=True, exist_ok=True)
        (store / rel).write_text(text)
    git(store, "add", "-A")
    git(store, "commit", "-qm", "records")
    before = (store / ref).read_bytes()
    proc = audit(command[0], str(store), ref, *command[1:], "--yes")
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "nothing was changed" in proc.stderr, proc.stderr
    assert (store / ref).read_bytes() == before and git(store, "status", "--porcelain") == ""


def test_a_memory_cannot_supersede_itself(store):
    proc = audit("archive", str(store), "insights/pref-tea.md", "--superseded-by", "insights/pref-tea.md", "--yes")
    assert proc.returncode == 1 and "cannot supersede itself" in proc.stderr
    assert "status: archived" not in (store / "insights/pref-tea.md").read_text()
