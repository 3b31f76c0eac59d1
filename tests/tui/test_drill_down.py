"""Issue 23: Enter drills down and Esc walks back the way it came: a memory of
a trace's chain opens its own trace, a plan target its timeline, an operation
in Undo the request it carried out (in Review, whatever that request's state),
Review's x its residue; 1-5 start afresh, so Esc then goes nowhere."""
from __future__ import annotations

import pytest
from helpers import Clock
from textual.widgets import Input, Tree
from tui.conftest import errors, settle

from palinode_core.demo import build_demo_store
from palinode_tui.app import PalinodeApp
from palinode_tui.screens.residue import ResidueScreen
from palinode_tui.screens.review import ReviewScreen
from palinode_tui.screens.timeline import TimelineScreen
from palinode_tui.screens.trace import TraceScreen
from palinode_tui.screens.undo import UndoScreen
from palinode_tui.widgets import KeyedTable

SIZE = (120, 36)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("drill") / "demo"
    build_demo_store(root)
    return root


def app_for(demo, tmp_path) -> PalinodeApp:
    return PalinodeApp(demo, embedder=None, vectors=False, clock=Clock(), cache_dir=tmp_path / "cache", watch=False,
                       resolver="palinode")


async def press(app, pilot, *keys: str) -> None:
    for key in keys:
        await pilot.press(key)
        await settle(app, pilot)


async def test_a_chain_node_opens_its_trace_and_esc_walks_back(tmp_path, demo):
    app = app_for(demo, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        browse = app.screen
        browse.query_one("#memories").move_cursor(row=list(browse.rows).index("insights/pref-poker.md"))
        await press(app, pilot, "t")
        first = app.screen
        assert isinstance(first, TraceScreen) and first.path == "insights/pref-poker.md"
        tree = first.query_one("#chain", Tree)
        tree.focus()
        successor = next(n for n in tree.root.children[0].children if n.data)
        tree.move_cursor(successor)
        await press(app, pilot, "enter")
        second = app.screen
        assert isinstance(second, TraceScreen) and second.path == successor.data == "insights/forget-poker.md"
        assert successor.is_expanded or not successor.children  # Enter followed, did not fold
        await press(app, pilot, "escape")
        assert app.screen is first
        await press(app, pilot, "escape")
        assert app.screen is browse
        assert errors(app) == []


async def test_a_plan_target_opens_its_timeline_and_esc_comes_back(tmp_path, demo):
    app = app_for(demo, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await press(app, pilot, "2")
        review = app.screen
        assert isinstance(review, ReviewScreen)
        requests = review.query_one("#requests", KeyedTable)
        requests.focus()
        requests.select_key("insights/forget-sneakers.md")
        await settle(app, pilot)
        targets = review.query_one("#candidates", KeyedTable)
        assert targets.keys, "the sneakers request has a target"
        targets.focus()
        await press(app, pilot, "enter")
        assert isinstance(app.screen, TimelineScreen) and app.screen.path == targets.keys[0]
        await press(app, pilot, "escape")
        assert app.screen is review and review.focused is targets
        assert errors(app) == []


async def test_an_operation_opens_its_request_in_review_and_esc_goes_back_to_undo(tmp_path, demo):
    app = app_for(demo, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await press(app, pilot, "3")
        undo = app.screen
        assert isinstance(undo, UndoScreen)
        ops = undo.query_one("#undo-ops", KeyedTable)
        row = next(i for i, (kind, item) in enumerate(undo.rows)
                   if kind == "op" and item.counterpart == "insights/forget-poker.md")
        ops.move_cursor(row=row)
        await press(app, pilot, "enter")
        review = app.screen
        assert isinstance(review, ReviewScreen)
        # an applied request, listed although Review shows pending ones by default
        assert review.current == "insights/forget-poker.md"
        assert review.query_one("#requests", KeyedTable).selected_key == "insights/forget-poker.md"
        await press(app, pilot, "escape")
        assert app.screen is undo and ops.cursor_row == row

        # an operation that carried out no request says so and stays
        plain = next(i for i, (kind, item) in enumerate(undo.rows)  # a decision superseded by the next one
                     if kind == "op" and item.counterpart not in undo.request_paths
                     and item.trailers.get("Forget-Request") not in undo.request_paths)
        ops.move_cursor(row=plain)
        await press(app, pilot, "enter")
        assert app.screen is undo
        assert any("carried out no forget request" in n.message for n in app._notifications)

        # Review's x drills into the residue; Esc comes back; 1-5 start afresh
        ops.move_cursor(row=row)
        await press(app, pilot, "enter", "x")
        assert isinstance(app.screen, ResidueScreen)
        await press(app, pilot, "escape")
        assert isinstance(app.screen, ReviewScreen)
        await press(app, pilot, "escape")
        assert app.screen is undo
        await press(app, pilot, "escape")  # nothing left to walk back
        assert app.screen is undo
        await press(app, pilot, "enter", "4", "escape")
        assert isinstance(app.screen, ResidueScreen)
        assert errors(app) == []


async def test_esc_in_a_field_leaves_the_field_and_does_not_walk_back(tmp_path, demo):
    app = app_for(demo, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await press(app, pilot, "2", "x")
        residue = app.screen
        assert isinstance(residue, ResidueScreen)
        residue.query_one("#residue-pref", Input).focus()
        await press(app, pilot, "escape")
        assert app.screen is residue and not isinstance(residue.focused, Input)
        await press(app, pilot, "escape")
        assert isinstance(app.screen, ReviewScreen)


async def test_help_names_what_enter_does_on_a_list(tmp_path, demo):
    """A list's own Enter (select) runs the screen's drill-down: help says which."""
    app = app_for(demo, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await press(app, pilot, "2")
        app.screen.query_one("#candidates", KeyedTable).focus()
        await press(app, pilot, "f1")
        rows = {key: desc for key, desc, _help in app.screen.rows()}
        assert rows.get("⏎") == "Timeline", rows
        await press(app, pilot, "escape", "3", "f1")
        rows = {key: desc for key, desc, _help in app.screen.rows()}
        assert rows.get("⏎") == "Request" and rows.get("/") == "Filter", rows


async def test_a_drill_down_lands_on_the_modes_own_screen_not_one_left_open_over_it(tmp_path, demo):
    """A Timeline left open over Review: Enter on an operation still shows its
    request in Review itself (the screen over it is closed), and Esc comes back."""
    app = app_for(demo, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await press(app, pilot, "2")
        review = app.screen
        review.query_one("#requests", KeyedTable).select_key("insights/forget-sneakers.md")
        await settle(app, pilot)
        review.query_one("#candidates", KeyedTable).focus()
        await press(app, pilot, "enter")
        assert isinstance(app.screen, TimelineScreen)
        await press(app, pilot, "3")
        undo = app.screen
        row = next(i for i, (kind, item) in enumerate(undo.rows)
                   if kind == "op" and item.counterpart == "insights/forget-poker.md")
        undo.query_one("#undo-ops", KeyedTable).move_cursor(row=row)
        await press(app, pilot, "enter")
        assert app.screen is review and review.current == "insights/forget-poker.md"
        await press(app, pilot, "escape")
        assert app.screen is undo
        assert errors(app) == []
