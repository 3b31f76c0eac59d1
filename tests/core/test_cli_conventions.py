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


def test_every_command_has_an_example_and_each_runs_on_the_demo_as_written(tmp_path):
    """Each `--help` ends with examples; run in order on a fresh demo store (its
    history is the same on every build, so a commit id in an example is real),
    every one exits 0, and one that does not say --yes writes nothing."""
    import shlex

    from palinode_core.cli import COMMANDS
    from palinode_core.cli.examples import DEMO, EXAMPLES

    assert set(EXAMPLES) == set(COMMANDS)
    home = tmp_path / "home"
    home.mkdir()
    demo = home / "palinode-demo"
    run("demo-store", str(demo))
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_CACHE_HOME": str(home / ".cache")}
    for name, lines in EXAMPLES.items():
        assert name in run(name, "--help").stdout.split("example")[-1], name
        for line in lines:
            words = shlex.split(line.replace(DEMO, str(demo)).replace("/tmp/review-pack", str(tmp_path / "pack")))
            if ">" in words:  # a shell redirection: the output is the test's to read
                words = words[: words.index(">")]
            if name == "demo-store":
                words[-1] = str(tmp_path / "another-demo")
            before = git(demo, "rev-parse", "HEAD")
            proc = subprocess.run([sys.executable, "-m", "palinode_core", *words], capture_output=True, text=True,
                                  cwd=tmp_path, env={**os.environ, **env})
            assert proc.returncode == 0, (line, proc.stdout[-1500:], proc.stderr[-1500:])
            if "--yes" not in words:
                assert git(demo, "rev-parse", "HEAD") == before, line


def test_quiet_keeps_errors_and_warnings_and_verbose_says_each_git_command(tmp_path, store):
    plain = tmp_path / "plain"
    plain.mkdir()
    assert "is not a git repository" in run("scan", str(plain)).stderr
    # -q silences notes and progress, never a warning about what was read nor an error
    assert "is not a git repository" in run("-q", "scan", str(plain)).stderr
    assert "is not a git repository" in run("scan", str(plain), "-q").stderr  # after the command too
    assert run("-q", "show", str(store), "people/none.md", code=1).stderr.startswith("palinode-audit: ")
    loud = run("-v", "retract", str(store), FAIR, "--pref", "I know Wilhelmina Cragg", "--superseded-by", REQ,
               "--yes").stderr
    assert "palinode-audit: git commit" in loud and "retract took" in loud
    assert all(line.startswith("palinode-audit: ") for line in loud.splitlines())  # a message's lines kept on one
    assert "palinode-audit: git ls-tree" in run("-v", "scan", str(store), "--as-of", "2099-01-01").stderr  # history too
    run("-q", "-v", "scan", str(store), code=2)


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_completion_completes_commands_and_each_commands_options_in_a_real_bash(shell, tmp_path):
    script = tmp_path / "complete.sh"
    script.write_text(run("completion", shell).stdout)
    if shell == "zsh":  # the zsh script is the bash one behind bashcompinit; bash checks its body
        body = script.read_text().split("bashcompinit\n", 1)[1]
        script.write_text(body)
    probe = (f'source "{script}"; '
             'COMP_WORDS=(palinode-audit pl); COMP_CWORD=1; _palinode_audit; echo "1:${COMPREPLY[*]}"; '
             'COMP_WORDS=(palinode-audit -q plan /s --o); COMP_CWORD=4; _palinode_audit; echo "2:${COMPREPLY[*]}"; '
             'COMP_WORDS=(palinode-audit report /s --re); COMP_CWORD=3; _palinode_audit; echo "3:${COMPREPLY[*]}"')
    (tmp_path / "my store").mkdir()
    (tmp_path / "my star*").mkdir()
    probe += (f'; cd "{tmp_path}"; COMP_WORDS=(palinode-audit scan my); COMP_CWORD=2; _palinode_audit; '
              'printf "4:%s|" "${COMPREPLY[@]}"; echo')
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[:3] == ["1:plan", "2:--only --out", "3:--redact --request"]
    assert sorted(w.removeprefix("4:") for w in out[3].strip("|").split("|")) == ["my star*", "my store"]  # never globbed


def test_fish_completion_names_every_command():
    from palinode_core.cli import COMMANDS
    text = run("completion", "fish").stdout
    assert all(name in text for name in COMMANDS) and "-l redact" in text
