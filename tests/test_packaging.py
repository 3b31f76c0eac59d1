"""Both distributions are ready to publish (issue 41): one version, read by both
pyproject.toml files and both commands; and (marked ``install``, run once by
`make test`) each builds with the setuptools its build-system table declares as
the floor, and twine accepts what was built. Nothing is uploaded."""

from __future__ import annotations

import email
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from helpers import ROOT, checkout_copy
from packaging.requirements import Requirement

VERSION = (ROOT / "core/palinode_core/VERSION").read_text().strip()
PROJECTS = {"palinode-core": ROOT / "core", "palinode-tui": ROOT}


def _pyproject(where: Path) -> dict:
    return tomllib.loads((where / "pyproject.toml").read_text())


def test_one_version_for_both_distributions_and_both_commands():
    assert re.fullmatch(r"\d+\.\d+\.\d+", VERSION)
    for name, where in PROJECTS.items():
        project = _pyproject(where)
        assert "version" not in project["project"] and "version" in project["project"]["dynamic"], name
        version_file = where / project["tool"]["setuptools"]["dynamic"]["version"]["file"]
        assert version_file.resolve() == (ROOT / "core/palinode_core/VERSION").resolve(), name
    core = next(Requirement(r) for r in _pyproject(ROOT)["project"]["dependencies"] if r.startswith("palinode-core"))
    assert core.specifier.contains(VERSION), f"palinode-tui requires {core}, which excludes {VERSION}"
    bindir = Path(sys.executable).parent
    for command, expected in (("palinode-audit", f"palinode-audit {VERSION}"),
                              ("palinode-tui", f"palinode-tui {VERSION} (palinode-core {VERSION})")):
        proc = subprocess.run([str(bindir / command), "--version"], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0 and proc.stdout.strip() == expected, (command, proc.stdout, proc.stderr)


def test_the_app_help_shows_examples_that_parse():
    proc = subprocess.run([str(Path(sys.executable).parent / "palinode-tui"), "--help"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0 and "examples:" in proc.stdout
    from palinode_tui.app import make_parser

    examples = [line.split("  ")[1].strip() for line in proc.stdout.split("examples:")[1].splitlines()
                if line.startswith("  palinode-tui")]
    assert len(examples) >= 3
    for example in examples:
        make_parser().parse_args(example.split()[1:])


def test_published_metadata_is_complete():
    assert (ROOT / "LICENSE").read_text() == (ROOT / "core/LICENSE").read_text()
    assert "MIT License" in (ROOT / "LICENSE").read_text()
    assert f"## [{VERSION}]" in (ROOT / "CHANGELOG.md").read_text()
    for name, where in PROJECTS.items():
        project = _pyproject(where)["project"]
        assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"], name
        assert (where / project["readme"]).is_file(), name
        assert not any(c.startswith("License ::") for c in project["classifiers"]), name  # PEP 639: the expression
        assert {"Homepage", "Changelog", "Issues"} <= set(project["urls"]), name


def _floor(where: Path) -> str:
    """The setuptools release the build-system table names as its floor (``>=X``)."""
    (requirement,) = [Requirement(r) for r in _pyproject(where)["build-system"]["requires"]]
    (floor,) = [s.version for s in requirement.specifier if s.operator == ">="]
    return floor


@pytest.mark.install
@pytest.mark.xdist_group("install")
def test_both_build_at_the_declared_setuptools_floor_and_pass_twine_check(tmp_path):
    floors = {_floor(where) for where in PROJECTS.values()}
    assert len(floors) == 1
    venv = tmp_path / "floor"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = subprocess.run([str(venv / "bin/pip"), "install", "--quiet", f"setuptools=={floors.pop()}", "build",
                          "twine"], capture_output=True, text=True)
    assert pip.returncode == 0, pip.stderr[-2000:]
    source = checkout_copy(tmp_path / "source")  # a build writes egg-info and build/ beside the sources
    dist = tmp_path / "dist"
    for where in ("core", "."):
        # no isolation: the build must succeed with exactly the floor, not whatever release an isolated env takes
        proc = subprocess.run([str(venv / "bin/python"), "-m", "build", "--no-isolation", "--outdir", str(dist),
                               where], cwd=source, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    built = sorted(p.name for p in dist.iterdir())
    assert built == sorted([f"palinode_core-{VERSION}-py3-none-any.whl", f"palinode_core-{VERSION}.tar.gz",
                            f"palinode_tui-{VERSION}-py3-none-any.whl", f"palinode_tui-{VERSION}.tar.gz"])
    twine = subprocess.run([str(venv / "bin/twine"), "check", "--strict", *map(str, dist.iterdir())],
                           capture_output=True, text=True)
    assert twine.returncode == 0, twine.stdout + twine.stderr
    for name in ("palinode_core", "palinode_tui"):
        with zipfile.ZipFile(dist / f"{name}-{VERSION}-py3-none-any.whl") as wheel:
            meta = email.message_from_bytes(wheel.read(f"{name}-{VERSION}.dist-info/METADATA"))
            assert f"{name}-{VERSION}.dist-info/licenses/LICENSE" in wheel.namelist()
            if name == "palinode_core":
                assert f"{name}/VERSION" in wheel.namelist()
        assert meta["Version"] == VERSION and meta["License-Expression"] == "MIT"
        assert meta.get_all("Classifier") and meta["Description-Content-Type"] == "text/markdown"


def test_the_demos_closing_hint_names_a_command_that_runs_from_here(tmp_path):
    """make demo runs .venv/bin/palinode-tui, which is not on PATH: the hint names it by its full path;
    installed on PATH, by its name."""
    import os

    script = str(Path(sys.executable).parent / "palinode-tui")
    check = ("import sys; sys.argv[0] = sys.argv[1]; from palinode_tui.app import reopen_command; "
             "print(reopen_command())")
    for path, expected in (("/usr/bin:/bin", script), (f"{Path(script).parent}:/usr/bin:/bin", "palinode-tui")):
        proc = subprocess.run([sys.executable, "-c", check, script], capture_output=True, text=True,
                              env={**os.environ, "PATH": path})
        assert proc.stdout.strip() == expected, (path, proc.stdout, proc.stderr)
