"""Residue: a reviewer strikes one chosen live sentence by hand for the
preference's request (previewed, confirmed, one commit, exactly that
sentence); Cancel writes nothing; what cannot be struck says why and is
offered a flag instead. Lexical only: residue never searches by meaning."""
from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable, Static

from helpers import Clock, git, make_git_store, palinode_file, subjects
from palinode_core.forget import ledger
from palinode_core.storage.paths import history_rel_for
from palinode_tui.app import PalinodeApp
from palinode_tui.screens.residue import ResidueScreen
from palinode_tui.widgets import ConfirmModal, KeyedTable, NoteModal
from tui.conftest import SPEC_FILES, errors, fm, settle

SIZE = (120, 36)
MOON = "projects/moonrise-closeout.md"
BOARD = "projects/board.md"
W = "insights/forget-w.md"
HANDED = "Handed the judging workflow to Wilhelmina Cragg after the June stage flood."


@pytest.fixture
def store(tmp_path) -> Path:
    files = {rel: palinode_file(fm(rel, c), b) for rel, (b, c) in SPEC_FILES.items()}
    files[BOARD] = palinode_file({"id": "projects-board"}, "## Wilhelmina Cragg panel\n\nOther text.")
    return make_git_store(tmp_path / "store", files)


def notes(app) -> list[str]:
    return [n.message for n in app._notifications]


async def open_residue(app, pilot) -> ResidueScreen:
    await settle(app, pilot)
    await pilot.press("4")
    await settle(app, pilot)
    assert isinstance(app.screen, ResidueScreen)
    return app.screen


async def select(app, pilot, residue: ResidueScreen, kind: str, path: str, text: str = "") -> None:
    table = residue.query_one("#mentions", DataTable)
    table.focus()
    table.move_cursor(row=next(i for i, m in enumerate(residue.mentions)
                               if m.kind == kind and m.path == path and m.text.startswith(text)))
    await settle(app, pilot)


async def test_strike_one_live_sentence_for_the_request(tmp_path, store):
    before = (store / MOON).read_text()
    app = PalinodeApp(store, vectors=False, watch=False, clock=Clock(), cache_dir=tmp_path / "cache")
    async with app.run_test(size=SIZE) as pilot:
        residue = await open_residue(app, pilot)
        assert residue.pref == "I know Wilhelmina Cragg"
        neighbour = next(m for m in residue.mentions if m.path == MOON and m.text.startswith("Next steps"))
        assert neighbour.kind == "live"
        await select(app, pilot, residue, "live", MOON, HANDED)

        await pilot.press("S")
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmModal)
        body = app.screen.body.plain
        assert f"For request {W}" in body and f"strike: {HANDED}" in body and "strike: Next steps" not in body
        assert f"+Moonrise Fair 2025 judging pipeline closeout. ~~{HANDED}~~" in body  # the diff
        await pilot.press("enter")  # the focused default: Cancel
        await settle(app, pilot)
        assert subjects(store) == ["initial"] and git(store, "status", "--porcelain") == ""

        await pilot.press("S")
        await settle(app, pilot)
        await pilot.click("#confirm")
        await settle(app, pilot, rounds=8)
        assert errors(app) == []
        assert (store / MOON).read_text() == before.replace(
            HANDED, f"~~{HANDED}~~ [RETRACTED 2025-06-01 r:bcb56233].").replace(
            "id: projects-moonrise-closeout\n", "id: projects-moonrise-closeout\nretracted_prefs:\n- i know wilhelmina cragg\n")
        log = subjects(store)
        assert log == [f"palinode-audit ledger: strike {W}", f"palinode retract: {MOON} (1 mentions) <- {W}", "initial"]
        changed = git(store, "show", "--name-only", "--format=", "HEAD~1").split()
        assert sorted(changed) == sorted([MOON, history_rel_for(MOON)])  # one commit: the memory and its history
        assert any(e.kind == "action" and e.text.startswith(f"strike {MOON}:") and e.commits for e in app.activity)
        # refreshed: the struck sentence is listed as struck, its neighbour is still live
        kinds = {(m.kind, m.text[:20]) for m in residue.mentions if m.path == MOON}
        assert kinds == {("struck", HANDED[:20]), ("live", "Next steps: schedule")}

        await select(app, pilot, residue, "struck", MOON)
        await pilot.press("S")
        await settle(app, pilot)
        assert isinstance(app.screen, ResidueScreen)
        assert any("Nothing to strike" in n and "struck already" in n for n in notes(app))

        # the neighbour too, in a memory now retracted for the pref: the preview names only the new strike
        await select(app, pilot, residue, "live", MOON, "Next steps")
        await pilot.press("S")
        await settle(app, pilot)
        body = app.screen.body.plain
        assert "strike: Next steps" in body and f"strike: {HANDED}" not in body
        await pilot.click("#confirm")
        await settle(app, pilot, rounds=8)
        assert errors(app) == [] and len(subjects(store)) == 5
        assert {m.kind for m in residue.mentions if m.path == MOON} == {"struck"}


async def test_a_hand_strike_is_the_reviewers_decision_in_the_ledger_review_and_report(tmp_path, store):
    """Issue 41: a sentence struck from Residue is recorded with who struck it, and Review, `requests` and the
    report name that person, not "palinode (automatic, unreviewed)"."""
    app = PalinodeApp(store, vectors=False, watch=False, clock=Clock(), cache_dir=tmp_path / "cache")
    async with app.run_test(size=SIZE) as pilot:
        residue = await open_residue(app, pilot)
        await select(app, pilot, residue, "live", MOON, HANDED)
        await pilot.press("S")
        await settle(app, pilot)
        await pilot.click("#confirm")
        await settle(app, pilot, rounds=8)
        assert errors(app) == []
        strike_commit = git(store, "rev-parse", "HEAD~1").strip()
        [record] = [e for e in ledger.read_ledger(app.store) if e.get("action") == "strike"]
        assert record["decided_by"] == "Test Author <author@example.test>"
        assert (record["request"], record["path"], record["text"]) == (W, MOON, HANDED)
        assert [a["commit"] for a in record["approved"]] == [strike_commit]
        state = next(st for st in app.live.request_states() if st.path == W)
        assert state.state == "partial" and state.last_decision is not None and state.last_decision["action"] == "strike"
        data = app.live.report(request=W)["requests"][0]
        assert data["resolver"]["by"] == "palinode-audit (reviewed)"
        [target] = [t for t in data["targets"] if t["path"] == MOON]
        assert (target["decision"], target["decided_by"]) == ("approved", "Test Author <author@example.test>")
        [decision] = [d for d in data["decisions"] if d["action"] == "strike"]
        assert decision["by"] == "Test Author <author@example.test>" and decision["text"] == HANDED
        # the Review list says who made the request's last decision
        await pilot.press("2")
        await settle(app, pilot)
        review = app.screen
        review.action_cycle_state()  # pending -> the next filters, until the partial one is listed
        while review.state_filter not in ("partial", "all"):
            review.action_cycle_state()
        await settle(app, pilot)
        table = review.query_one("#requests", KeyedTable)
        assert "Test Author" in str(table.get_row(W)[3])


async def test_what_cannot_be_struck_offers_a_flag(tmp_path, store):
    app = PalinodeApp(store, vectors=False, watch=False, clock=Clock(), cache_dir=tmp_path / "cache")
    async with app.run_test(size=SIZE) as pilot:
        residue = await open_residue(app, pilot)
        await select(app, pilot, residue, "unforgettable", BOARD)
        await pilot.press("S")
        await settle(app, pilot)
        assert isinstance(app.screen, NoteModal)
        assert "cannot be struck (inside a heading)" in app.screen.title_text
        await pilot.press(*"heading needs a hand edit", "enter")
        await settle(app, pilot)
        assert errors(app) == []
        assert subjects(store) == [f"palinode-audit ledger: flag {W}", "initial"]  # filed under the request
        [flag] = [e for e in ledger.read_ledger(app.store) if e.get("action") == "flag"]
        assert (flag["path"], flag["kind"], flag["request"], flag["note"]) == (
            BOARD, "unforgettable", W, "heading needs a hand edit")
        assert flag["text"] == "## Wilhelmina Cragg panel"
        # the flagged row is marked in the list, counted in the summary, its note in the detail (issue 23, 10)
        await settle(app, pilot)
        table = residue.query_one("#mentions", KeyedTable)
        marked = [key for key in table.keys if str(table.get_row(key)[0]) == "⚑"]
        assert [residue.by_key[k].path for k in marked] == [BOARD]
        assert "⚑ 1 flagged" in str(residue.query_one("#residue-summary", Static).render())
        await select(app, pilot, residue, "unforgettable", BOARD)
        assert "flagged: heading needs a hand edit" in str(residue.query_one("#mention-detail", Static).render())

        # a preference no request states: striking needs a request, and says so
        residue.set_pref("I drink oolong tea")
        await settle(app, pilot)
        await select(app, pilot, residue, "live", "insights/pref-tea.md")
        await pilot.press("S")
        await settle(app, pilot)
        assert isinstance(app.screen, ResidueScreen)
        assert any('Striking needs a forget request for "I drink oolong tea"' in n for n in notes(app))
        assert len(subjects(store)) == 2
