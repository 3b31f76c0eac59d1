"""Audit across time in the app, on the real demo store: the views as of a
date or a commit (read from git, worktree untouched, every mutation refused
with its reason), back to now, a memory's timeline with the diff between two
marked points, and the audit report exported as md, html and json."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import jsonschema
import pytest
from helpers import ROOT, Clock, git, palinode_file
from textual.widgets import Input, RadioButton, Static
from tui.conftest import errors, settle, wait_until

from palinode_core.demo import build_demo_store
from palinode_core.storage.snapshot import is_memory_path
from palinode_tui.app import PalinodeApp
from palinode_tui.screens.browse import BrowseScreen
from palinode_tui.screens.review import ReviewScreen
from palinode_tui.screens.timeline import TimelineScreen
from palinode_tui.widgets import AsOfBanner, ConfirmModal, NoteModal
from palinode_tui.widgets.asof_modal import AsOfModal
from palinode_tui.widgets.export_modal import ExportModal

SIZE = (120, 36)
SCHEMA = json.loads((ROOT / "docs" / "report-schema.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def demo_template(tmp_path_factory):
    root = tmp_path_factory.mktemp("asof") / "demo"
    build_demo_store(root)
    return root


@pytest.fixture
def demo(demo_template, tmp_path):
    return shutil.copytree(demo_template, tmp_path / "demo", symlinks=True)


def app_for(root, tmp_path, **kw) -> PalinodeApp:
    kw.setdefault("watch", False)
    return PalinodeApp(root, vectors=False, clock=Clock(), cache_dir=tmp_path / "cache", resolver="palinode", **kw)


def worktree_state(root) -> tuple[dict[str, bytes], str, str, bytes]:
    """Every worktree file's bytes, git status, HEAD and the index file."""
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
             if p.is_file() and ".git" not in p.relative_to(root).parts}
    return (files, git(root, "status", "--porcelain", "--untracked-files=all"), git(root, "rev-parse", "HEAD"),
            (root / ".git" / "index").read_bytes())


def notes(app) -> list[str]:
    return [n.message for n in app._notifications]


async def go_as_of(app, pilot, text: str) -> None:
    await pilot.press("at")
    await settle(app, pilot)
    assert isinstance(app.screen, AsOfModal)
    app.screen.query_one("#as-of", Input).value = text
    await pilot.press("enter")
    await settle(app, pilot)


def banner(app) -> str:
    widget = app.screen.query_one(AsOfBanner)
    return str(widget.render()) if widget.display else ""


async def test_as_of_an_early_date_shows_that_store_refuses_mutations_and_touches_nothing(tmp_path, demo):
    before = worktree_state(demo)
    commits = git(demo, "rev-list", "--count", "HEAD")
    rev = git(demo, "rev-list", "-1", "--before=2025-04-05T23:59:59+00:00", "HEAD").strip()
    app = app_for(demo, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        browse: BrowseScreen = app.screen
        live_rows = list(browse.rows)
        assert "insights/pref-gym.md" in live_rows and banner(app) == ""
        await go_as_of(app, pilot, "2025-04-05")
        assert app.screen is browse and app.as_of is not None and app.as_of.commit == rev
        listed = {p for p in git(demo, "ls-tree", "-r", "-z", "--name-only", rev).split("\0")
                  if p and is_memory_path(p) and not p.endswith("-history.md")}
        assert set(browse.rows) == listed and len(listed) == 4
        assert "insights/pref-gym.md" not in browse.rows  # saved on 2025-04-14: not there yet
        for rel in browse.rows:
            shown = app.scan.memories[rel].text.encode("utf-8")
            assert shown == subprocess.run(["git", "-C", str(demo), "show", f"{rev}:{rel}"], capture_output=True,
                                           check=True).stdout, rel
        # the detail pane reads the body of that point
        fair = "people/wilhelmina-fair.md"
        _select_row(app, "#memories", browse.rows, fair)
        then = app.scan.memories[fair].body.strip().splitlines()[-1]
        await wait_until(app, pilot, lambda: then in str(browse.query_one("#detail-body", Static).render()))
        assert f"AS OF 2025-04-05 09:00 · {rev[:7]} · read-only" in banner(app)

        # every mutation key says why and writes nothing, on every screen
        await pilot.press("R")
        await settle(app, pilot)
        assert browse.check_action("restore", ()) is None  # shown, disabled
        for key, screen_key in (("A", "2"), ("X", "2"), ("f", "4"), ("U", "3"), ("W", "3")):
            await pilot.press(screen_key)
            await settle(app, pilot)
            assert f"AS OF 2025-04-05 09:00 · {rev[:7]}" in banner(app)
            app._notifications.clear()
            await pilot.press(key)
            await settle(app, pilot)
            assert not isinstance(app.screen, (ConfirmModal, NoteModal)), key
            assert any(n.startswith(f"Viewing the store as of 2025-04-05 09:00 · {rev[:7]}: switch back to now "
                                    "(ctrl+n) to change anything.") for n in notes(app)), (key, notes(app))
        assert errors(app) == []
        assert worktree_state(demo) == before and git(demo, "rev-list", "--count", "HEAD") == commits

        # back to now: the live store again, no banner
        await pilot.press("1", "ctrl+n")
        await settle(app, pilot)
        assert app.as_of is None and banner(app) == ""
        assert sorted(app.screen.rows) == sorted(live_rows)
    assert worktree_state(demo) == before


async def test_a_point_that_cannot_be_read_is_one_line_and_changes_nothing(tmp_path, demo):
    app = app_for(demo, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        rows = list(app.screen.rows)
        for bad, said in (("2025-13-45", "cannot read the date"), ("no-such-branch", "no commit 'no-such-branch'"),
                          ("2020-01-01", "no commit at or before 2020-01-01"), ("--output=x", "not a revision")):
            await go_as_of(app, pilot, bad)
            modal = app.screen
            assert isinstance(modal, AsOfModal), bad
            line = str(modal.query_one("#as-of-line", Static).render())
            assert said in line and "\n" not in line.strip(), (bad, line)
            assert app.as_of is None and app.scan is not None
            await pilot.press("escape")
            await settle(app, pilot)
        assert isinstance(app.screen, BrowseScreen) and app.screen.rows == rows
        # a bad point while as of keeps the point shown
        await go_as_of(app, pilot, "HEAD~5")
        shown = app.as_of
        assert shown is not None and shown.commit == git(demo, "rev-parse", "HEAD~5").strip()
        await go_as_of(app, pilot, "HEAD~999")
        assert isinstance(app.screen, AsOfModal) and app.as_of == shown
        # an empty point is now
        app.screen.query_one("#as-of", Input).value = ""
        await pilot.press("enter")
        await settle(app, pilot)
        assert app.as_of is None and sorted(app.screen.rows) == sorted(rows)
        assert errors(app) == []


async def test_live_changes_do_not_replace_the_view_as_of_a_point(tmp_path, demo):
    app = app_for(demo, tmp_path, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await go_as_of(app, pilot, "2025-04-10")
        browse = app.screen
        then = list(browse.rows)
        (demo / "insights/new-note.md").write_text(palinode_file({"id": "insights-new"}, "An agent wrote this."))
        await wait_until(app, pilot, lambda: app.live_scan is not None
                         and "insights/new-note.md" in app.live_scan.memories)
        await settle(app, pilot)
        assert browse.rows == then and "insights/new-note.md" not in app.scan.memories
        assert "AS OF 2025-04-10" in banner(app)
        await pilot.press("ctrl+n")
        await wait_until(app, pilot, lambda: "insights/new-note.md" in browse.rows)
        assert errors(app) == []


def _select_row(app, table_id: str, keys: list[str], key: str) -> None:
    table = app.screen.query_one(table_id)
    table.focus()
    table.move_cursor(row=keys.index(key))


async def test_review_as_of_a_point_lists_the_requests_then_with_their_record(tmp_path, demo):
    app = app_for(demo, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("2")
        await settle(app, pilot)
        review: ReviewScreen = app.screen
        assert {s.path: s.state for s in review.states}["insights/forget-gym.md"] == "withdrawn"
        await go_as_of(app, pilot, "2025-05-13")  # the gym preference archived, not yet restored
        assert {s.path: s.state for s in review.states}["insights/forget-gym.md"] == "applied"
        await pilot.press("s", "s")  # pending -> partial -> applied
        await settle(app, pilot)
        _select_row(app, "#requests", review.request_rows, "insights/forget-gym.md")
        await settle(app, pilot)
        assert review.review is None and review.record is not None  # a record, not a plan
        [target] = review.record["targets"]
        assert (target["path"], target["route"], target["decision"]) == ("insights/pref-gym.md", "archive",
                                                                          "automatic")
        assert review.candidate_rows == ["insights/pref-gym.md"]
        assert "recorded, not planned" in str(review.query_one("#plan-header", Static).render())
        assert review.query_one("#knob-floor", Input).is_disabled
        await pilot.press("ctrl+n")
        await settle(app, pilot)
        assert not review.query_one("#knob-floor", Input).is_disabled
        # now, withdrawn with nothing left to plan: its record as of now (issue 23, item 8), not history's
        await wait_until(app, pilot, lambda: review.record is not None)
        header = str(review.query_one("#plan-header", Static).render())
        assert "recorded, not planned" not in header and "nothing remains to plan" in header
        assert {s.path: s.state for s in review.states}["insights/forget-gym.md"] == "withdrawn"
        assert errors(app) == []


async def test_timeline_lists_each_commit_and_diffs_two_marked_points(tmp_path, demo):
    rel = "insights/pref-gym.md"
    shas = git(demo, "log", "--format=%H", "--", rel).split()  # newest first
    app = app_for(demo, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        _select_row(app, "#memories", app.screen.rows, rel)
        await settle(app, pilot)
        await pilot.press("l")
        await settle(app, pilot)
        timeline: TimelineScreen = app.screen
        assert isinstance(timeline, TimelineScreen)
        table = timeline.query_one("#points")
        assert table.keys == shas and len(shas) == 3
        cells = [[str(c) for c in table.get_row(sha)] for sha in shas]
        assert [row[3] for row in cells] == ["restore", "supersede", "save"]
        assert [row[4] for row in cells] == ["ours", "Palinode", "Palinode"]
        assert [row[5] for row in cells] == ["active", "archived", "active"]
        # the highlighted commit's own change shows at once
        await wait_until(app, pilot, lambda: "+restored_from: insights/forget-gym.md" in timeline.diff_text)
        assert f"what {shas[0][:7]} changed" in str(timeline.query_one("#points-head", Static).render())
        # mark the first save and the supersede: the diff between them, older to newer
        _select_row(app, "#points", table.keys, shas[2])
        await pilot.press("space")
        _select_row(app, "#points", table.keys, shas[1])
        await pilot.press("space")
        await settle(app, pilot)
        assert timeline.marks == [shas[2], shas[1]]
        assert "+status: archived" in timeline.diff_text
        assert "+superseded_by: insights/forget-gym.md" in timeline.diff_text
        assert "insights/pref-gym-history.md" in timeline.diff_text
        shown = timeline.query_one("#points-diff", Static).render()
        line = next(span for span in shown.spans if shown.plain[span.start:span.end] == "+status: archived")
        assert "green" in str(line.style)  # the one diff colourer
        head = str(timeline.query_one("#points-head", Static).render())
        assert f"from {shas[2][:7]}" in head and f"to {shas[1][:7]}" in head
        # a third mark replaces the oldest
        _select_row(app, "#points", table.keys, shas[0])
        await pilot.press("space")
        await settle(app, pilot)
        assert timeline.marks == [shas[1], shas[0]] and "-status: archived" in timeline.diff_text
        await pilot.press("escape")
        await settle(app, pilot)
        # as of before the restore, the timeline stops there
        await go_as_of(app, pilot, shas[1])
        await pilot.press("l")
        await settle(app, pilot)
        assert app.screen.query_one("#points").keys == shas[1:]
        assert "AS OF" in banner(app)
        assert errors(app) == []


async def _export(app, pilot, fmt: str) -> ExportModal:
    await pilot.press("e")
    await settle(app, pilot)
    modal = app.screen
    assert isinstance(modal, ExportModal)
    if fmt != "md":
        await pilot.click(next(b for b in modal.query(RadioButton) if b.name == fmt))
        await settle(app, pilot)
    await pilot.click("#export")
    await settle(app, pilot)
    return modal


async def _applied_poker_in_review(app, pilot) -> ReviewScreen:
    """Review, filtered to applied requests, on the demo's applied forget-poker."""
    await settle(app, pilot)
    await pilot.press("2", "s", "s")  # pending -> partial -> applied
    await settle(app, pilot)
    review: ReviewScreen = app.screen
    assert review.state_filter == "applied"
    _select_row(app, "#requests", review.request_rows, "insights/forget-poker.md")
    await settle(app, pilot)
    return review


async def test_export_writes_the_report_in_each_format_and_never_overwrites_silently(tmp_path, demo, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.chdir(out)
    request = "insights/forget-poker.md"
    app = app_for(demo, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        review = await _applied_poker_in_review(app, pilot)
        for fmt in ("md", "html", "json"):
            await _export(app, pilot, fmt)
            assert isinstance(app.screen, ReviewScreen), fmt
            assert any(f"Wrote {out / f'forget-poker-report.{fmt}'}" in n for n in notes(app)), notes(app)
        data = json.loads((out / "forget-poker-report.json").read_text())
        validator = jsonschema.Draft202012Validator(SCHEMA)
        assert not [e.message for e in validator.iter_errors(data)]
        [row] = data["requests"]
        targets = [t["path"] for t in row["targets"]]
        assert row["path"] == request and targets == ["insights/pref-poker.md", "projects/weekly-plan.md"]
        for fmt in ("md", "html"):
            text = (out / f"forget-poker-report.{fmt}").read_text()
            assert all(t in text for t in targets), fmt
        assert data["as_of"] is None

        # an existing file is kept until the second, explicit press
        (out / "forget-poker-report.md").write_text("mine")
        modal = await _export(app, pilot, "md")
        assert app.screen is modal and "exists: press Overwrite" in str(modal.query_one("#export-line").render())
        assert (out / "forget-poker-report.md").read_text() == "mine"
        app.clear_notifications()  # the earlier exports' toasts sit where the button is on a slow machine
        await settle(app, pilot)
        await pilot.click("#export")
        report = out / "forget-poker-report.md"  # written by a worker once the modal has closed
        await wait_until(app, pilot, lambda: isinstance(app.screen, ReviewScreen) and request in report.read_text())

        # as of a point, the report is of that point
        sha = git(demo, "log", "-1", "--format=%H", "--grep=retract: projects/weekly-plan.md").strip()
        await go_as_of(app, pilot, sha)
        assert review.current == request or review.request_rows
        _select_row(app, "#requests", review.request_rows, request)
        await settle(app, pilot)
        assert review.record is not None and [t["path"] for t in review.record["targets"]] == targets
        (out / "forget-poker-report.json").unlink()
        await _export(app, pilot, "json")
        then = json.loads((out / "forget-poker-report.json").read_text())
        assert then["as_of"]["commit"] == sha and not list(validator.iter_errors(then))
        assert errors(app) == []


async def test_export_redacted_carries_no_preference_text_nor_its_file_name(tmp_path, demo, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.chdir(out)
    app = app_for(demo, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await _applied_poker_in_review(app, pilot)
        await pilot.press("e")
        await settle(app, pilot)
        modal = app.screen
        assert isinstance(modal, ExportModal)
        await pilot.click("#export-redact")
        await settle(app, pilot)
        name = modal.query_one("#export-path").value
        assert name.endswith("-redacted.md") and "poker" not in name
        import hashlib  # nor a hash of the request's path, which a word list undoes (issue 38)
        assert hashlib.sha256(modal.request.encode()).hexdigest()[:8] not in name
        await pilot.click("#export")
        # the modal closes first; the file is written by a worker (renamed into place when whole)
        await wait_until(app, pilot, lambda: isinstance(app.screen, ReviewScreen) and (out / name).exists())
        text = (out / name).read_text()
        assert "poker" not in text.lower() and "friday" not in text.lower() and str(demo) not in text
        assert "r:" in text and "hmac:" in text
        assert errors(app) == []


async def test_export_says_the_chosen_format_in_words_and_warns_of_a_mismatched_name(tmp_path, demo, monkeypatch):
    """Issue 23, item 5: radios not told apart by colour alone, the keyboard starting on the
    chosen one, and Markdown never written into a .json file without a word."""
    from textual.widgets import Input, RadioSet

    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.chdir(out)
    app = app_for(demo, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("2")
        await settle(app, pilot)
        await pilot.press("e")
        await settle(app, pilot)
        modal = app.screen
        assert isinstance(modal, ExportModal)
        labels = {str(b.name): str(b.label) for b in modal.query(RadioButton)}
        assert labels["md"] == "md (chosen)" and labels["json"] == "json"
        radios = modal.query_one("#export-format", RadioSet)
        radios.focus()
        await pilot.press("enter")  # the highlight starts on the chosen format: enter keeps it
        await settle(app, pilot)
        assert radios.pressed_button is not None and radios.pressed_button.name == "md"
        await pilot.press("right", "enter")
        await settle(app, pilot)
        chosen = radios.pressed_button
        assert chosen is not None and chosen.name != "md" and str(chosen.label).endswith("(chosen)")
        await pilot.press("left", "enter")  # back to md
        await settle(app, pilot)
        field = modal.query_one("#export-path", Input)
        field.value = "tea.json"
        field.focus()
        await settle(app, pilot)
        await pilot.press("enter")  # Enter in the name field exports, as the button does
        await settle(app, pilot)
        assert app.screen is modal and "ends in .json but the format is md" in str(
            modal.query_one("#export-line").render())
        assert not (out / "tea.json").exists()
        await pilot.press("enter")  # a second press writes it anyway
        await wait_until(app, pilot, lambda: not isinstance(app.screen, ExportModal))
        assert (out / "tea.json").read_text().startswith("# ")
        assert errors(app) == []


async def test_back_to_now_never_lists_the_past_requests_as_current(tmp_path, demo):
    """Issue 23, item 6: after Ctrl+N, Review showed the historical requests as if current
    until the store was read again; now the list goes at once and says what it reads."""
    app = app_for(demo, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("2")
        await settle(app, pilot)
        review: ReviewScreen = app.screen
        now_states = {s.path: s.state for s in review.states}
        await go_as_of(app, pilot, "2025-05-13")
        then_states = {s.path: s.state for s in review.states}
        assert then_states != now_states
        seen = {}

        def at_the_switch(_as_of) -> None:  # runs right after Review heard of it, before any worker is done
            seen["states"] = {s.path: s.state for s in review.states}
            seen["summary"] = str(review.query_one("#requests-summary", Static).render())

        app.time_signal.subscribe(review, at_the_switch)
        await pilot.press("ctrl+n")
        await wait_until(app, pilot, lambda: "states" in seen)
        shown, summary = seen["states"], seen["summary"]
        assert shown in ({}, now_states), "never the past list under the present"
        if not shown:
            assert "reading the requests of the store as it is now" in summary
        await settle(app, pilot)
        assert {s.path: s.state for s in review.states} == now_states
        assert errors(app) == []


async def test_a_config_broken_while_the_app_runs_stops_no_read(tmp_path, demo):
    """Issue 24, finding 8: the config read again after it changed, broken, is told once and the
    store is still read (Palinode's defaults); its fix is told too. A point in history whose
    config is broken is read the same way."""
    good = (demo / "palinode.config.yaml").read_text()
    app = app_for(demo, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        rows = sorted(app.screen.rows)
        told = lambda: [n for n in notes(app) if "palinode.config.yaml" in n]  # noqa: E731
        (demo / "palinode.config.yaml").write_text("consolidation: [unclosed\n")
        for _ in range(2):  # the second read of the same broken file says nothing new
            app.scan_store({"palinode.config.yaml"})
            await settle(app, pilot)
        assert errors(app) == [] and sorted(app.screen.rows) == rows
        assert len(told()) == 1 and "cannot be read" in told()[0] and "Palinode's defaults" in told()[0]
        (demo / "palinode.config.yaml").write_text(good)
        app.scan_store({"palinode.config.yaml"})
        await settle(app, pilot)
        assert len(told()) == 2 and "read again" in told()[1] and app.store.config_error is None

        (demo / "palinode.config.yaml").write_text("- a list\n")
        git(demo, "commit", "-qam", "a broken config")
        await go_as_of(app, pilot, git(demo, "rev-parse", "HEAD").strip())
        assert app.as_of is not None and errors(app) == [] and sorted(app.screen.rows) == rows
        assert "not a mapping" in told()[-1] and "Palinode's defaults" in told()[-1]


async def test_readme_dates_still_name_the_demo_commit_after_an_apply_today(tmp_path, demo):
    """The demo's history lies before any real use (issue 23, 7): a forget applied
    with today's clock comes after it, so `@ 2025-05-12` is still that day's commit,
    not the HEAD the apply made."""
    that_day = git(demo, "rev-list", "-1", "--before=2025-05-12T23:59:59+00:00", "HEAD").strip()
    subprocess.run([sys.executable, "-m", "palinode_core", "apply", str(demo), "insights/forget-sneakers.md", "--yes",
                    "--lexical", "--resolver", "palinode"], check=True, capture_output=True)  # the real clock
    head = git(demo, "rev-parse", "HEAD").strip()
    assert head != that_day and git(demo, "log", "-1", "--format=%cI", head) > "2026"
    app = PalinodeApp(demo, vectors=False, cache_dir=tmp_path / "cache", resolver="palinode", watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await go_as_of(app, pilot, "2025-05-12")
        assert app.as_of is not None and app.as_of.commit == that_day
        assert "AS OF 2025-05-12" in banner(app) and that_day[:7] in banner(app)


async def test_a_pending_requests_report_holds_the_plan_under_review_as_marked(tmp_path, demo, monkeypatch):
    """Issue 23, item 5: a pending request's exported report was "Targets: none";
    it now holds the plan open in Review, each target as the reviewer marked it,
    said to be unapplied, and valid against the schema."""
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.chdir(out)
    app = PalinodeApp(demo, vectors=False, clock=Clock(), cache_dir=tmp_path / "cache", watch=False)  # thorough
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("2")
        await settle(app, pilot)
        review: ReviewScreen = app.screen
        _select_row(app, "#requests", review.request_rows, "insights/forget-w.md")
        await settle(app, pilot)
        assert review.review is not None and len(review.review.actionable) == 2
        first, second = (c.path for c in review.review.actionable)
        _select_row(app, "#candidates", review.candidate_rows, second)
        await pilot.press("space")  # the reviewer skips one
        await settle(app, pilot)
        await _export(app, pilot, "json")
        await _export(app, pilot, "md")
    data = json.loads((out / "forget-w-report.json").read_text())
    assert not [e.message for e in jsonschema.Draft202012Validator(SCHEMA).iter_errors(data)]
    [row] = data["requests"]
    assert row["state"] == "pending" and row["under_review"]["resolver"] == "thorough"
    decisions = {t["path"]: t["decision"] for t in row["targets"]}
    assert decisions == {first: "proposed_approved", second: "proposed_skipped"}
    assert all(t["commit"] is None for t in row["targets"])
    md = (out / "forget-w-report.md").read_text()
    assert "nothing of it is applied" in md and first in md and "Targets: none" not in md
