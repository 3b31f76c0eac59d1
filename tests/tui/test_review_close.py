"""A partial request with nothing left (issue 41): its plan has nothing to
apply and nothing live remains, so Review says so and `A` closes it, recorded
as applied with who decided; while a live mention remains, closing says where."""
from __future__ import annotations

import json

from helpers import Clock, make_git_store, palinode_file

from palinode_core.session import Session
from palinode_tui.app import PalinodeApp
from palinode_tui.screens.review import ReviewScreen
from palinode_tui.widgets import ConfirmModal
from tui.conftest import errors, settle

SIZE = (120, 36)
REQ, NOTES = "insights/forget-bees.md", "notes/allotment.md"
BODY = ("Weekly notes from the allotment. I keep bees behind the shed. The tomatoes did well this year. "
        "The compost needs turning, and I keep bees near the hedge too. The fence is broken. The shed roof leaks. "
        "Seed orders are due. The path needs weeding. Water butts are full. The gate hinge squeaks.")


def struck_by_hand(tmp_path, how_many: int):
    root = make_git_store(tmp_path / "s", {
        NOTES: palinode_file({"id": "notes-allotment", "created_at": "2025-05-01T00:00:00+00:00"}, BODY),
        REQ: palinode_file({"id": "insights-forget-bees", "created_at": "2025-06-01T00:00:00+00:00"},
                           "Please forget that I keep bees."),
    })
    session = Session.open(root, vectors=False)
    for _ in range(how_many):
        mention = next(m for m in session.residue("I keep bees") if m.kind == "live" and m.path == NOTES)
        session.strike(session.plan_strike(REQ, mention.path, mention.line, mention.text), mention.line,
                       mention.text)
        session.refresh()
    return root


async def open_partial(app, pilot) -> ReviewScreen:
    await settle(app, pilot)
    await pilot.press("2")
    await settle(app, pilot)
    review = app.screen
    assert isinstance(review, ReviewScreen)
    while review.state_filter != "partial":
        await pilot.press("s")
    await settle(app, pilot)
    assert review.current == REQ and review.record is not None  # its record first
    await pilot.press("p")  # plan what remains
    await settle(app, pilot, rounds=8)
    return review


async def test_a_partial_request_with_nothing_left_is_closed_from_review(tmp_path):
    root = struck_by_hand(tmp_path, 2)
    app = PalinodeApp(root, vectors=False, watch=False, clock=Clock(), cache_dir=tmp_path / "cache")
    async with app.run_test(size=SIZE) as pilot:
        review = await open_partial(app, pilot)
        assert review.review is not None and not review.review.plan.actionable
        header = str(review.query_one("#plan-header").render())
        assert "nothing remains to apply: A closes it" in header
        await pilot.press("A")
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmModal) and app.screen.focused.id == "cancel"
        await pilot.click("#confirm")
        await settle(app, pilot, rounds=8)
        assert errors(app) == []
        records = [json.loads(line) for line in (root / ".palinode-audit/ledger.jsonl").read_text().splitlines()]
        assert records[-1]["action"] == "apply" and records[-1]["note"] == "closed: nothing remained to apply"
        assert records[-1]["decided_by"] == "Test Author <author@example.test>"
        assert next(s.state for s in app.live.request_states() if s.path == REQ) == "applied"


async def test_closing_says_which_live_mention_remains(tmp_path):
    root = struck_by_hand(tmp_path, 1)  # the planner leaves a retracted memory alone: the clause stays live
    app = PalinodeApp(root, vectors=False, watch=False, clock=Clock(), cache_dir=tmp_path / "cache")
    async with app.run_test(size=SIZE) as pilot:
        await open_partial(app, pilot)
        await pilot.press("A")
        await settle(app, pilot)
        assert not isinstance(app.screen, ConfirmModal)  # said at once, with no dialog to cancel
        said = " ".join(str(n.message) for n in app._notifications)
        assert "still has 1 live mention(s) (notes/allotment.md:8)" in said
        assert next(s.state for s in app.live.request_states() if s.path == REQ) == "partial"
