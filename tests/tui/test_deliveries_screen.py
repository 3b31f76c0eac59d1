"""The Deliveries screen (issue 26): reached from Review with `v` for the
selected request, it lists what Palinode's retrieval log says was delivered of
the preference (before, in the exposure window, after the apply: a leak), and
drills down to the delivered version and its diff against today. Trace shows
how often the memory was delivered. Rows are shaped as Palinode 0.23's
RetrievalLogger writes them (tests/compat/test_deliveries.py writes them with
its own code)."""
from __future__ import annotations

import hashlib
import json

from rich.text import Text
from textual.widgets import DataTable, Static

from helpers import Clock, make_git_store, palinode_file
from palinode_core.ops import lifecycle
from palinode_core.ops.apply import apply
from palinode_core.storage.store import Store
from palinode_tui.app import PalinodeApp
from palinode_tui.screens.deliveries import DeliveriesScreen
from palinode_tui.screens.review import ReviewScreen
from palinode_tui.screens.trace import TraceScreen
from tui.conftest import errors, settle

SIZE = (120, 36)
ANN = palinode_file({"id": "people-ann"}, "Ann Lee likes tea. She runs on Sundays.")


def row(when: str, path: str, session: str, **receipt) -> str:
    event = {"timestamp": when, "file_path": path, "chunk_id": None, "mode": "explicit", "source": "palinode_search",
             "query": "who likes tea", "rank": 0, "score": 0.5, "session_id": session, "bundle_id": None,
             "policy_version": None, "scope": None, "revision": None, "revision_basis": None, "disposition": None,
             "lineage_group": None, "coverage": None, "next_transition": None, "confidence": None, **receipt}
    return json.dumps(event, separators=(",", ":"))


def store_with_deliveries(tmp_path, monkeypatch):
    def at(when: str) -> None:
        monkeypatch.setenv("GIT_AUTHOR_DATE", when)
        monkeypatch.setenv("GIT_COMMITTER_DATE", when)

    at("2025-06-01T09:00:00+00:00")
    root = make_git_store(tmp_path / "w", {
        "people/ann.md": ANN,
        "insights/forget-ann.md": palinode_file({"id": "insights-forget-ann"}, "Please forget that I know Ann Lee."),
    })
    old = (root / "people/ann.md").read_bytes()
    at("2025-06-01T12:00:00+00:00")
    store = Store(root, clock=Clock())
    apply(store, lifecycle.plan_retract(store, "people/ann.md", "I know Ann Lee",
                                        superseded_by="insights/forget-ann.md"))
    (root / ".audit").mkdir()
    (root / ".audit/retrievals.jsonl").write_text("\n".join([
        row("2025-06-01T10:00:00+00:00", "people/ann.md", "s-window"),
        row("2025-06-01T14:00:00+00:00", str(root / "people/ann.md"), "s-leak",
            revision=hashlib.sha256(old).hexdigest(), revision_basis="file_sha256", bundle_id="b1"),
        row("2025-06-01T15:00:00+00:00", "people/ann.md", "s-struck"),
    ]) + "\n")
    return root


def text_of(widget: Static) -> str:
    rendered = widget.render()
    return rendered.plain if isinstance(rendered, Text) else str(rendered)


async def test_deliveries_from_review_show_the_window_the_leak_and_the_delivered_version(tmp_path, monkeypatch):
    root = store_with_deliveries(tmp_path, monkeypatch)
    app = PalinodeApp(root, vectors=False, clock=Clock(), cache_dir=tmp_path / "cache", watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("2")
        await settle(app, pilot)
        review: ReviewScreen = app.screen
        await pilot.press("s", "s")  # pending -> partial -> applied
        await settle(app, pilot)
        table = review.query_one("#requests", DataTable)
        table.focus()
        table.move_cursor(row=review.request_rows.index("insights/forget-ann.md"))
        await settle(app, pilot)
        await pilot.press("v")
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, DeliveriesScreen) and screen.request == "insights/forget-ann.md"
        title = text_of(screen.query_one("#deliveries-title", Static))
        assert "1 in window, 1 leak, 1 retracted" in title
        assert "exposure window: 2025-06-01T09:00:00+00:00 → 2025-06-01T12:00:00+00:00" in title
        classes = {r["session_id"]: r["class"] for r in screen.rows.values()}
        assert classes == {"s-window": "exposure_window", "s-leak": "leak", "s-struck": "delivered_retracted"}
        listed = screen.query_one("#deliveries", DataTable)
        assert listed.row_count == 3
        listed.move_cursor(row=list(screen.rows).index(next(k for k, r in screen.rows.items()
                                                            if r["session_id"] == "s-leak")))
        await settle(app, pilot)
        assert "leak: " in text_of(screen.query_one("#delivery-head", Static))
        assert "~~Ann Lee likes tea.~~" in screen.shown_text  # the delivered version against today
        await pilot.press("enter")
        await settle(app, pilot)
        assert screen.shown_text.encode() == ANN.encode()  # the version delivered, as git holds it
        await pilot.press("escape")
        await settle(app, pilot)
        assert app.screen is review
    assert not errors(app)


async def test_trace_counts_the_deliveries_of_a_memory(tmp_path, monkeypatch):
    root = store_with_deliveries(tmp_path, monkeypatch)
    app = PalinodeApp(root, vectors=False, clock=Clock(), cache_dir=tmp_path / "cache", watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        app.push_screen(TraceScreen("people/ann.md"))
        await settle(app, pilot)
        assert "delivered 3 time(s)" in text_of(app.screen.query_one("#trace-deliveries", Static))
    assert not errors(app)


async def test_the_time_column_shows_the_time_zone(tmp_path, monkeypatch):
    """Each delivery's time in the user's zone with its offset (the log's are UTC)."""
    import time

    root = store_with_deliveries(tmp_path, monkeypatch)
    monkeypatch.setenv("TZ", "Europe/Berlin")
    time.tzset()
    try:
        app = PalinodeApp(root, vectors=False, clock=Clock(), cache_dir=tmp_path / "cache", watch=False)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            app.push_screen(DeliveriesScreen("insights/forget-ann.md"))
            await settle(app, pilot)
            table = app.screen.query_one("#deliveries", DataTable)
            times = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
            assert times == ["2025-06-01 12:00 +02:00", "2025-06-01 16:00 +02:00", "2025-06-01 17:00 +02:00"]
        assert not errors(app)
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


async def test_trace_counts_deliveries_logged_under_the_memorys_old_name(tmp_path, monkeypatch):
    from helpers import git

    root = store_with_deliveries(tmp_path, monkeypatch)
    monkeypatch.setenv("GIT_AUTHOR_DATE", "2025-06-02T09:00:00+00:00")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2025-06-02T09:00:00+00:00")
    git(root, "mv", "people/ann.md", "people/ann-lee.md")
    git(root, "commit", "-q", "-m", "renamed")
    with (root / ".audit/retrievals.jsonl").open("a") as fh:
        fh.write(row("2025-06-02T10:00:00+00:00", "people/ann-lee.md", "s-new-name") + "\n")
    app = PalinodeApp(root, vectors=False, clock=Clock(), cache_dir=tmp_path / "cache", watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        app.push_screen(TraceScreen("people/ann-lee.md"))
        await settle(app, pilot)
        assert "delivered 4 time(s)" in text_of(app.screen.query_one("#trace-deliveries", Static))
    assert not errors(app)
