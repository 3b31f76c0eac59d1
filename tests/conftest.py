from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from helpers import GIT_ENV, Clock  # noqa: E402


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, tmp_path):
    """Git identity from the environment and a private XDG cache and config
    per test, so tests never touch the developer's files or each other's."""
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.delenv("PALINODE_AUDIT_READ_ONLY", raising=False)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(scope="session")
def embedder():
    """The real packaged model, loaded once per test session (per xdist worker;
    model tests share the ``model`` group so one worker runs them all)."""
    from palinode_core.search.embed import Embedder
    model = Embedder()
    assert model.load(), model.error
    return model
