"""What people bring from well-liked CLIs (issue 23): ``--version``, "did you
mean" for a mistyped command, ``PALINODE_DIR`` for the store, every writing
command previewing unless told ``--yes``, and a read of a folder that is no
git repository saying so."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import version

import pytest

from helpers import git, make_git_store, palinode_file, subjects

REQ = "insights/forget-w.md"
FAIR = "people/w.md"


def run(*args: str, code: int = 0, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "PALINODE_DIR"}
    proc = subprocess.run([sys.executable, "-m", "palinode_core", *args], capture_output=True, text=True,
                          env={**environ, **(env or {})})
    assert proc.returncode == code, (proc.returncode, proc.stdout[-2000:], proc.stderr)
    return proc


@pytest.fixture
def store(tmp_path):
    return make_git_store(tmp_path / "s", {
        FAIR: palinode_file({"id": "people-w", "created_at": "2025-05-01T00:00:00+00:00"},
                            "Met Wilhelmina Cragg at the fair; she judges the Moonrise panel."),
        REQ: palinode_file({"id": "insights-forget-w", "created_at": "2025-06-01T00:00:00+00:00"},
                           "Please forget that I know Wilhelmina Cragg."),
    })


def snapshot(root) -> tuple[str, dict[str, bytes]]:
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
             if p.is_file() and ".git" not in p.parts}
    return git(root, "rev-parse", "HEAD"), files


def test_version_names_the_installed_distribution():
    proc = run("--version")
    assert proc.stdout.strip() == f"palinode-audit {version('palinode-core')}"


def test_a_mistyped_command_is_one_line_with_the_nearest_command(store):
    proc = run("pln", str(store), REQ, code=2)
    assert proc.stdout == "" and proc.stderr.count("\n") == 1
    assert proc.stderr.startswith("palinode-audit: unknown command 'pln'; did you mean 'plan'")
    far = run("--json", "zzzzzz", code=2)
    assert "see palinode-audit --help" in far.stderr


def test_palinode_dir_stands_in_for_the_store(store, tmp_path):
    env = {"PALINODE_DIR": str(store)}
    scan = json.loads(run("--json", "scan", env=env).stdout)
    assert scan["memories"] == 2
    # a command with its own positional: the store is filled in before it
    shown = json.loads(run("--json", "show", FAIR, env=env).stdout)
    assert shown["path"] == FAIR
    # a store given on the command line wins
    other = make_git_store(tmp_path / "other", {"a/b.md": palinode_file({"id": "a-b"}, "One.")})
    assert json.loads(run("--json", "scan", str(other), env=env).stdout)["memories"] == 1
    # without the variable the store is still required
    assert "store" in run("scan", code=2).stderr


@pytest.mark.parametrize("command", [
    ["archive", FAIR],
    ["restore", FAIR],
    ["retract", FAIR, "--pref", "I know Wilhelmina Cragg"],
    ["withdraw", REQ],
    ["dismiss", REQ, "--note", "no"],
    ["recover", "--rollback"],
])
def test_every_writing_command_previews_unless_told_yes(store, command):
    if command[0] in ("restore", "withdraw"):  # something to take back first
        run(*(["archive", str(store), FAIR] if command[0] == "restore"
              else ["retract", str(store), FAIR, "--pref", "I know Wilhelmina Cragg"]), "--yes")
    before = snapshot(store)
    proc = run(command[0], str(store), *command[1:])
    assert snapshot(store) == before
    if command[0] != "recover":  # nothing to recover: nothing to say either
        assert "nothing written; re-run with --yes" in proc.stdout
    run(command[0], str(store), *command[1:], "--yes")
    if command[0] != "recover":
        assert snapshot(store) != before


def test_undo_takes_yes_and_writes_nothing_without_it(store):
    run("retract", str(store), FAIR, "--pref", "I know Wilhelmina Cragg", "--yes")
    [op] = json.loads(run("--json", "operations", str(store)).stdout)["operations"]
    before = snapshot(store)
    preview = json.loads(run("--json", "undo", str(store), op["commit"]).stdout)
    assert preview["applied"] is False and preview["message"].startswith("nothing written")
    assert snapshot(store) == before
    done = json.loads(run("--json", "undo", str(store), op["commit"], "--yes").stdout)
    assert done["applied"] is True and subjects(store)[0].startswith("palinode unretract")
    redo = json.loads(run("--json", "redo", str(store), op["commit"]).stdout)
    assert redo["applied"] is False


def test_a_read_of_a_folder_that_is_no_git_repository_says_so(tmp_path):
    folder = tmp_path / "plain"
    (folder / "notes").mkdir(parents=True)
    (folder / "notes/a.md").write_text(palinode_file({"id": "notes-a"}, "Hello."))
    for command in (["scan"], ["integrity"], ["requests"]):
        proc = run(command[0], str(folder))
        assert proc.stderr.count("\n") == 1 and "is not a git repository" in proc.stderr, command
