"""Issue 43: from the first open the app embeds in the background what the open
requests' plans need first (the cascade: a sample, every sentence screened, the
candidates near a request), says so in the status line, re-plans once they are
in, and only then embeds the rest for search by meaning."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import Clock
from tui.conftest import settle, wait_until

from palinode_core.demo import build_demo_store
from palinode_core.search import cascade
from palinode_tui import app as app_module
from palinode_tui.app import PalinodeApp

pytestmark = [pytest.mark.model, pytest.mark.xdist_group("model")]
SIZE = (120, 36)


class Recording(PalinodeApp):
    """The app, recording the phases its status line showed and the index steps it published."""

    CSS_PATH = str(Path(app_module.__file__).with_name(PalinodeApp.CSS_PATH))

    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self.phases: list[str] = []
        self.steps: list[str] = []

    def on_work_progress(self, message) -> None:
        if not self.phases or self.phases[-1] != message.phase:
            self.phases.append(message.phase)
        super().on_work_progress(message)


async def test_the_app_covers_the_requests_first_then_embeds_the_rest(tmp_path, embedder, monkeypatch):
    monkeypatch.setattr(cascade, "BELOW", 0)  # a small store, screened as a big one is
    monkeypatch.setattr(cascade, "SAMPLE", 300)
    monkeypatch.setattr(cascade, "TOP_MIN", 300)
    monkeypatch.setattr(cascade, "TOP_SHARE", 0.0)
    root = tmp_path / "demo"
    build_demo_store(root, size=60)
    app = Recording(root, embedder=embedder, clock=Clock(), cache_dir=tmp_path / "cache", watch=False)
    async with app.run_test(size=SIZE) as pilot:
        app.index_signal.subscribe(app, app.steps.append)
        await settle(app, pilot)
        await wait_until(app, pilot, lambda: app.index_mode == "hybrid", attempts=1200)
        index = app.index
        assert index is not None
        prefs = app.live.open_prefs()
        assert index.units.covered_prefs(prefs) == set(prefs)
        embedded, units = index.units.coverage()
        assert embedded == units  # then everything, for search by meaning
    # the status line said each step of the cascade, the requests' candidates before the rest of the sentences
    cascade_steps = [p for p in app.phases if p in ("sample", "screening", "candidates")]
    assert cascade_steps == ["sample", "screening", "candidates"], app.phases
    assert app.phases.index("candidates") < len(app.phases) - 1 - app.phases[::-1].index("sentences")
    # plans were redone when the candidates were in, before the index was whole
    assert "hybrid-partial" in app.steps and app.steps.index("hybrid-partial") < app.steps.index("hybrid"), app.steps


async def test_a_store_index_covered_is_not_screened_again_when_the_app_opens(tmp_path, embedder, monkeypatch):
    """`palinode-audit index` covers the open requests; the app opening the store then
    plans at once. It had screened every sentence again for the requests already decided
    (applied, withdrawn): at 10k memories, minutes of CPU beside the first plans."""
    from palinode_core.session import Session

    monkeypatch.setattr(cascade, "BELOW", 50)  # screened as a big store is; what is written since is embedded
    monkeypatch.setattr(cascade, "SAMPLE", 300)
    monkeypatch.setattr(cascade, "TOP_MIN", 300)
    monkeypatch.setattr(cascade, "TOP_SHARE", 0.0)
    root = tmp_path / "demo"
    build_demo_store(root, size=60)
    session = Session.open(root, embedder=embedder, cache_dir=tmp_path / "cache")
    session.update_index()  # what `index` does: the open requests covered
    assert len({s.pref for s in session.request_states()}) > len(session.open_prefs())  # some are decided
    app = Recording(root, embedder=embedder, clock=Clock(), cache_dir=tmp_path / "cache", watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await wait_until(app, pilot, lambda: app.index_mode == "hybrid", attempts=1200)
    assert "screening" not in app.phases and "sample" not in app.phases, app.phases


async def test_a_memory_written_while_the_rest_is_embedded_is_covered_first(tmp_path, embedder, monkeypatch):
    """The rest of a big store is embedded in a child for half an hour of CPU; a memory written
    meanwhile is covered in seconds (the child gives way, then resumes), not after it."""
    import time

    monkeypatch.setattr(cascade, "BELOW", 50)  # the in-process cascade screens; the child embeds the rest
    monkeypatch.setattr(cascade, "SAMPLE", 300)
    monkeypatch.setattr(cascade, "TOP_MIN", 300)
    monkeypatch.setattr(cascade, "TOP_SHARE", 0.0)
    root = tmp_path / "demo"
    build_demo_store(root, size=60)
    written = "Every Sunday a pot of Taiwanese leaf is brewed twice, a ritual kept since the spring."
    app = Recording(root, embedder=embedder, clock=Clock(), cache_dir=tmp_path / "cache", watch=False)
    async with app.run_test(size=SIZE) as pilot:
        deadline = time.monotonic() + 120
        # the child embedding the rest: its chunks' phase, after the cascade's candidates
        while "candidates" not in app.phases or "vectors" not in app.phases[app.phases.index("candidates"):]:
            assert time.monotonic() < deadline, app.phases
            await pilot.pause(0.05)
        (root / "daily" / "2026-12-03.md").write_text(
            f"---\nid: daily-2026-12-03\ncategory: daily\n---\n\n{written}\n", encoding="utf-8"
        )
        app.scan_store({"daily/2026-12-03.md"})  # what the watcher does
        index = app.index
        assert index is not None
        while not index.has_vector(written):
            assert time.monotonic() < deadline, app.phases
            await pilot.pause(0.05)
        embedded, units = index.units.coverage()
        assert units - embedded > 100, (embedded, units)  # covered long before the rest was done
        while app.index_mode != "hybrid":  # then the child came back and finished
            assert time.monotonic() < deadline + 120, app.phases
            await pilot.pause(0.1)
        embedded, units = index.units.coverage()
        assert embedded == units
