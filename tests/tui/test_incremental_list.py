"""Browse refreshes only the changed paths; the list it keeps must always equal
a full filter-and-sort of the store, whatever changed and whatever is filtered."""
from __future__ import annotations

import random

from helpers import Clock, copy_sample_store, palinode_file, write_files
from palinode_tui.app import PalinodeApp
from palinode_tui.screens.browse import BrowseScreen
from tui.conftest import settle, wait_until


async def test_incremental_relist_matches_a_full_relist(tmp_path):
    root = copy_sample_store(tmp_path / "store")
    app = PalinodeApp(root, vectors=False, watch=False, clock=Clock(), cache_dir=tmp_path / "cache")
    rng = random.Random(11)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, BrowseScreen)
        names = sorted(app.scan.memories) + [f"zz/new-{i}.md" for i in range(4)] + ["aa/early.md"]
        filters = [("all", ""), ("archived", ""), ("all", "e"), ("unparseable", ""), ("active", "note"),
                   ("history", "")]
        for step in range(30):
            if step % 5 == 0:
                screen.status_filter, text = filters[(step // 5) % len(filters)]
                screen.text_filter = text
                screen._relist()  # a filter change lists in full
                await settle(app, pilot)
            rel = rng.choice(names)
            action = rng.choice(["archive", "active", "broken", "delete", "strike"])
            path = root / rel
            if action == "delete":
                if path.exists():
                    path.unlink()
            elif action == "broken":
                write_files(root, {rel: "---\ntitle: [unclosed\n---\n"})
            else:
                body = ("~~gone~~ [RETRACTED 2025-06-01 r:0123abcd]." if action == "strike"
                        else f"note {step} about {rel}")
                status = "archived" if action == "archive" else "active"
                write_files(root, {rel: palinode_file({"status": status, "category": rng.choice("abc")}, body)})
            before = app.scan
            app.scan_store({rel})
            await wait_until(app, pilot, lambda: app.scan is not before)
            await settle(app, pilot)
            full = screen._visible(app.scan, None, set())
            assert [r[1] for r in screen._listed] == [r[1] for r in full], (step, rel, action)
            assert [r[0] for r in screen._listed] == [r[0] for r in full]
            assert screen.rows == [r[1] for r in full][:len(screen.rows)]


async def test_a_file_gone_since_the_cached_scan_is_reported_not_fatal(tmp_path, monkeypatch):
    from textual.widgets import Static

    from palinode_core.storage import cache
    from palinode_tui.screens.trace import MemoryViewScreen
    monkeypatch.setattr(cache, "RACY_SECONDS", 0.0)
    root = copy_sample_store(tmp_path / "store")
    # a reopen: the scan cache and the index are already there
    from palinode_core.search.index import SearchIndex
    store = PalinodeApp(root, vectors=False, watch=False, cache_dir=tmp_path / "cache").store
    SearchIndex(store).update_lexical(memories=store.scan().memories)
    app = PalinodeApp(root, vectors=False, watch=False, clock=Clock(), cache_dir=tmp_path / "cache")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        screen = app.screen
        rel = screen.rows[1]
        assert not app.scan.memories[rel].text_read  # served from the cache, text not read yet
        (root / rel).unlink()  # gone, and no watcher to say so
        screen.show(rel)
        await settle(app, pilot)
        assert "cannot be read" in str(screen.query_one("#detail-fields", Static).render())
        app.push_screen(MemoryViewScreen(rel, 1))
        await settle(app, pilot)
        assert "not readable" in str(app.screen.query_one("#view-body", Static).render())
