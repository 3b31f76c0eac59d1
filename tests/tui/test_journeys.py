"""The main journeys, driven by keys through Textual's Pilot on real git stores."""
from __future__ import annotations

import pytest
from textual.widgets import DataTable, Input, Static

from helpers import Clock, copy_sample_store, git, palinode_file, subjects
from palinode_tui.app import PalinodeApp
from palinode_tui.screens.browse import BrowseScreen
from palinode_tui.screens.review import ReviewScreen
from palinode_tui.widgets import ConfirmModal, NoteModal
from tui.conftest import errors, screen_lines, settle, wait_until

# Only journeys that search or plan by meaning load the model; the rest run with vectors off.
model = pytest.mark.model
one_worker = pytest.mark.xdist_group("model")
SIZE = (120, 36)


def app_for(root, embedder, tmp_path, **kw) -> PalinodeApp:
    kw.setdefault("watch", False)
    kw.setdefault("resolver", "palinode")  # these journeys pin Palinode's plans (knobs, floor flips)
    return PalinodeApp(root, embedder=embedder, clock=Clock(), cache_dir=tmp_path / "cache", **kw)


def lexical_app_for(root, tmp_path, **kw) -> PalinodeApp:
    """For journeys that never search by meaning: the model is never loaded."""
    return app_for(root, None, tmp_path, vectors=False, **kw)


async def test_sample_store_shows_every_memory_and_no_errors(tmp_path):
    root = copy_sample_store(tmp_path / "sample")
    app = lexical_app_for(root, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, BrowseScreen)
        assert sorted(screen.rows) == sorted(p.relative_to(root).as_posix() for p in root.rglob("*.md"))
        assert app.scan.errors == []
        assert "7 shown" in str(screen.query_one("#browse-summary", Static).render())


@model
@one_worker
async def test_filter_status_and_hybrid_search(tmp_path, embedder, spec_store):
    app = app_for(spec_store, embedder, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        screen = app.screen
        await pilot.press("slash", *"oolong")
        await settle(app, pilot)
        assert screen.rows == ["insights/pref-tea.md"]
        for _ in "oolong":
            await pilot.press("backspace")
        await pilot.press(*"judging panel", "enter")
        await settle(app, pilot)
        assert screen.search_hits and "projects/moonrise-closeout.md" in screen.rows
        assert all(arms for arms in screen.search_hits.values())
        await pilot.press("escape")
        await settle(app, pilot)
        assert len(screen.rows) == 4
        await pilot.press("s", "s")  # all -> active -> archived
        await settle(app, pilot)
        assert screen.status_filter == "archived" and screen.rows == []


@model
@one_worker
async def test_review_floor_flip_span_toggle_apply_and_undo(tmp_path, embedder, spec_store):
    root = spec_store
    moon_before = (root / "projects/moonrise-closeout.md").read_bytes()
    app = app_for(root, embedder, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("2")
        await settle(app, pilot)
        review: ReviewScreen = app.screen
        assert review.current == "insights/forget-w.md"
        routes = {c.path: c.route for c in review.review.plan.targets}
        assert routes == {"people/wilhelmina-fair.md": "archive", "projects/moonrise-closeout.md": "strike"}

        # what-if: raise the floor past 0.2857 and the fair note flips to a strike
        review.query_one("#knob-floor", Input).value = "0.3"
        await wait_until(app, pilot, lambda: {c.path: c.route for c in review.review.plan.targets}[
            "people/wilhelmina-fair.md"] == "strike")
        review.query_one("#knob-floor", Input).value = "0.05"
        await settle(app, pilot)
        assert {c.path: c.route for c in review.review.plan.targets}["people/wilhelmina-fair.md"] == "archive"

        # open the strike's diff and untoggle its second span
        table = review.query_one("#candidates", DataTable)
        table.focus()
        table.move_cursor(row=review.candidate_rows.index("projects/moonrise-closeout.md"))
        await pilot.press("d")
        await settle(app, pilot)
        assert type(app.screen).__name__ == "DiffScreen"
        await pilot.press("down", "space")
        await settle(app, pilot)
        assert app.screen.chosen == {0}
        await pilot.press("escape")
        await settle(app, pilot)
        moon_cand = review.review.plan.candidate("projects/moonrise-closeout.md")
        assert review.review.draft.chosen_spans(moon_cand) == {0}

        await pilot.press("A")
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmModal)
        assert app.screen.focused.id == "cancel"  # the default is Cancel
        await pilot.click("#confirm")
        await settle(app, pilot)
        assert [e.text for e in app.activity if e.kind == "error"] == []
        log = subjects(root)
        assert "palinode retract: projects/moonrise-closeout.md (1 mentions) <- insights/forget-w.md" in log
        assert "palinode supersede: people/wilhelmina-fair.md -> insights/forget-w.md" in log
        assert any(e.kind == "action" and e.commits for e in app.activity)
        moon = (root / "projects/moonrise-closeout.md").read_text()
        assert moon.count("[RETRACTED 2025-06-01 r:bcb56233].") == 1

        # undo the strike: the file returns byte-identical
        await pilot.press("3")
        await settle(app, pilot)
        undo = app.screen
        ops = undo.query_one("#undo-ops", DataTable)
        ops.focus()
        row = next(i for i, (kind, item) in enumerate(undo.rows)
                   if kind == "op" and item.op == "retract" and item.path == "projects/moonrise-closeout.md")
        ops.move_cursor(row=row)
        await settle(app, pilot)
        await pilot.press("U")
        await settle(app, pilot)
        assert [e.text for e in app.activity if e.kind == "error"] == []
        assert isinstance(app.screen, ConfirmModal)
        await pilot.click("#confirm")
        await settle(app, pilot)
        assert [e.text for e in app.activity if e.kind == "error"] == []
        assert (root / "projects/moonrise-closeout.md").read_bytes() == moon_before

        # undo the archive: active again with Palinode's restore fields
        row = next(i for i, (kind, item) in enumerate(undo.rows)
                   if kind == "op" and item.op == "supersede" and item.path == "people/wilhelmina-fair.md")
        ops.move_cursor(row=row)
        await settle(app, pilot)
        await pilot.press("U")
        await settle(app, pilot)
        assert [e.text for e in app.activity if e.kind == "error"] == []
        await pilot.click("#confirm")
        await settle(app, pilot)
        fair = app.store.load("people/wilhelmina-fair.md")
        assert fair.status == "active" and fair.meta["restored_from"] == "insights/forget-w.md"
        assert "restored_at" in fair.meta and "superseded_by" not in fair.meta
        assert subjects(root)[0] == "palinode restore: people/wilhelmina-fair.md <- insights/forget-w.md"


@model
@one_worker
async def test_cancel_writes_nothing(tmp_path, embedder, spec_store):
    app = app_for(spec_store, embedder, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("2")
        await settle(app, pilot)
        await pilot.press("A")
        await settle(app, pilot)
        await pilot.press("enter")  # Enter on the focused default: Cancel
        await settle(app, pilot)
        assert subjects(spec_store) == ["initial"]
        assert git(spec_store, "status", "--porcelain") == ""


@model
@one_worker
async def test_dismiss_and_flag(tmp_path, embedder, spec_store):
    root = spec_store
    (root / "projects/board.md").write_text(palinode_file({"id": "projects-board"},
                                                          "## Wilhelmina Cragg panel\n\nOther text."))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "board")
    app = app_for(root, embedder, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("4")
        await settle(app, pilot)
        residue = app.screen
        assert residue.pref == "I know Wilhelmina Cragg"
        kinds = {m.kind for m in residue.mentions}
        assert {"live", "unforgettable", "request"} <= kinds
        table = residue.query_one("#mentions", DataTable)
        table.move_cursor(row=next(i for i, m in enumerate(residue.mentions) if m.kind == "unforgettable"))
        await pilot.press("f")
        await settle(app, pilot)
        assert isinstance(app.screen, NoteModal)
        await pilot.press(*"heading needs a hand edit", "enter")
        await settle(app, pilot)
        assert subjects(root)[0] == "palinode-audit ledger: flag insights/forget-w.md"  # under the pref's request

        await pilot.press("2")
        await settle(app, pilot)
        await pilot.press("X")
        await settle(app, pilot)
        await pilot.press(*"not now", "enter")
        await settle(app, pilot)
        assert subjects(root)[0] == "palinode-audit ledger: dismiss insights/forget-w.md"
        review = app.screen
        assert review.states[0].state == "dismissed"


async def test_live_refresh_after_an_external_write(tmp_path, spec_store):
    app = lexical_app_for(spec_store, tmp_path, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        screen = app.screen
        assert "insights/new-note.md" not in screen.rows
        (spec_store / "insights/new-note.md").write_text(palinode_file({"id": "insights-new"}, "An agent wrote this."))
        await wait_until(app, pilot, lambda: "insights/new-note.md" in screen.rows)
        tea = spec_store / "insights/pref-tea.md"
        tea.write_text(tea.read_text().replace("oolong", "green"))
        await wait_until(app, pilot, lambda: "green tea" in app.scan.memories["insights/pref-tea.md"].body)


@model
@one_worker
async def test_stale_plan_is_replanned_not_applied(tmp_path, embedder, spec_store):
    app = app_for(spec_store, embedder, tmp_path, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("2")
        await settle(app, pilot)
        review = app.screen
        assert errors(app) == []
        before = review.review
        moon = spec_store / "projects/moonrise-closeout.md"
        moon.write_text(moon.read_text() + "\nAn agent appended a line.\n")
        await wait_until(app, pilot, lambda: review.review is not before and review.review is not None
                         and not review.review.stale)
        cand = review.review.plan.candidate("projects/moonrise-closeout.md")
        assert cand.plan.fingerprint == app.store.load("projects/moonrise-closeout.md").fingerprint


async def test_read_only_disables_mutations_in_ui_and_core(tmp_path, spec_store):
    app = lexical_app_for(spec_store, tmp_path, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("2")
        await settle(app, pilot)
        await pilot.press("A", "X")
        await settle(app, pilot)
        assert not isinstance(app.screen, (ConfirmModal, NoteModal))
        assert app.screen.check_action("apply", ()) is False
        from palinode_core.ops import lifecycle
        from palinode_core.ops.apply import apply
        from palinode_core.errors import ReadOnlyError
        with pytest.raises(ReadOnlyError):
            apply(app.store, lifecycle.plan_archive(app.store, "insights/pref-tea.md"))
    assert subjects(spec_store) == ["initial"]


async def test_memory_text_is_never_markup(tmp_path):
    from helpers import make_git_store
    root = make_git_store(tmp_path / "s", {"p/evil.md": palinode_file(
        {"id": "evil", "title": "[bold red]Title[/] [@click=app.quit]x[/]"},
        "[link=file:///etc/passwd]click[/link] \x1b]0;pwned\x07 \x1b[2J body")})
    app = lexical_app_for(root, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        body = str(app.screen.query_one("#detail-body", Static).render())
        fields = str(app.screen.query_one("#detail-fields", Static).render())
        assert "[link=file:///etc/passwd]click[/link]" in body and "\\x1b]0;pwned" in body
        assert "\x1b" not in body
        assert "[bold red]Title[/] [@click=app.quit]x[/]" in fields
        assert app.is_running


async def test_help_and_palette_follow_the_registry(tmp_path, spec_store):
    app = lexical_app_for(spec_store, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("2")
        await settle(app, pilot)
        await pilot.press("f1")
        await settle(app, pilot)
        helps = {desc: text for _key, desc, text in app.screen.rows()}
        assert helps["Apply"] == "Apply the approved targets (confirmed)" and "Browse" in helps
        await pilot.press("escape")
        commands = {c.title: c.help for c in app.get_system_commands(app.screen)}
        assert "Apply" in commands and "Dismiss" in commands and "Browse" in commands
        assert commands["Apply"].startswith("key A · ") and commands["Browse"].startswith("key 1 · ")
        assert commands["Next pane"].startswith("key tab · ")


async def test_keymap_and_theme_are_remembered(tmp_path, spec_store, monkeypatch):
    import yaml
    from palinode_tui.settings import config_path
    config_path().parent.mkdir(parents=True, exist_ok=True)
    config_path().write_text(yaml.safe_dump({"keymap": {"app.review": "f9"}, "theme": "nord"}))
    app = lexical_app_for(spec_store, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert app.theme == "nord"
        await pilot.press("f9")
        await settle(app, pilot)
        assert isinstance(app.screen, ReviewScreen)
        app.theme = "gruvbox"
        await settle(app, pilot)
    assert yaml.safe_load(config_path().read_text())["theme"] == "gruvbox"


@model
@one_worker
async def test_demo_entry_point_opens_the_demo_store(tmp_path, embedder, monkeypatch):
    from palinode_tui.app import build_app
    monkeypatch.chdir(tmp_path)
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    app = build_app(["demo"])
    app.embedder = embedder
    app.cache_dir = tmp_path / "cache"
    assert str(app.store.root).startswith(str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert app.scan.counts()["memories"] >= 20 and app.scan.errors == []
        await pilot.press("2")
        await settle(app, pilot)
        states = {s.path: s.state for s in app.screen.states}
        assert states["insights/forget-w.md"] == "pending" and app.screen.review is not None


def test_bad_store_argument_is_one_clear_line(tmp_path, capsys):
    from palinode_tui.app import main
    assert main([str(tmp_path / "missing")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("palinode-tui: no store at") and err.count("\n") == 1


async def test_interrupted_apply_is_offered_for_recovery_on_open(tmp_path, spec_store):
    import subprocess
    import sys
    from palinode_tui.widgets import RecoveryModal
    script = ("import os, sys\nfrom palinode_core.ops import lifecycle\nfrom palinode_core.ops.apply import apply\nfrom palinode_core.storage.store import Store\n"
              "s = Store(sys.argv[1])\n"
              "def f(step):\n    if step == 'after_file_write': os._exit(9)\n"
              "apply(s, lifecycle.plan_archive(s, 'insights/pref-tea.md'), fault=f)\n")
    original = (spec_store / "insights/pref-tea.md").read_bytes()
    assert subprocess.run([sys.executable, "-c", script, str(spec_store)]).returncode == 9
    assert (spec_store / "insights/pref-tea.md").read_bytes() != original
    app = lexical_app_for(spec_store, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert isinstance(app.screen, RecoveryModal)
        assert "archive insights/pref-tea.md was interrupted after the file write" in app.screen.items[0].summary
        assert app.screen.focused.id == "later"
        await pilot.click("#rollback")
        await settle(app, pilot)
    assert (spec_store / "insights/pref-tea.md").read_bytes() == original
    assert git(spec_store, "status", "--porcelain") == ""


@model
@one_worker
async def test_hybrid_search_lists_only_related_memories_and_says_when_none_is(tmp_path, embedder):
    """Issue 23, item 9 and issue 41: the vector arm ranks every memory; a search lists the memories
    that carry the words and those near the query in meaning, each with its score, never ten
    unrelated ones; with none related it says so. The query stays on screen at 120 columns."""
    from palinode_core.demo import build_demo_store

    root = tmp_path / "demo"
    build_demo_store(root)
    app = app_for(root, embedder, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        screen = app.screen
        await wait_until(app, pilot, lambda: app.index_mode == "hybrid", attempts=600)

        async def search(query: str) -> str:
            box = screen.query_one("#browse-filter", Input)
            box.value = ""
            box.focus()
            await pilot.press(*query, "enter")
            await settle(app, pilot)
            return str(screen.query_one("#browse-summary", Static).render())

        summary = await search("poker")  # one memory names it; the nearest others are about sneakers and tea
        assert screen.rows == ["insights/forget-poker.md"], screen.search_hits
        assert "search (hybrid): poker · 1 related" in summary and "unrelated not listed" in summary, summary
        assert any(" search (hybrid): poker · 1 related" in line for line in screen_lines(app))  # not cut off
        await search("database")  # no memory says the word; the database decision is near it in meaning
        assert screen.rows == ["decisions/db-choice-v4.md"], screen.search_hits
        assert screen.search_hits["decisions/db-choice-v4.md"].endswith(" vector"), screen.search_hits
        scores = [float(m.split()[0]) for m in (await search("judging") and screen.search_hits).values()]
        assert scores == sorted(scores, reverse=True) and all(s > 0 for s in scores)
        assert "projects/moonrise-closeout.md" in screen.rows and len(screen.rows) < 4, screen.search_hits
        summary = await search("quantum chromodynamics")
        assert screen.rows == [] and summary.startswith("no memory mentions quantum chromodynamics"), summary
        assert errors(app) == []
