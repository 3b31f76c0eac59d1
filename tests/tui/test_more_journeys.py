"""Journeys the first set left out: the error modal, Restore from Browse,
Withdraw from Undo, Redo from Undo, approve/skip with space in Review, and the Trace screen's
explanation. None of them searches by meaning, so they run with vectors off
and never load the embedding model (each asserts it stayed unloaded)."""
from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable, Static, Tree

from helpers import Clock, git, make_git_store, palinode_file, subjects
from palinode_core.forget import ledger
from palinode_core.forget.selection import Choice
from palinode_core.ops import lifecycle
from palinode_core.ops.apply import apply
from palinode_core.session import Session
from palinode_core.undo import withdraw
from palinode_core.storage.store import Store
from palinode_tui.app import PalinodeApp
from palinode_tui.screens.browse import BrowseScreen
from palinode_tui.screens.review import ReviewScreen
from palinode_tui.screens.trace import TraceScreen
from palinode_tui.widgets import ConfirmModal, ErrorModal
from tui.conftest import errors, settle

SIZE = (120, 36)
ANN = palinode_file({"id": "people-ann"}, "Ann Lee likes tea. She runs on Sundays.")


def lexical_app(root, tmp_path, **kw) -> PalinodeApp:
    kw.setdefault("watch", False)
    kw.setdefault("resolver", "palinode")  # these journeys pin Palinode's plans (knobs, floor flips)
    return PalinodeApp(root, vectors=False, clock=Clock(), cache_dir=tmp_path / "cache", **kw)


def text_of(widget: Static) -> str:
    rendered = widget.render()
    return rendered.plain if isinstance(rendered, Text) else str(rendered)


async def select_row(app, pilot, table: DataTable, rows: list, key) -> None:
    table.focus()
    table.move_cursor(row=rows.index(key))
    await settle(app, pilot)


def forgotten_store(tmp_path):
    """A request already applied by hand (as Palinode would): the pref note archived
    and superseded by the request, Ann's sentence struck for it."""
    root = make_git_store(tmp_path / "w", {
        "people/ann.md": ANN,
        "insights/pref-ann.md": palinode_file({"id": "insights-pref-ann"}, "I know Ann Lee well."),
        "insights/forget-ann.md": palinode_file({"id": "insights-forget-ann"}, "Please forget that I know Ann Lee."),
    })
    store = Store(root, clock=Clock())
    apply(store, lifecycle.plan_archive(store, "insights/pref-ann.md", superseded_by="insights/forget-ann.md"))
    apply(store, lifecycle.plan_retract(store, "people/ann.md", "I know Ann Lee",
                                                  superseded_by="insights/forget-ann.md"))
    return root


async def test_restore_from_browse_shows_the_error_modal_then_succeeds(tmp_path):
    root = make_git_store(tmp_path / "s", {"people/ann.md": ANN, "people/bob.md": palinode_file({"id": "b"}, "Bob.")})
    store = Store(root, clock=Clock())
    apply(store, lifecycle.plan_archive(store, "people/ann.md"))
    archived = (root / "people/ann.md").read_bytes()
    app = lexical_app(root, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        browse: BrowseScreen = app.screen
        assert isinstance(browse, BrowseScreen)
        await select_row(app, pilot, browse.query_one("#memories", DataTable), browse.rows, "people/ann.md")
        assert browse.selected == "people/ann.md"

        # another git process holds the index: the restore fails, and says why in a modal
        (root / ".git/index.lock").write_text("")
        await pilot.press("R")
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmModal) and app.screen.title_text == "Restore people/ann.md?"
        await pilot.click("#confirm")
        await settle(app, pilot)
        modal = app.screen
        assert isinstance(modal, ErrorModal)
        assert modal.title_text == "restore people/ann.md"
        assert "another git process holds .git/index.lock" in modal.reason
        assert any(modal.reason in text_of(w) for w in modal.query(Static))  # the reason is on screen
        assert errors(app) == [f"restore people/ann.md: {modal.reason}"]
        assert (root / "people/ann.md").read_bytes() == archived
        await pilot.press("enter")  # closes, back on Browse
        await settle(app, pilot)
        assert app.screen is browse

        # the lock is gone: the same keys restore it
        (root / ".git/index.lock").unlink()
        await pilot.press("R")
        await settle(app, pilot)
        await pilot.click("#confirm")
        await settle(app, pilot)
        assert len(errors(app)) == 1
        assert subjects(root)[0] == "palinode restore: people/ann.md"
        restored = app.store.load("people/ann.md")
        assert restored.status == "active" and "restored_at" in restored.meta
        assert git(root, "status", "--porcelain") == ""
        # a memory that is not archived has nothing to restore: no modal, nothing written
        head = git(root, "rev-parse", "HEAD")
        await select_row(app, pilot, browse.query_one("#memories", DataTable), browse.rows, "people/bob.md")
        await pilot.press("R")
        await settle(app, pilot)
        assert app.screen is browse and git(root, "rev-parse", "HEAD") == head
    assert not app.embedder.ready


async def test_withdraw_from_undo(tmp_path):
    root = forgotten_store(tmp_path)
    request_before = (root / "insights/forget-ann.md").read_bytes()
    app = lexical_app(root, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("3")
        await settle(app, pilot)
        undo = app.screen
        assert undo.rows[0][0] == "request" and undo.rows[0][1].path == "insights/forget-ann.md"
        ops = undo.query_one("#undo-ops", DataTable)
        ops.focus()
        ops.move_cursor(row=0)
        await settle(app, pilot)
        assert isinstance(undo.preview, withdraw.WithdrawPlan)
        await pilot.press("W")
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmModal) and app.screen.title_text == "Withdraw insights/forget-ann.md?"
        assert app.screen.focused.id == "cancel"
        await pilot.click("#confirm")
        await settle(app, pilot)
        assert errors(app) == []
        store = Store(root)
        assert {s.path: s.state for s in Session(store).request_states()}["insights/forget-ann.md"] == "withdrawn"
        assert not store.load("people/ann.md").struck and not store.load("insights/pref-ann.md").archived
        assert (root / "insights/forget-ann.md").read_bytes() != request_before  # the request itself is retired
        log = subjects(root)
        assert any(s.startswith("palinode unretract: people/ann.md") for s in log)
        assert any(s.startswith("palinode restore: insights/pref-ann.md") for s in log)
        assert any(e.kind == "action" and e.text.startswith("withdraw insights/forget-ann.md") and e.commits
                   for e in app.activity)
        assert git(root, "status", "--porcelain") == ""
        # the withdrawn request left the undo list
        assert all(item.path != "insights/forget-ann.md" for kind, item in undo.rows if kind == "request")
    assert not app.embedder.ready


async def test_an_undone_operation_is_marked_and_redone_exactly(tmp_path):
    """One sentence of three approved and struck; undone from the Undo screen, its
    row is dimmed as undone, and R strikes that sentence again and nothing more."""
    root = make_git_store(tmp_path / "r", {
        "people/ann.md": palinode_file({"id": "people-ann", "created_at": "2025-05-01T00:00:00+00:00"},
                                       "I met Ann Lee at school. Ann Lee likes oolong tea. "
                                       "The weather held; Ann Lee ran home."),
        "insights/forget-ann.md": palinode_file({"id": "insights-forget-ann", "created_at": "2025-06-01T00:00:00+00:00"},
                                                "Please forget that I know Ann Lee."),
    })
    session = Session(Store(root, clock=Clock()), vectors=False)
    knobs = session.forget_knobs().with_overrides(min_target_coverage=0.9)
    plan = session.plan("insights/forget-ann.md", knobs, index=session.update_index(), resolver="palinode")
    session.apply_forget(plan, {"people/ann.md": Choice(spans=frozenset({1}))})
    applied = (root / "people/ann.md").read_bytes()
    [original] = [o for o in session.operations() if o.op == "retract"]
    app = lexical_app(root, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("3")
        await settle(app, pilot)
        undo = app.screen
        ops = undo.query_one("#undo-ops", DataTable)
        await select_row(app, pilot, ops, [item for _kind, item in undo.rows], original)
        await pilot.press("U")
        await settle(app, pilot)
        await pilot.click("#confirm")
        await settle(app, pilot)
        assert errors(app) == [] and "~~" not in (root / "people/ann.md").read_text()
        # the request is pending again and leaves the list; the operation stays, dimmed, undone
        assert all(kind == "op" for kind, _item in undo.rows)
        row = next(i for i, (_kind, item) in enumerate(undo.rows) if item.commit == original.commit)
        cells = ops.get_row_at(row)
        assert "undone 20" in cells[3].plain and all("dim" in str(c.style) for c in cells)
        ops.move_cursor(row=row)
        await settle(app, pilot)
        assert undo.preview_kind == "redo"
        head = git(root, "rev-parse", "HEAD")
        await pilot.press("U")  # already undone: nothing happens but a word
        await settle(app, pilot)
        assert not isinstance(app.screen, ConfirmModal) and git(root, "rev-parse", "HEAD") == head
        await pilot.press("R")
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmModal) and app.screen.title_text == "Redo: retract people/ann.md?"
        assert app.screen.focused.id == "cancel"
        await pilot.click("#confirm")
        await settle(app, pilot)
        assert errors(app) == []
    assert (root / "people/ann.md").read_bytes() == applied  # the same clock: byte for byte
    assert subjects(root)[0] == "palinode retract: people/ann.md (1 mentions) <- insights/forget-ann.md"
    assert {s.path: s.state for s in Session(Store(root)).request_states()}["insights/forget-ann.md"] == "applied"
    [redone] = [o for o in Session(Store(root)).operations() if o.commit == original.commit]
    assert redone.undone_by and redone.redone_by == git(root, "rev-parse", "HEAD").strip()


async def test_space_approves_and_skips_targets_in_review(tmp_path):
    root = make_git_store(tmp_path / "s", {
        "people/ann.md": palinode_file({"id": "people-ann", "created_at": "2025-05-01T10:00:00+00:00"},
                                       "Met Ann Lee at the fair."),
        "projects/board.md": palinode_file({"id": "projects-board", "created_at": "2025-05-02T10:00:00+00:00"},
                                           "Ann Lee chairs the board. The budget is fine."),
        "insights/forget-ann.md": palinode_file({"id": "insights-forget-ann", "created_at": "2025-06-01T10:00:00+00:00"},
                                                "Please forget that I know Ann Lee."),
    })
    board_before = (root / "projects/board.md").read_bytes()
    app = lexical_app(root, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("2")
        await settle(app, pilot)
        review: ReviewScreen = app.screen
        assert review.current == "insights/forget-ann.md" and review.review is not None
        actionable = sorted(c.path for c in review.review.plan.actionable)
        assert actionable == ["people/ann.md", "projects/board.md"], [(c.path, c.route, c.reason)
                                                                      for c in review.review.plan.candidates]
        table = review.query_one("#candidates", DataTable)

        def ok_cell(path: str) -> str:
            return str(table.get_row_at(review.candidate_rows.index(path))[0])

        await select_row(app, pilot, table, review.candidate_rows, "projects/board.md")
        assert ok_cell("projects/board.md") == "✓"
        await pilot.press("space")  # skip
        await settle(app, pilot)
        assert review.review.draft.target("projects/board.md").approved is False and ok_cell("projects/board.md") != "✓"
        await pilot.press("space")  # approve again
        await settle(app, pilot)
        assert review.review.draft.target("projects/board.md").approved is True and ok_cell("projects/board.md") == "✓"
        await pilot.press("space")  # and skip it for the apply
        await settle(app, pilot)

        await pilot.press("A")
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmModal)
        body = app.screen.body.plain
        assert "archive people/ann.md" in body and "1 commit(s) plus one ledger commit" in body
        # the skipped target is named only as rejected, never as a change
        assert body.count("projects/board.md") == 1 and "not changed): projects/board.md" in body
        await pilot.click("#confirm")
        await settle(app, pilot)
        assert errors(app) == []
        log = subjects(root)
        assert any("people/ann.md" in s and s.startswith("palinode ") for s in log)
        assert not any("projects/board.md" in s for s in log)
        assert (root / "projects/board.md").read_bytes() == board_before  # skipped: untouched
        [entry] = [e for e in ledger.read_ledger(app.store) if e.get("action") == "apply"]
        assert entry["rejected"] == ["projects/board.md"]  # the skip is on the record
        assert [a["path"] for a in entry["approved"]] == ["people/ann.md"]
    assert not app.embedder.ready


async def test_trace_explains_why_a_memory_is_as_it_is(tmp_path):
    root = forgotten_store(tmp_path)
    app = lexical_app(root, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        browse: BrowseScreen = app.screen
        table = browse.query_one("#memories", DataTable)

        # an archived note: the chain forward and the request that retired it
        await select_row(app, pilot, table, browse.rows, "insights/pref-ann.md")
        await pilot.press("t")
        await settle(app, pilot)
        trace = app.screen
        assert isinstance(trace, TraceScreen) and trace.path == "insights/pref-ann.md"
        why = text_of(trace.query_one("#trace-why", Static))
        assert 'forgotten by insights/forget-ann.md: "I know Ann Lee"' in why
        assert "route archive" in why and "retired: " in why
        assert "history (insights/pref-ann-history.md):" in why and "Superseded by insights/forget-ann.md" in why
        tree = trace.query_one("#chain", Tree)
        forward = tree.root.children[0]
        assert [str(n.label) for n in forward.children] == ["insights/forget-ann.md"]
        assert str(tree.root.children[1].children[0].label) == "nothing points here"
        commits = trace.query_one("#trace-commits", DataTable)
        assert commits.row_count == 2  # the archive and the initial commit
        assert "palinode supersede: insights/pref-ann.md" in str(commits.get_row_at(0)[2])
        diff = text_of(trace.query_one("#trace-diff", Static))
        assert "+superseded_by: insights/forget-ann.md" in diff
        await pilot.press("escape")
        await settle(app, pilot)
        assert app.screen is browse

        # a struck note: which pref, how many markers, which request
        await select_row(app, pilot, table, browse.rows, "people/ann.md")
        await pilot.press("t")
        await settle(app, pilot)
        why = text_of(app.screen.query_one("#trace-why", Static))
        assert 'struck for "i know ann lee"' in why  # as retracted_prefs records it and "1 marker(s)  by insights/forget-ann.md" in why
        assert "nothing (not superseded)" in [str(n.label) for n in app.screen.query_one("#chain", Tree)
                                              .root.children[0].children]

        # the request: what points at it
        await pilot.press("escape")
        await settle(app, pilot)
        await select_row(app, pilot, table, browse.rows, "insights/forget-ann.md")
        await pilot.press("t")
        await settle(app, pilot)
        back = app.screen.query_one("#chain", Tree).root.children[1]
        assert [str(n.label) for n in back.children] == ["insights/pref-ann.md"]
    assert not app.embedder.ready
