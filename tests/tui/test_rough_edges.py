"""The rough edges a new user met (issue 41), each driven as a user drives the
app: a withdrawn request planned again says it was withdrawn; the floor field
takes + and -; the record of an applied request lines up under its headers;
a folder without git says what it cannot do; a toast shows no Markdown."""
from __future__ import annotations

import re

from helpers import Clock, make_git_store, palinode_file

from palinode_core.session import Session
from palinode_tui.app import PalinodeApp
from palinode_tui.screens.review import ReviewScreen
from palinode_tui.widgets import ConfirmModal
from tui.conftest import SPEC_FILES, errors, fm, settle

SIZE = (120, 36)
W, FAIR = "insights/forget-w.md", "people/wilhelmina-fair.md"


def spec(tmp_path):
    return make_git_store(tmp_path / "store", {rel: palinode_file(fm(rel, c), b) for rel, (b, c) in SPEC_FILES.items()})


async def review_of(app, pilot, state: str) -> ReviewScreen:
    await settle(app, pilot)
    await pilot.press("2")
    await settle(app, pilot)
    review = app.screen
    assert isinstance(review, ReviewScreen)
    while review.state_filter != state:
        await pilot.press("s")
    await settle(app, pilot)
    return review


async def test_a_withdrawn_request_planned_again_says_it_was_withdrawn(tmp_path):
    root = spec(tmp_path)
    session = Session.open(root, vectors=False)
    session.apply_forget(session.plan(W))
    session.refresh()
    session.apply_withdraw(session.plan_withdraw(W))
    app = PalinodeApp(root, vectors=False, watch=False, clock=Clock(), cache_dir=tmp_path / "cache")
    async with app.run_test(size=SIZE) as pilot:
        review = await review_of(app, pilot, "withdrawn")
        await settle(app, pilot, rounds=8)
        assert review.current == W and review.review is not None and review.review.plan.actionable  # Apply is offered
        header = str(review.query_one("#plan-header").render())
        assert re.search(r"withdrawn on \d{4}-\d\d-\d\d by Test Author: applying it again", header), header
        # the restored memory is held back for its restore, not said to be created after the request
        assert dict(review.review.plan.guarded)[FAIR].startswith("restored ")
        await pilot.press("A")
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmModal)
        assert app.screen.title_text == "Apply this withdrawn request again?"
        await pilot.press("escape")
        await settle(app, pilot)
        assert errors(app) == []
