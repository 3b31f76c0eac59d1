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


@pytest.fixture(scope="session", autouse=True)
def _isolated_session_env(tmp_path_factory):
    """The same for what module- and session-scoped fixtures build before any
    test's own environment exists (a shared demo store, a planted bench)."""
    base = tmp_path_factory.mktemp("session-env")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(base / "xdg-cache"))
        patch.setenv("XDG_CONFIG_HOME", str(base / "xdg-config"))
        # the embedder's 90 MB weights copy, made once per session, not in every test's cache
        patch.setenv("PALINODE_AUDIT_MODEL_CACHE", str(base / "model-cache"))
        yield


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, tmp_path):
    """Git identity from the environment and a private XDG cache and config
    per test, so tests never touch the developer's files or each other's."""
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.delenv("PALINODE_AUDIT_READ_ONLY", raising=False)


def pytest_collection_modifyitems(config, items):
    """A test that takes the real model must say so: marked ``model`` and in the
    ``model`` xdist group, so one worker loads it once (--dist loadgroup)."""
    unmarked = []
    for item in items:
        if "embedder" not in getattr(item, "fixturenames", ()):
            continue
        group = item.get_closest_marker("xdist_group")
        if item.get_closest_marker("model") is None or group is None or "model" not in (*group.args, *group.kwargs.values()):
            unmarked.append(item.nodeid)
    if unmarked:
        raise pytest.UsageError("tests use the `embedder` fixture without the `model` marker and xdist_group('model'): "
                                + ", ".join(unmarked))


@pytest.fixture(autouse=True)
def _model_only_where_marked(request, monkeypatch):
    """The other direction: a test not marked ``model`` fails if it loads the
    model (a journey that never searches must not pay for it). Checked after
    the test, because a load may happen in one of the app's worker threads."""
    if request.node.get_closest_marker("model") is not None:
        yield
        return
    from palinode_core.search.embed import Embedder
    original = Embedder.load
    loaded: list[bool] = []

    def load(self) -> bool:
        ok = original(self)
        if ok:
            loaded.append(True)
        return ok
    monkeypatch.setattr(Embedder, "load", load)
    yield
    if loaded:
        pytest.fail("this test loaded the embedding model but is not marked `model`")


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(scope="session")
def embedder():
    """The real packaged model, loaded once per test session (per xdist worker;
    model tests share the ``model`` group so one worker runs them all)."""
    from palinode_core.search.embed import Embedder
    model = Embedder()
    assert model.load(), model.notice
    return model
