"""Review under the thorough resolver (the app's default): which resolver
found each target and why, Palinode's own plan beside it, and targets the
resolver does not pre-approve (a compound sentence, weak evidence) waiting
for the reviewer: an apply with the defaults leaves them byte-identical.
Lexical only: every piece of evidence here is a shared word."""
from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static

from helpers import Clock, make_git_store, palinode_file, subjects
from palinode_core.forget import ledger
from palinode_tui.app import PalinodeApp
from palinode_tui.screens.review import ReviewScreen
from palinode_tui.widgets import ConfirmModal, KeyedTable
from tui.conftest import errors, settle

SIZE = (120, 36)
ANN = "people/ann.md"
BOARD = "projects/board.md"
SHOP = "projects/shop.md"
REQUEST = "insights/forget-ann.md"
# hard-wrapped inside its closing clause: no strike of that clause alone is restorable (docs/format.md)
COMPOUND = "The budget is fine, and I go rowing with\nAnn Lee on Sundays."


def memory(rel: str, body: str, created: str) -> str:
    return palinode_file({"id": rel.replace("/", "-")[:-3], "created_at": created}, body)


@pytest.fixture
def store(tmp_path) -> Path:
    return make_git_store(tmp_path / "store", {
        # every word of the preference: pre-approved even without a vector (issue 22)
        ANN: memory(ANN, "Met Ann Lee at the rowing club.", "2025-05-01T10:00:00+00:00"),
        # one compound sentence carries it (its other clause comes first and a line breaks inside its own:
        # no restorable strike keeps them apart),
        # with "rowing", which Palinode does not take for "row"
        BOARD: memory(BOARD, f"The board meets on Tuesdays. {COMPOUND} Minutes go to the wiki.",
                      "2025-05-02T10:00:00+00:00"),
        # one word of three in its sentence: weak evidence; its heading no strike reaches
        SHOP: memory(SHOP, "## Rota: Ann and Lee\n\nThe shop opens at nine. Lee runs the till on Saturdays. "
                           "Deliveries come on Monday.", "2025-05-02T10:00:00+00:00"),
        REQUEST: memory(REQUEST, "Please forget that I row with Ann Lee.", "2025-06-01T10:00:00+00:00"),
    })


def lexical_app(root: Path, tmp_path: Path) -> PalinodeApp:
    return PalinodeApp(root, vectors=False, watch=False, clock=Clock(), cache_dir=tmp_path / "cache")


def text_of(widget: Static) -> str:
    return widget.render().plain


def row(review: ReviewScreen, path: str) -> dict[str, str]:
    table = review.query_one("#candidates", KeyedTable)
    labels = [str(c.label) for c in table.columns.values()]
    return dict(zip(labels, (str(cell) for cell in table.get_row(path)), strict=True))


async def show(app, pilot, review: ReviewScreen, path: str) -> str:
    table = review.query_one("#candidates", KeyedTable)
    table.focus()
    assert table.select_key(path), (path, table.keys)
    await settle(app, pilot)
    return text_of(review.query_one("#candidate-detail", Static))


async def test_found_by_evidence_and_palinode_beside_it(tmp_path, store):
    app = lexical_app(store, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("2")
        await settle(app, pilot)
        review: ReviewScreen = app.screen
        assert review.review is not None and review.review.plan.resolver == "thorough"
        header = text_of(review.query_one("#plan-header", Static))
        # Palinode's words do not stem ("rowing" is not "row"): it never finds the board
        assert "Palinode would (lexical): 2 targets (2 archive); thorough adds 1" in header
        assert "meaning: off (words only)" in header  # a lexical app: no sentence vectors
        assert [row(review, p)["by"] for p in (ANN, BOARD, SHOP)] == ["T+P", "T", "T+P"]

        detail = await show(app, pilot, review, BOARD)
        assert "found by thorough · missed by Palinode" in detail
        assert "sentence line 6 · score 0.97 strong · no vector (lexical only)" in detail
        assert "words: rowing≈row, Ann, Lee" in detail  # an inflection, shown with the pref's own word
        assert "⚠ also removes: The budget is fine" in detail and "Not pre-approved (⚠ compound)" in detail

        detail = await show(app, pilot, review, SHOP)
        assert "found by thorough and Palinode" in detail and "Palinode would archive it" in detail
        assert "heading line 6 · score 0.82 ask · no vector (lexical only)" in detail  # some words, no vector to confirm them
        assert "sentence line 8 · score 0.50 ask · no vector (lexical only)" in detail
        assert "words: Lee\n    Lee runs the till on Saturdays." in detail
        assert "Not pre-approved (ask: low evidence, 1 unforgotten)" in detail
        assert "unforgotten (heading, line 6): ## Rota: Ann and Lee" in detail

        detail = await show(app, pilot, review, ANN)
        assert "found by thorough and Palinode" in detail and "Palinode would also archive it" in detail
        assert "score 0.97 strong" in detail and "Not pre-approved" not in detail
        assert errors(app) == []


async def test_held_targets_start_unapproved_and_defaults_leave_them_untouched(tmp_path, store):
    board_before, shop_before = (store / BOARD).read_bytes(), (store / SHOP).read_bytes()
    app = lexical_app(store, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("2")
        await settle(app, pilot)
        review: ReviewScreen = app.screen
        cells = {p: row(review, p) for p in (ANN, BOARD, SHOP)}
        assert cells[ANN]["ok"] == "✓"
        assert cells[BOARD]["ok"] == "○" and "⚠ compound" in cells[BOARD]["note"]
        assert cells[SHOP]["ok"] == "○" and cells[SHOP]["note"] == "ask: low evidence · 1 unforgotten"
        assert set(review.review.selection()) == {ANN}  # the held ones are neither approved nor skipped

        await pilot.press("A")
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmModal)
        body = app.screen.body.plain
        assert f"archive {ANN}" in body and "1 commit(s) plus one ledger commit" in body
        assert f"Not approved yet, left for later (space approves): {BOARD}, {SHOP}" in body
        assert f"retract {BOARD}" not in body and f"retract {SHOP}" not in body and "Skipped" not in body
        await pilot.click("#confirm")
        await settle(app, pilot, rounds=8)
        assert errors(app) == []
        assert (store / BOARD).read_bytes() == board_before and (store / SHOP).read_bytes() == shop_before
        [entry] = [e for e in ledger.read_ledger(app.store) if e.get("action") == "apply"]
        assert sorted(entry["deferred"]) == [BOARD, SHOP] and entry["rejected"] == []
        assert [a["path"] for a in entry["approved"]] == [ANN]

        # the request is partial; its held targets still wait, and space approves one explicitly
        await pilot.press("s")
        await settle(app, pilot)
        assert review.state_filter == "partial" and review.current == REQUEST
        assert row(review, SHOP)["ok"] == "○"
        await show(app, pilot, review, SHOP)
        await pilot.press("space")
        await settle(app, pilot)
        assert row(review, SHOP)["ok"] == "✓" and row(review, BOARD)["ok"] == "○"
        await pilot.press("A")
        await settle(app, pilot)
        assert "1 commit(s) plus one ledger commit" in app.screen.body.plain
        await pilot.click("#confirm")
        await settle(app, pilot, rounds=8)
        assert errors(app) == []
        assert "~~Lee runs the till on Saturdays.~~ [RETRACTED 2025-06-01 r:" in (store / SHOP).read_text()
        assert (store / BOARD).read_bytes() == board_before
        assert [s for s in subjects(store) if s.startswith("palinode ")] == [
            f"palinode retract: {SHOP} (1 mentions) <- {REQUEST}", f"palinode supersede: {ANN} -> {REQUEST}"]


async def test_a_fresh_store_shows_a_plan_before_its_sentences_are_all_segmented(tmp_path, store, monkeypatch):
    import threading

    from tui.conftest import wait_until

    from palinode_core.search.index import SEARCHABLE_BEHIND, SearchIndex

    for i in range(SEARCHABLE_BEHIND + 20):
        (store / f"research/note-{i:03d}.md").parent.mkdir(exist_ok=True)
        (store / f"research/note-{i:03d}.md").write_text(
            memory(f"research/note-{i:03d}.md", f"Budget line {i} was approved.", "2025-05-03T10:00:00+00:00"))
    shown: list[tuple[str, ...]] = []
    ready, segmenting = ReviewScreen._plan_ready, SearchIndex._update_in_child
    release = threading.Event()

    def record_plan(self, review):
        shown.append(tuple(sorted(c.path for c in review.plan.targets)))
        ready(self, review)

    def held(self, progress):  # the sentences are segmented only when the test says so
        release.wait(30)
        segmenting(self, progress)

    monkeypatch.setattr(ReviewScreen, "_plan_ready", record_plan)
    monkeypatch.setattr(SearchIndex, "_update_in_child", held)
    app = lexical_app(store, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        review: ReviewScreen = app.screen
        await wait_until(app, pilot, lambda: review.review is not None)
        # a plan on the chunks alone: most sentences are not segmented yet
        assert review._before_units and app.index.units.behind(app.live.memories) > SEARCHABLE_BEHIND
        assert shown == [(ANN, BOARD, SHOP)]
        release.set()
        await settle(app, pilot)
        # planned again once every sentence is: the same targets
        assert app.index.units.behind(app.live.memories) == 0 and not review._before_units
        assert len(shown) >= 2 and shown[-1] == shown[0], shown
        assert errors(app) == []


def _many_notes(store: Path) -> None:
    from palinode_core.search.index import SEARCHABLE_BEHIND

    (store / "research").mkdir(exist_ok=True)
    for i in range(SEARCHABLE_BEHIND + 20):
        (store / f"research/note-{i:03d}.md").write_text(
            memory(f"research/note-{i:03d}.md", f"Budget line {i} was approved.", "2025-05-03T10:00:00+00:00"))


@pytest.mark.parametrize("history", [False, True])
async def test_a_plan_made_mid_sync_is_planned_again_once_only(tmp_path, store, monkeypatch, history):
    # from an attacker's review: a flag left set while the reviewer looked at history re-planned later
    import threading

    from tui.conftest import wait_until

    from palinode_core.search.index import SearchIndex

    _many_notes(store)
    plans = []
    ready, segmenting = ReviewScreen._plan_ready, SearchIndex._update_in_child
    release = threading.Event()
    monkeypatch.setattr(ReviewScreen, "_plan_ready", lambda self, review: (plans.append(review), ready(self, review)))
    monkeypatch.setattr(SearchIndex, "_update_in_child", lambda self, progress: (release.wait(30), segmenting(self, progress)))
    app = lexical_app(store, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        review: ReviewScreen = app.screen
        await wait_until(app, pilot, lambda: review.review is not None)
        assert review._before_units and app.segmenting
        if history:
            app.show_as_of(app.open_as_of("HEAD"))  # the reviewer looks at history meanwhile
        release.set()
        await wait_until(app, pilot, lambda: not app.segmenting and not app._index_running)
        await settle(app, pilot)
        if history:
            app.action_back_to_now()
            await settle(app, pilot)
        seen = len(plans)
        app.build_index()  # nothing changed: no plan again
        await settle(app, pilot)
        assert len(plans) == seen and not review._before_units
        assert errors(app) == []


async def test_a_failed_index_build_leaves_no_plan_marked_mid_sync(tmp_path, store, monkeypatch):
    import sqlite3

    from palinode_core.search.index import SearchIndex

    _many_notes(store)

    def failing(self, progress):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(SearchIndex, "_update_in_child", failing)
    app = lexical_app(store, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        await settle(app, pilot)
        assert not app.segmenting


def test_a_weak_proposal_says_it_sits_below_the_usual_cut():
    from dataclasses import replace

    from palinode_core.forget.evidence import Evidence
    from palinode_core.forget.resolve import Candidate
    from palinode_tui.render.evidence import evidence_text

    weak = Evidence("sentence", 3, "The boiler service is booked.", (), (), 0.0, 0.36, "user", 0.5, weak=2)
    cand = Candidate("projects/boiler.md", 1, "semantic", (), 0.0, "strike", "", None, ("thorough",), (weak,), False)
    shown = evidence_text(cand, "I row on the river").plain
    assert " ask" in shown and "below the usual cut: number 2 of the nearest in meaning" in shown
    stated = Evidence("sentence", 3, "I row on the river.", ("row", "river"), (), 1.0, 0.9, "user", 0.99)
    strong = evidence_text(replace(cand, evidence=(stated,), preapproved=True), "I row on the river").plain
    assert "strong" in strong and "below the usual cut" not in strong
