"""Install weight (issue 21): `pip install ./core` with no extras is a working
palinode-audit, lexical, with no torch, no sentence-transformers and no model
in the virtualenv at all; asking for semantic search says how to get it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import make_git_store, palinode_file

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def lean(tmp_path_factory) -> Path:
    venv = tmp_path_factory.mktemp("lean") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    proc = subprocess.run(
        [str(venv / "bin/pip"), "install", "--quiet", "-c", str(REPO / "constraints.txt"), str(REPO / "core")],
        capture_output=True, text=True, env={**os.environ, "PIP_NO_INPUT": "1"},
    )
    if proc.returncode != 0:
        pytest.skip(f"LEAN INSTALL NOT CHECKED: pip could not install ./core here: {proc.stderr.strip()[-300:]}")
    return venv


def test_the_core_alone_plans_and_searches_without_torch(lean, tmp_path):
    root = make_git_store(tmp_path / "s", {
        "insights/pref-bees.md": palinode_file({"id": "pref-bees", "created_at": "2025-05-01T10:00:00+00:00"},
                                               "I keep bees in the back garden."),
        "insights/forget-bees.md": palinode_file({"id": "forget-bees", "created_at": "2025-05-20T10:00:00+00:00"},
                                                 "Please forget that I keep bees."),
    })
    missing = subprocess.run([str(lean / "bin/python"), "-c", "import torch"], capture_output=True, text=True)
    assert missing.returncode != 0  # not merely unimported: not installed
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}

    def audit(*args: str) -> dict:
        proc = subprocess.run([str(lean / "bin/palinode-audit"), "--json", *args], capture_output=True, text=True,
                              env=env)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
        return json.loads(proc.stdout)

    plan = audit("plan", str(root), "insights/forget-bees.md")
    assert [c["path"] for c in plan["candidates"] if c["route"] in ("archive", "strike")] == ["insights/pref-bees.md"]
    found = audit("search", str(root), "bees in the garden")
    assert found["mode"] == "lexical" and "pip install './core[vectors]'" in found["notice"]
    assert found["hits"][0]["path"] in ("insights/pref-bees.md", "insights/forget-bees.md")


def test_every_hint_of_the_lean_install_leads_somewhere_that_works(lean, tmp_path):
    """Issue 41: without the vectors extra, `plan` does not send you to `index` for semantic evidence (it could
    not give any), and `index` indexes lexically, says how to get vectors, and never says it loads a model."""
    root = make_git_store(tmp_path / "s", {
        "insights/pref-bees.md": palinode_file({"id": "pref-bees", "created_at": "2025-05-01T00:00:00+00:00"},
                                               "I keep bees in the back garden."),
        "insights/forget-bees.md": palinode_file({"id": "forget-bees", "created_at": "2025-05-20T10:00:00+00:00"},
                                                 "Please forget that I keep bees."),
    })
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}

    def audit(*args: str) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([str(lean / "bin/palinode-audit"), *args], capture_output=True, text=True, env=env)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
        return proc

    plan = audit("plan", str(root), "insights/forget-bees.md")
    assert "palinode-audit index" not in plan.stdout and "pip install './core[vectors]'" in plan.stdout
    index = audit("--json", "index", str(root))
    data = json.loads(index.stdout)
    assert "loading the embedding model" not in index.stderr
    assert data["mode"] == "lexical" and "pip install './core[vectors]'" in (data["notice"] or "")
