"""Issue 23: every input and pane of every screen is reachable from the keyboard.
Tab walks the focus order of each main screen and each screen opened from them;
whatever can take focus and is shown must be reached."""
from __future__ import annotations

import pytest
from helpers import Clock
from tui.conftest import errors, settle

from palinode_core.demo import build_demo_store
from palinode_tui.app import PalinodeApp

SIZE = (120, 36)
# (how to get there from Browse: keys, with "2" and the like switching modes first)
SCREENS = {
    "BrowseScreen": ("1",),
    "ReviewScreen": ("2",),
    "UndoScreen": ("3",),
    "ResidueScreen": ("4",),
    "ActivityScreen": ("5",),
    "TraceScreen": ("1", "t"),
    "TimelineScreen": ("1", "l"),
    "DiffScreen": ("2", "d"),
    "DeliveriesScreen": ("2", "v"),
}


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("focus") / "demo"
    build_demo_store(root)
    return root


@pytest.mark.parametrize("name", list(SCREENS))
async def test_tab_reaches_every_input_and_pane(tmp_path, demo, name):
    app = PalinodeApp(demo, embedder=None, vectors=False, clock=Clock(), cache_dir=tmp_path / "cache", watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        for key in SCREENS[name]:
            await pilot.press(key)
            await settle(app, pilot)
        screen = app.screen
        assert type(screen).__name__ == name, (name, type(screen).__name__, errors(app))
        wanted = {w.id for w in screen.query("*") if w.focusable and w.display and w.id and w.region.area}
        assert wanted, "a screen with nothing to focus"
        for key in ("tab", "shift+tab"):
            reached = set()
            for _ in range(2 * len(wanted) + 2):
                await pilot.press(key)
                await pilot.pause()
                if screen.focused is not None:
                    reached.add(screen.focused.id)
            assert wanted <= reached, f"{name}: not reachable by {key}: {sorted(wanted - reached)}"
        assert errors(app) == []
