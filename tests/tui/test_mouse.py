"""Issue 23: the mouse does what people expect of it: a click on a tab opens that
screen, a click on a pane focuses it, a click on a row selects it (and Review
plans the request clicked), the wheel scrolls a list."""
from __future__ import annotations

import pytest
from helpers import Clock
from textual import events
from tui.conftest import errors, settle

from palinode_core.demo import build_demo_store
from palinode_tui.app import PalinodeApp
from palinode_tui.screens.review import ReviewScreen
from palinode_tui.screens.undo import UndoScreen
from palinode_tui.widgets import KeyedTable, ModeTabs


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("mouse") / "demo"
    build_demo_store(root)
    return root


def app_for(demo, tmp_path) -> PalinodeApp:
    return PalinodeApp(demo, embedder=None, vectors=False, clock=Clock(), cache_dir=tmp_path / "cache", watch=False,
                       resolver="palinode")


async def click_tab(app, pilot, mode: str) -> None:
    tabs = app.screen.query_one(ModeTabs)
    start, _end, _mode = next(span for span in tabs.spans if span[2] == mode)
    assert await pilot.click(tabs, offset=(tabs.styles.padding.left + start + 2, 0))
    await settle(app, pilot)


async def test_a_click_on_a_tab_opens_its_screen(tmp_path, demo):
    app = app_for(demo, tmp_path)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        await click_tab(app, pilot, "undo")
        assert isinstance(app.screen, UndoScreen)
        await click_tab(app, pilot, "review")
        assert isinstance(app.screen, ReviewScreen)
        assert errors(app) == []


async def test_a_click_selects_a_row_and_focuses_its_pane(tmp_path, demo):
    app = app_for(demo, tmp_path)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        await pilot.press("2")
        await settle(app, pilot)
        review = app.screen
        requests = review.query_one("#requests", KeyedTable)
        targets = review.query_one("#candidates", KeyedTable)
        targets.focus()
        await settle(app, pilot)
        row = requests.keys.index("insights/forget-sneakers.md")
        assert requests.selected_key != "insights/forget-sneakers.md"
        assert await pilot.click(requests, offset=(4, 1 + row))  # below the header line
        await settle(app, pilot)
        assert review.focused is requests and requests.selected_key == "insights/forget-sneakers.md"
        assert review.current == "insights/forget-sneakers.md" and review.review is not None
        assert review.review.plan.request.path == "insights/forget-sneakers.md"

        await pilot.press("3")
        await settle(app, pilot)
        box = app.screen.query_one("#undo-preview-box")
        assert app.screen.focused is not box
        await pilot.click(box, offset=(4, 2))  # lands on the text inside
        await settle(app, pilot)
        assert app.screen.focused is box
        assert errors(app) == []


async def test_the_wheel_scrolls_a_list(tmp_path, demo):
    app = app_for(demo, tmp_path)
    async with app.run_test(size=(100, 20)) as pilot:
        await settle(app, pilot)
        table = app.screen.query_one("#memories")
        assert table.max_scroll_y > 0, "25 memories overflow 20 lines"
        assert table.scroll_y == 0
        for _ in range(3):
            await pilot._post_mouse_events([events.MouseScrollDown], table, offset=(4, 3))
        await settle(app, pilot)
        assert table.scroll_y > 0
        assert errors(app) == []
