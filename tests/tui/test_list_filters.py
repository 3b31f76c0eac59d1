"""Issue 23: `/` filters every list (Review, Undo, Residue, Activity, a memory's
Timeline, Deliveries), as it does in lazygit and k9s: typed text keeps the rows
that contain it in any column, Enter goes back to the list keeping the filter,
Esc clears it and never leaves the screen."""
from __future__ import annotations

import json

import pytest
from helpers import Clock
from textual.widgets import Input
from tui.conftest import errors, settle

from palinode_core.demo import build_demo_store
from palinode_tui.app import PalinodeApp
from palinode_tui.widgets import KeyedTable, ListFilter

SIZE = (120, 36)
# screen: (keys from Browse, the list's id, a text some but not all of its rows contain)
LISTS = {
    "ReviewScreen": (("2", "s", "s", "s", "s", "s", "s"), "requests", "pending"),  # s to "all" states
    "UndoScreen": (("3",), "undo-ops", "poker"),
    "ResidueScreen": (("4",), "mentions", "request"),
    "ActivityScreen": (("5",), "timeline", "poker"),
    "TimelineScreen": (("1", "l"), "points", "supersede"),  # of insights/pref-poker.md, selected below
    "DeliveriesScreen": (("2", "v"), "deliveries", "evening"),  # of the Berlin request, logged below
}


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("filters") / "demo"
    build_demo_store(root)
    (root / ".audit").mkdir()
    (root / ".audit" / "retrievals.jsonl").write_text("".join(
        json.dumps({"timestamp": f"2025-05-0{day}T09:00:00+00:00", "file_path": "people/me-profile.md",
                    "mode": "explicit", "query": "where do I live", "rank": 0, "session_id": session}) + "\n"
        for day, session in ((3, "morning-1"), (4, "morning-2"), (5, "evening-1"))))
    return root


def row_texts(table: KeyedTable) -> list[str]:
    return [" ".join(str(c) for c in table.get_row(key)).casefold() for key in table.keys]


@pytest.mark.parametrize("name", list(LISTS))
async def test_slash_filters_the_list_enter_keeps_it_escape_clears_it(tmp_path, demo, name):
    keys, table_id, needle = LISTS[name]
    app = PalinodeApp(demo, embedder=None, vectors=False, clock=Clock(), cache_dir=tmp_path / "cache", watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        for key in keys:
            if key == "l":
                app.screen.query_one("#memories").move_cursor(row=list(app.screen.rows).index("insights/pref-poker.md"))
            await pilot.press(key)
            await settle(app, pilot)
        screen = app.screen
        assert type(screen).__name__ == name, errors(app)
        table = screen.query_one(f"#{table_id}", KeyedTable)
        table.focus()
        await settle(app, pilot)
        everything = list(table.keys)
        bar = screen.query_one(ListFilter)
        assert not bar.display or not bar.region.area  # hidden until asked for

        await pilot.press("slash")
        await settle(app, pilot)
        field = bar.query_one(Input)
        assert screen.focused is field and bar.region.area
        await pilot.press(*needle.upper())  # any case
        await settle(app, pilot)
        shown = list(table.keys)
        texts = row_texts(table)
        assert shown and all(needle in t for t in texts), (name, texts)
        assert len(shown) < len(everything), (name, "the text should leave some rows out on the demo")
        assert f"{len(shown)} of {len(everything)}" in str(bar.query_one("Label").render())

        await pilot.press("enter")  # back to the list, the filter kept and shown
        await settle(app, pilot)
        assert screen.focused is table and list(table.keys) == shown and bar.region.area

        await pilot.press("slash", "escape")  # cleared; the screen stays
        await settle(app, pilot)
        assert app.screen is screen and screen.focused is table
        assert list(table.keys) == everything and not bar.region.area

        await pilot.press("slash", *"no row has this text")
        await settle(app, pilot)
        assert table.keys == [] and table.total == len(everything)
        assert errors(app) == []


async def test_a_filter_outlives_a_refill(tmp_path, demo):
    """The store re-read under a filter (Ctrl+R): the rows are the new ones, still filtered."""
    app = PalinodeApp(demo, embedder=None, vectors=False, clock=Clock(), cache_dir=tmp_path / "cache", watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("3")
        await settle(app, pilot)
        table = app.screen.query_one("#undo-ops", KeyedTable)
        await pilot.press("slash", *"poker", "enter")
        await settle(app, pilot)
        filtered = list(table.keys)
        await pilot.press("ctrl+r")
        await settle(app, pilot)
        assert list(table.keys) == filtered and table.filter_text == "poker"
        assert all("poker" in t for t in row_texts(table))


async def test_undo_never_acts_on_a_row_a_filter_hides(tmp_path, demo):
    """The last preview is of a row the filter then hid: U, R and W refuse and say why."""
    from palinode_tui.widgets import ConfirmModal

    app = PalinodeApp(demo, embedder=None, vectors=False, clock=Clock(), cache_dir=tmp_path / "cache", watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("3")
        await settle(app, pilot)
        undo = app.screen
        assert undo.preview is not None  # the first row's preview
        await pilot.press("slash", *"no row has this", "enter")
        await settle(app, pilot)
        assert undo.query_one("#undo-ops", KeyedTable).keys == []
        for key in ("U", "R", "W"):
            await pilot.press(key)
            await settle(app, pilot)
            assert not isinstance(app.screen, ConfirmModal), key
        assert any("the one previewed is not shown" in n.message for n in app._notifications)
