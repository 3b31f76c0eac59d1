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

TEA = palinode_file({"id": "pref-tea", "created_at": "2031-05-01T10:00:00+00:00"}, "I drink oolong tea.")


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
