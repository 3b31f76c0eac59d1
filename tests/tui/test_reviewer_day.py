"""A reviewer's day without a stumble (issue 23): each numbered item, keyboard
only, through Textual's Pilot on real git stores (lexical: no model)."""
from __future__ import annotations

from helpers import Clock
from textual.widgets import Input
from tui.conftest import errors, settle, wait_until

from palinode_tui.app import PalinodeApp
from palinode_tui.screens.residue import ResidueScreen
from palinode_tui.screens.review import ReviewScreen

SIZE = (120, 36)
PREF = "I know Wilhelmina Cragg"


def lexical_app(root, tmp_path, **kw) -> PalinodeApp:
    kw.setdefault("watch", False)
    return PalinodeApp(root, embedder=None, vectors=False, clock=Clock(), cache_dir=tmp_path / "cache", **kw)


async def review_ready(app, pilot) -> ReviewScreen:
    await settle(app, pilot)
    await pilot.press("2")
    await settle(app, pilot)
    review = app.screen
    assert isinstance(review, ReviewScreen) and review.review is not None, errors(app)
    return review


async def test_1_residue_for_this_request_opens_on_a_fresh_residue_screen(tmp_path, spec_store):
    app = lexical_app(spec_store, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await review_ready(app, pilot)
        await pilot.press("x")  # Residue was never opened before
        await settle(app, pilot)
        residue = app.screen
        assert isinstance(residue, ResidueScreen)
        assert residue.pref == PREF and residue.query_one("#residue-pref", Input).value == PREF
        assert any(m.path == "people/wilhelmina-fair.md" for m in residue.mentions)
        assert errors(app) == []


async def test_3_every_knob_and_the_residue_field_are_reached_by_tab(tmp_path, spec_store):
    app = lexical_app(spec_store, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        review = await review_ready(app, pilot)
        reached = []
        for _ in range(8):
            await pilot.press("tab")
            reached.append(review.focused.id if review.focused is not None else None)
        assert {"knob-floor", "knob-max", "knob-shared", "candidates", "requests"} <= set(reached)
        review.query_one("#knob-max", Input).focus()
        await pilot.press("escape")  # leaves the field for a pane, not another field
        assert not isinstance(review.focused, Input)
        await pilot.press("4")
        await settle(app, pilot)
        residue = app.screen
        for _ in range(4):
            await pilot.press("tab")
            if residue.focused is not None and residue.focused.id == "residue-pref":
                break
        assert residue.focused is not None and residue.focused.id == "residue-pref"


async def test_4_palinode_applied_then_partly_undone_here_is_partial(tmp_path, spec_store):
    from textual.widgets import DataTable

    from palinode_core.session import Session
    from palinode_tui.widgets import ConfirmModal

    # Palinode's own apply: its commits, no ledger record of ours
    session = Session.open(spec_store, vectors=False)
    session.apply(session.plan_op("archive", "people/wilhelmina-fair.md", superseded_by="insights/forget-w.md"))
    session.apply(session.plan_op("retract", "projects/moonrise-closeout.md", pref=PREF))
    assert [s.state for s in session.request_states()] == ["applied"]
    app = lexical_app(spec_store, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("3")
        await settle(app, pilot)
        undo = app.screen
        ops = undo.query_one("#undo-ops", DataTable)
        row = next(i for i, (kind, item) in enumerate(undo.rows) if kind == "op" and item.op == "supersede")
        ops.move_cursor(row=row)
        await settle(app, pilot)
        await pilot.press("U")
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmModal)
        await pilot.click("#confirm")
        await settle(app, pilot)
        assert errors(app) == []
        assert [(st.path, st.state) for st in app.live.request_states()] == [("insights/forget-w.md", "partial")]
        requests = [item for kind, item in undo.rows if kind == "request"]
        assert [st.state for st in requests] == ["partial"]


def header_text(review: ReviewScreen) -> str:
    from textual.widgets import Static
    return str(review.query_one("#plan-header", Static).render())


async def test_2_the_resolver_switch_and_knobs_that_mean_what_they_show(tmp_path, spec_store):
    app = lexical_app(spec_store, tmp_path)  # the thorough resolver, the app's default
    async with app.run_test(size=SIZE) as pilot:
        review = await review_ready(app, pilot)
        assert review.review.plan.resolver == "thorough"
        assert "routes: thorough" in header_text(review)
        assert str(review.query_one("#knobs-for").render()) == "Palinode's plan:"
        # the thorough gauge marks no floor: nothing underlined, nothing drawn as past it
        cells = review.query_one("#candidates").get_row("people/wilhelmina-fair.md")
        assert not any("underline" in str(span.style) for span in cells[5].spans)
        await pilot.press("r")
        await settle(app, pilot)
        assert review.review.plan.resolver == "palinode"
        assert "archive: coverage ≥ floor 0.05" in header_text(review)
        routes = {c.path: c.route for c in review.review.plan.targets}
        assert routes["people/wilhelmina-fair.md"] == "archive"  # 0.2857 ≥ 0.05
        review.query_one("#knob-floor", Input).value = "0.3"
        await settle(app, pilot)
        routes = {c.path: c.route for c in review.review.plan.targets}
        assert routes["people/wilhelmina-fair.md"] == "strike"  # 0.2857 < 0.3: the floor governs here
        assert "floor 0.3" in header_text(review)
        await pilot.press("r")
        await settle(app, pilot)
        assert review.review.plan.resolver == "thorough" and errors(app) == []


async def test_14_esc_from_the_diff_returns_focus_to_the_plan_table(tmp_path, spec_store):
    from palinode_tui.screens.diff import DiffScreen

    app = lexical_app(spec_store, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        review = await review_ready(app, pilot)
        review.query_one("#candidates").focus()
        await pilot.press("down")
        await settle(app, pilot)
        review.query_one("#candidate-detail-box").focus()  # the diff is opened from any pane
        await pilot.press("d")
        await settle(app, pilot)
        assert isinstance(app.screen, DiffScreen)
        await pilot.press("escape")
        await settle(app, pilot)
        assert app.screen is review and app.focused is not None and app.focused.id == "candidates"


async def test_14_the_replanning_toast_is_said_once_and_never_over_a_dialog(tmp_path, spec_store):
    from tui.conftest import wait_until

    from palinode_tui.widgets.modals import ConfirmModal

    app = lexical_app(spec_store, tmp_path, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        review = await review_ready(app, pilot)
        target = spec_store / "people/wilhelmina-fair.md"

        def toasts() -> int:
            return sum("re-planning" in n.message for n in app._notifications)

        before = toasts()
        target.write_text(target.read_text() + "\nOne line more.\n")
        # the toast, not the STALE state: on a busy machine the re-plan can end between two polls
        await wait_until(app, pilot, lambda: toasts() > before)
        await wait_until(app, pilot, lambda: review.review is not None and not review.review.stale)
        assert toasts() == before + 1
        await pilot.press("A")  # the apply dialog
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmModal)
        seen = app.live_scan.memories["people/wilhelmina-fair.md"].fingerprint
        target.write_text(target.read_text() + "\nAnd another.\n")
        await wait_until(  # the app has read the change
            app, pilot, lambda: app.live_scan.memories["people/wilhelmina-fair.md"].fingerprint != seen
        )
        await settle(app, pilot)
        assert toasts() == before + 1  # the dialog's buttons stay clear


def test_14_the_first_plan_says_what_it_waits_for():
    from palinode_tui.screens.review_view import plan_header

    shown = plan_header(None, "insights/forget-w.md", False, "indexing the store's sentences for search").plain
    assert shown == "planning: indexing the store's sentences for search…"
    assert plan_header(None, None, False, "reading the store").plain == "select a forget request"


async def test_review_lists_who_made_each_request_last_decision(tmp_path):
    """Team review (issue 25): a decision made in another clone shows its decider once synced."""
    import subprocess
    import sys

    from palinode_core.demo import build_demo_store

    root = tmp_path / "demo"
    build_demo_store(root)
    subprocess.run(["git", "-C", str(root), "config", "user.name", "Chidi Reviewer"], check=True)
    subprocess.run(["git", "-C", str(root), "config", "user.email", "chidi@example.org"], check=True)
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith(("GIT_AUTHOR_", "GIT_COMMITTER_"))}
    subprocess.run([sys.executable, "-m", "palinode_core", "dismiss", str(root), "insights/forget-tea.md",
                    "--note", "work-related", "--yes"], check=True, capture_output=True, env=env)
    app = lexical_app(root, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        review = await review_ready(app, pilot)
        for _ in range(4):  # pending -> ... -> all
            if review.state_filter == "all":
                break
            await pilot.press("s")
            await settle(app, pilot)
        table = review.query_one("#requests")
        row = [str(cell) for cell in table.get_row("insights/forget-tea.md")]
        assert row[0] == "dismissed" and row[3] == "dismiss · Chidi Reviewer", row
        assert errors(app) == []


async def test_9_browse_by_category_score_first_and_an_empty_list_shows_no_memory(tmp_path):
    """Issue 23, item 9: a category view, the match column where 120 columns never cut it,
    the detail pane emptied when nothing is listed, and reached by Tab."""
    from textual.widgets import DataTable, Input, Static

    from palinode_core.demo import build_demo_store
    from palinode_tui.screens.browse import BrowseScreen

    root = tmp_path / "demo"
    build_demo_store(root)
    app = lexical_app(root, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        browse = app.screen
        assert isinstance(browse, BrowseScreen)
        table = browse.query_one("#memories", DataTable)
        assert [str(c.label) for c in table.columns.values()][:2] == ["status", "match"]
        everything = len(browse.rows)
        await pilot.press("c")  # the first category
        await settle(app, pilot)
        first = browse.category
        assert first is not None and 0 < len(browse.rows) < everything
        assert all(r.startswith(first + "/") or app.scan.memories[r].category == first for r in browse.rows)
        assert f"category: {first}" in str(browse.query_one("#browse-summary", Static).render())
        seen = {first}
        for _ in range(10):
            await pilot.press("c")
            await settle(app, pilot)
            if browse.category is None:
                break
            seen.add(browse.category)
        assert browse.category is None and len(browse.rows) == everything and "people" in seen
        reached = set()
        for _ in range(4):
            await pilot.press("tab")
            reached.add(browse.focused.id if browse.focused is not None else None)
        assert {"browse-detail", "memories", "browse-filter"} <= reached
        browse.query_one("#browse-filter", Input).value = "no memory says this zqxj"
        await settle(app, pilot)
        assert browse.rows == [] and browse.shown_path is None
        assert "No memory shown" in str(browse.query_one("#detail-fields", Static).render())
        assert errors(app) == []


async def test_8_a_decided_request_shows_its_record_or_why_it_is_partial(tmp_path):
    """Issue 23, item 8: an applied request with nothing left shows what was done (operations,
    spans, skips, undos) instead of an empty plan, and p plans again; a partial one says why
    and how to finish over the plan of what remains."""
    import json
    import subprocess
    import sys

    from textual.widgets import Static

    from palinode_core.demo import build_demo_store

    root = tmp_path / "demo"
    build_demo_store(root)
    app = lexical_app(root, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        review = await review_ready(app, pilot)
        await pilot.press("s", "s")  # pending -> partial -> applied
        await settle(app, pilot)
        review.select_request("insights/forget-poker.md")
        await wait_until(app, pilot, lambda: review.record is not None)
        assert review.review is None, "its record, not an empty plan"
        header = str(review.query_one("#plan-header", Static).render())
        assert "its record: nothing remains to plan" in header and "p plans again" in header
        assert {t["path"] for t in review.record["targets"]} == {"insights/pref-poker.md", "projects/weekly-plan.md"}
        await pilot.press("p")
        await wait_until(app, pilot, lambda: review.review is not None)
        assert review.record is None and not review.review.plan.actionable
        assert errors(app) == []

    ops = json.loads(subprocess.run([sys.executable, "-m", "palinode_core", "--json", "operations", str(root)],
                                    capture_output=True, text=True, check=True).stdout)["operations"]
    strike = next(o for o in ops if o["path"] == "projects/weekly-plan.md" and o["op"] == "retract")
    subprocess.run([sys.executable, "-m", "palinode_core", "undo", str(root), strike["commit"], "--yes"],
                   check=True, capture_output=True)  # forget-poker is now partial
    app = lexical_app(root, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        review = await review_ready(app, pilot)
        await pilot.press("s")  # pending -> partial
        await settle(app, pilot)
        review.select_request("insights/forget-poker.md")
        await wait_until(app, pilot, lambda: review.review is not None
                         and review.review.plan.request.path == "insights/forget-poker.md")
        header = str(review.query_one("#plan-header", Static).render())
        assert "partial: part of it was undone" in header and "approve what remains" in header
        assert "projects/weekly-plan.md" in {c.path for c in review.review.plan.actionable}
        assert errors(app) == []
