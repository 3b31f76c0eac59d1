"""The review is the truth: a reviewer's choices per request (targets and
sentences) survive switching requests, re-planning, file changes and a
restart; a file changed under a sentence choice is never silently approved
again; the ledger's past decisions show on reopen. Lexical search only: these
journeys need the model only where the strike target must be found."""
from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input, Static

from helpers import Clock, git, make_git_store, palinode_file, subjects
from palinode_tui.app import PalinodeApp
from palinode_tui.screens.review import ReviewScreen
from palinode_tui.widgets import ConfirmModal, KeyedTable
from tui.conftest import SPEC_FILES, errors, fm, settle

SIZE = (120, 36)
MOON = "projects/moonrise-closeout.md"
FAIR = "people/wilhelmina-fair.md"
W = "insights/forget-w.md"
TEA = "insights/forget-tea.md"


@pytest.fixture
def two_requests(tmp_path) -> Path:
    files = dict(SPEC_FILES)
    files[TEA] = ("Please forget that I drink oolong tea.", "2025-06-02T10:00:00+00:00")
    return make_git_store(tmp_path / "store", {rel: palinode_file(fm(rel, c), b) for rel, (b, c) in files.items()})


def app_for(root: Path, tmp_path: Path, embedder=None, **kw) -> PalinodeApp:
    """Lexical only unless given the model (lexical search alone does not
    find the strike target of the spec store)."""
    kw.setdefault("watch", False)
    # drafts are exercised on Palinode's plan of the spec store (its strike target is pre-approved there;
    # the thorough resolver holds that compound sentence for the reviewer)
    kw.setdefault("resolver", "palinode")
    return PalinodeApp(root, vectors=embedder is not None, embedder=embedder, clock=Clock(),
                       cache_dir=tmp_path / "cache", **kw)


async def open_review(app, pilot) -> ReviewScreen:
    await settle(app, pilot)
    await pilot.press("2")
    await settle(app, pilot)
    assert isinstance(app.screen, ReviewScreen)
    return app.screen


async def pick(app, pilot, table_id: str, key: str) -> None:
    table = app.screen.query_one(table_id, KeyedTable)
    table.focus()
    assert table.select_key(key), (key, table.keys)
    await settle(app, pilot)


def mark(review: ReviewScreen, path: str) -> str:
    return review.review.draft.mark(review.review.plan.candidate(path))


def cell(review: ReviewScreen, path: str, column: int) -> str:
    table = review.query_one("#candidates", KeyedTable)
    return str(table.get_row(path)[column])


async def test_a_skip_survives_switching_requests_replanning_and_a_restart(tmp_path, two_requests):
    app = app_for(two_requests, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        review = await open_review(app, pilot)
        await pick(app, pilot, "#requests", W)
        await pick(app, pilot, "#candidates", FAIR)
        await pilot.press("space")
        await settle(app, pilot)
        assert mark(review, FAIR) == "skipped" and cell(review, FAIR, 0) == "✗"
        await pick(app, pilot, "#requests", TEA)
        assert review.review.plan.request.path == TEA
        await pick(app, pilot, "#requests", W)
        assert mark(review, FAIR) == "skipped"
        review.query_one("#knob-floor", Input).value = "0.3"  # re-plan with other knobs
        await settle(app, pilot)
        assert review.review.plan.knobs.min_target_coverage == 0.3 and mark(review, FAIR) == "skipped"
    app = app_for(two_requests, tmp_path)  # a restart, same cache folder
    async with app.run_test(size=SIZE) as pilot:
        review = await open_review(app, pilot)
        await pick(app, pilot, "#requests", W)
        assert mark(review, FAIR) == "skipped"
        assert errors(app) == []
    assert git(two_requests, "status", "--porcelain") == ""  # the draft never lives in the store


@pytest.mark.model
@pytest.mark.xdist_group("model")
async def test_a_sentence_choice_under_a_file_change_is_marked_not_reapproved(tmp_path, spec_store, embedder):
    app = app_for(spec_store, tmp_path, embedder)
    async with app.run_test(size=SIZE) as pilot:
        review = await open_review(app, pilot)
        await pick(app, pilot, "#candidates", MOON)
        await pilot.press("d")
        await settle(app, pilot)
        await pilot.press("down", "space", "escape")  # keep only the first sentence
        await settle(app, pilot)
        assert mark(review, MOON) == "partial"
        assert "1/2 spans" in cell(review, MOON, 4) and cell(review, MOON, 0) == "◐"
        moon = spec_store / MOON
        moon.write_text(moon.read_text().replace("Moonrise Fair 2025", "Moonrise Fair 2025 (edited)"))
        app.scan_store({MOON})
        await settle(app, pilot, rounds=8)
        assert mark(review, MOON) == "changed" and "changed, review again" in cell(review, MOON, 4)
        cand = review.review.plan.candidate(MOON)
        assert review.review.draft.chosen_spans(cand) == {0}  # carried over by its text, not re-ticked
        assert MOON not in review.review.selection()  # left out of an apply until looked at again
        await pilot.press("A")
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmModal)
        body = str(app.screen.body)
        assert "Changed on disk, review again" in body and f"retract {MOON}" not in body
        await pilot.press("escape")
        await settle(app, pilot)
        await pick(app, pilot, "#candidates", MOON)
        await pilot.press("d")
        await settle(app, pilot)
        assert app.screen.chosen == {0}
        await pilot.press("escape")  # looked at again: approved with the same sentence
        await settle(app, pilot)
        assert mark(review, MOON) == "partial"
        assert review.review.selection()[MOON].spans == frozenset({0})


@pytest.mark.model
@pytest.mark.xdist_group("model")
async def test_past_decisions_show_on_reopen(tmp_path, spec_store, embedder):
    app = app_for(spec_store, tmp_path, embedder)
    async with app.run_test(size=SIZE) as pilot:
        review = await open_review(app, pilot)
        await pick(app, pilot, "#candidates", FAIR)
        await pilot.press("space")  # skip the archive, apply the strike
        await settle(app, pilot)
        await pilot.press("A")
        await settle(app, pilot)
        await pilot.click("#confirm")
        await settle(app, pilot, rounds=8)
        assert errors(app) == []
        # the decision and its leak check in one ledger commit, after the strike's own
        assert subjects(spec_store)[:2] == [f"palinode-audit ledger: apply {W}",
                                            "palinode retract: projects/moonrise-closeout.md (2 mentions) <- " + W]
        for _ in range(6):  # pending -> ... -> all
            await pilot.press("s")
        await settle(app, pilot)
        assert review.state_filter == "all"
        await pick(app, pilot, "#requests", W)
        await settle(app, pilot)
        assert mark(review, FAIR) == "skipped"  # still skipped: the ledger says so
        assert "skipped 2025-06-01" in cell(review, FAIR, 4)
        header = str(review.query_one("#plan-header", Static).render())
        assert "earlier:" in header and "1 applied, 1 skipped" in header


async def test_apply_with_an_empty_request_list_does_nothing(tmp_path, spec_store):
    app = app_for(spec_store, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        review = await open_review(app, pilot)
        assert review.current == W
        await pilot.press("s", "s")  # pending -> partial -> applied: nothing listed
        await settle(app, pilot)
        assert review.request_rows == [] and review.current is None
        await pilot.press("A", "X")
        await settle(app, pilot)
        assert isinstance(app.screen, ReviewScreen)
    assert subjects(spec_store) == ["initial"]


async def test_another_forget_request_is_never_a_target(tmp_path):
    files = {
        "insights/forget-poker.md": palinode_file({"id": "a", "category": "insights"},
                                                  "Please forget that I play poker on Fridays."),
        "insights/forget-oboe.md": palinode_file({"id": "b", "category": "insights"},
                                                 "Please forget that I play the oboe."),
        "people/me.md": palinode_file({"id": "c", "category": "people"}, "I play the oboe in a quartet."),
    }
    root = make_git_store(tmp_path / "store", files)
    app = app_for(root, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        review = await open_review(app, pilot)
        await pick(app, pilot, "#requests", "insights/forget-oboe.md")
        assert review.review is not None and "people/me.md" in review.candidate_rows
        assert "insights/forget-poker.md" not in review.candidate_rows
        assert "insights/forget-poker.md" not in review.review.selection()


async def test_keys_esc_leaves_input_q_quits_tab_cycles_panes(tmp_path, spec_store):
    app = app_for(spec_store, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("slash", "q", "escape", "2")  # q types in the field; Esc gives keys back
        await settle(app, pilot)
        assert isinstance(app.screen, ReviewScreen)
        review = app.screen
        review.query_one("#requests").focus()
        seen = []
        for _ in range(7):
            seen.append(app.focused.id)
            await pilot.press("tab")
        assert seen == ["requests", "knob-floor", "knob-max", "knob-shared", "candidates", "candidate-detail-box",
                        "requests"]
        await pilot.press("k")  # into the knobs; q there is text, not quit
        await pilot.press("q")
        assert app.is_running
        await pilot.press("escape")
        assert not isinstance(app.focused, Input)
        await pilot.press("plus", "plus", "plus")  # quick repeats all count
        await settle(app, pilot)
        assert review.query_one("#knob-floor", Input).value == "0.2"
        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running


async def test_a_refused_key_in_read_only_says_so(tmp_path, spec_store):
    app = app_for(spec_store, tmp_path, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await open_review(app, pilot)
        await pilot.press("A")
        await settle(app, pilot)
        assert not isinstance(app.screen, ConfirmModal)
        assert any("Read-only: Apply is not available" in n.message for n in app._notifications)
    assert subjects(spec_store) == ["initial"]


async def test_plain_words_instead_of_internal_names(tmp_path, spec_store):
    from palinode_tui.render import route_word, words
    from palinode_tui.screens.help import HelpScreen
    assert words("no_mentions: no strikeable sentence") == "no mentions: no strikeable sentence"
    assert route_word("not_taken") == "not taken" and words("would_retract") == "will strike"
    app = app_for(spec_store, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await open_review(app, pilot)
        await pilot.press("A")
        await settle(app, pilot)
        body = str(app.screen.body)
        assert f"archive {FAIR}  (will archive)" in body and "would_" not in body
        await pilot.press("escape", "f1")
        await settle(app, pilot)
        assert isinstance(app.screen, HelpScreen)
        title = str(app.screen._table().title)
        assert title.startswith("Keys for Review") and "Screen" not in title and "Table" not in title


async def test_a_target_holding_your_own_edits_is_flagged_and_never_committed(tmp_path, spec_store):
    """The user's uncommitted edit to a target: the plan's header and the target's
    detail say so, and the apply is refused with nothing written."""
    fair = spec_store / FAIR
    fair.write_text(fair.read_text() + "My own note, not yet committed.\n")
    warning = f"{FAIR} has uncommitted edits: commit or stash them first; apply refuses"
    app = app_for(spec_store, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        review = await open_review(app, pilot)
        assert review.current == W and review.review.plan.warnings == [warning]
        assert warning in str(review.query_one("#plan-header", Static).render())
        await pick(app, pilot, "#candidates", FAIR)
        assert warning in str(review.query_one("#candidate-detail", Static).render())
        await pilot.press("A")
        await settle(app, pilot)
        await pilot.click("#confirm")
        await settle(app, pilot)
        assert errors(app) == [f"apply {W}: commit or stash your edits to {FAIR} first; nothing was changed"]
    assert subjects(spec_store) == ["initial"]
    assert git(spec_store, "status", "--porcelain") == f" M {FAIR}\n"
