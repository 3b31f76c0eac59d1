"""What a user's exploratory run found in the CLI: an option given "--" as its
value, a count too big for SQLite, a cache folder inside the store, and checks
that called a store clean while a file of it could not be read."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from helpers import git, make_git_store, palinode_file

FILES = {
    "insights/pref-tea.md": palinode_file({"id": "pref-tea", "created_at": "2025-05-01T10:00:00+00:00"},
                                          "I drink oolong tea every morning."),
    "insights/forget-tea.md": palinode_file({"id": "forget-tea", "created_at": "2025-06-01T10:00:00+00:00"},
                                            "Please forget that I drink oolong tea."),
}


def audit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "palinode_core", *args], capture_output=True, text=True, timeout=300)


@pytest.fixture
def store(tmp_path):
    return make_git_store(tmp_path / "s", FILES)


@pytest.mark.parametrize("args", [
    ["show", "{s}", "insights/pref-tea.md", "--at=--"],
    ["show", "{s}", "--", "--"],
    ["archive", "{s}", "insights/pref-tea.md", "--reason=--", "--yes"],
    ["search", "{s}", "tea", "--lexical", "--limit", "99999999999999999999"],
    ["plan", "{s}", "insights/forget-tea.md", "--lexical", "--search-k", "99999999999999999999"],
    ["demo-store", "{s}/../big", "--size", "99999999999999999999"],
])
def test_a_value_that_is_no_value_is_a_usage_error(store, args):
    proc = audit(*(a.replace("{s}", str(store)) for a in args))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and proc.stdout == "", proc.stderr
    assert git(store, "status", "--porcelain") == "" and "status: archived" not in (store / "insights/pref-tea.md").read_text()


def test_a_cache_folder_inside_the_store_is_refused(store):
    proc = audit("scan", str(store), "--cache-dir", str(store / "insights"))
    assert proc.returncode == 1 and "inside the store" in proc.stderr
    assert git(store, "status", "--porcelain", "--untracked-files=all") == ""


def test_a_check_says_which_files_it_could_not_read(store):
    (store / "insights/broken.md").write_text("---\ncategory: [insights\n---\n\nI drink oolong tea at night.\n")
    git(store, "add", "-A")
    git(store, "commit", "-qm", "a broken memory")
    for args in (["plan", str(store), "insights/forget-tea.md", "--lexical"], ["leaks", str(store), "--lexical"]):
        proc = audit(*args)
        assert proc.returncode == 0
        assert proc.stderr.strip().splitlines()[-1].endswith(
            "1 file(s) could not be read, so were not checked: insights/broken.md (scan says why)"), proc.stderr
        assert json.loads(audit("--json", *args).stdout)["unread"] == ["insights/broken.md"]
    assert "could not be read" not in audit("scan", str(store)).stderr  # scan lists them itself


def test_an_apply_preview_with_only_says_what_yes_would_do(store):
    shown = audit("apply", str(store), "insights/forget-tea.md", "--lexical", "--only", "insights/pref-tea.md")
    assert shown.returncode == 0 and "with --only, --yes would apply insights/pref-tea.md" in shown.stdout
    wrong = audit("apply", str(store), "insights/forget-tea.md", "--lexical", "--only", "nope.md")
    assert wrong.returncode != 0 and "not a target" in wrong.stderr  # refused in the preview, not at --yes
    assert git(store, "status", "--porcelain") == ""
