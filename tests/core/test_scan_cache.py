"""The scan cache: a reopen serves unchanged memories from their stat stamp
without reading them, and never serves anything the files would not."""
from __future__ import annotations

import os
import random
import sqlite3
from pathlib import Path

import pytest

from helpers import copy_sample_store, palinode_file, write_files

from palinode_core.storage import cache
from palinode_core.errors import UnreadableMemory
from palinode_core.storage.store import ScanResult, Store


@pytest.fixture
def trusting(monkeypatch):
    """Fixture files were all written a moment ago; the racy-write window
    would (rightly) keep every one of them out of the cache."""
    monkeypatch.setattr(cache, "RACY_SECONDS", 0.0)


def _fresh(root) -> ScanResult:
    return Store(root, use_scan_cache=False).scan()


def test_reopen_serves_summaries_from_cache_and_loads_text_lazily(tmp_path, trusting):
    root = copy_sample_store(tmp_path / "store")
    first = Store(root).scan()
    assert all(m.loaded is not None for m in first.memories.values())  # parsed: nothing cached yet
    again = Store(root).scan()
    fresh = _fresh(root)
    assert set(again.memories) == set(fresh.memories) and set(again.history) == set(fresh.history)
    for rel, memory in {**again.memories, **again.history}.items():
        truth = fresh.memories.get(rel) or fresh.history[rel]
        assert not memory.text_read, f"{rel} was read although unchanged"
        assert memory.summary == truth.summary
        assert memory.fingerprint == truth.fingerprint
        assert memory.text == truth.text  # the lazy read gives the same bytes
    assert again.counts() == fresh.counts()


def test_a_changed_file_is_reparsed_even_with_size_and_mtime_put_back(tmp_path, trusting):
    root = copy_sample_store(tmp_path / "store")
    Store(root).scan()
    rel = next(iter(_fresh(root).memories))
    path = root / rel
    st = os.stat(path)
    text = path.read_text()
    flipped = text.replace("a", "b", 1) if "a" in text else text.replace("e", "f", 1)
    assert flipped != text and len(flipped) == len(text)
    path.write_text(flipped)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size, same mtime: only ctime tells
    memory = Store(root).scan().memories[rel]
    assert memory.loaded is not None
    assert memory.text == flipped


def test_recent_writes_are_not_trusted_to_the_cache(tmp_path):
    root = copy_sample_store(tmp_path / "store")
    store = Store(root)
    store.scan()
    assert store.scan_cache.load() == {}  # every file is younger than the racy window
    assert all(m.loaded is not None for m in Store(root).scan().memories.values())


def test_corrupt_cache_is_discarded_and_the_scan_is_still_right(tmp_path, trusting):
    root = copy_sample_store(tmp_path / "store")
    store = Store(root)
    store.scan()
    db = store.scan_cache.path
    for suffix in ("-wal", "-shm"):
        if os.path.exists(f"{db}{suffix}"):
            os.unlink(f"{db}{suffix}")
    db.write_bytes(b"this is not a database" * 100)
    reopened = Store(root)
    scan = reopened.scan()
    assert reopened.scan_cache.notice and "unreadable" in reopened.scan_cache.notice
    assert {r: m.summary for r, m in scan.memories.items()} == {r: m.summary for r, m in _fresh(root).memories.items()}
    assert sqlite3.connect(db).execute("SELECT COUNT(*) FROM entries").fetchone()[0] > 0  # rebuilt


def test_rows_from_an_older_summary_version_are_dropped(tmp_path, trusting, monkeypatch):
    root = copy_sample_store(tmp_path / "store")
    Store(root).scan()
    monkeypatch.setattr(cache, "SUMMARY_VERSION", cache.SUMMARY_VERSION + 1)
    scan = Store(root).scan()
    assert all(m.loaded is not None for m in scan.memories.values())


def test_deleted_and_broken_files_leave_the_cache(tmp_path, trusting):
    root = copy_sample_store(tmp_path / "store")
    Store(root).scan()
    rels = sorted(_fresh(root).memories)
    (root / rels[0]).unlink()
    (root / rels[1]).write_text("---\ntitle: [unclosed\n---\nbody\n")
    store = Store(root)
    scan = store.scan()
    assert rels[0] not in scan.memories and rels[1] not in scan.memories
    assert [e.path for e in scan.errors] == [rels[1]]
    cached = store.scan_cache.load()
    assert rels[0] not in cached and rels[1] not in cached


def test_a_link_is_never_served_from_cache_and_a_lazy_read_rechecks_it(tmp_path, trusting):
    root = copy_sample_store(tmp_path / "store")
    outside = tmp_path / "outside.md"
    outside.write_text(palinode_file({"title": "secret"}, "outside the store"))
    write_files(root, {"notes/target.md": palinode_file({"title": "inside"}, "inside text")})
    os.symlink(root / "notes" / "target.md", root / "notes" / "link.md")
    store = Store(root)
    scan = store.scan()
    assert "notes/link.md" in scan.memories and "notes/link.md" not in store.scan_cache.load()
    # retarget the link outside: the reopen refuses it
    os.unlink(root / "notes" / "link.md")
    os.symlink(outside, root / "notes" / "link.md")
    reopened = Store(root).scan()
    assert "notes/link.md" not in reopened.memories
    assert any(e.path == "notes/link.md" and "outside" in e.reason for e in reopened.errors)
    # a cached memory whose file became a link outside since: its lazy read refuses too
    cached = Store(root).scan().memories["notes/target.md"]
    assert cached.loaded is None
    os.unlink(root / "notes" / "target.md")
    os.symlink(outside, root / "notes" / "target.md")
    with pytest.raises(UnreadableMemory):
        cached.body


def test_incremental_counts_match_a_full_recount(tmp_path, trusting):
    root = copy_sample_store(tmp_path / "store")
    store = Store(root)
    scan = store.scan()
    scan.counts()  # tallies now kept incrementally
    rng = random.Random(7)
    rels = sorted(scan.memories)
    for step in range(40):
        rel = rng.choice(rels + ["notes/new-%d.md" % step])
        path = root / rel
        action = rng.choice(["archive", "strike", "activate", "delete", "write"])
        if action == "delete":
            if path.exists():
                path.unlink()
        else:
            status = "archived" if action == "archive" else "active"
            body = ("~~old text~~ [RETRACTED 2025-06-01 r:0123abcd]." if action == "strike" else f"note {step}")
            write_files(root, {rel: palinode_file({"title": rel, "status": status}, body)})
        scan = store.refresh(scan, {rel})
        full = ScanResult(scan.memories, scan.history, scan.errors).counts()
        assert scan.counts() == full, (step, rel, action)


def test_scan_reports_progress_against_the_listed_total(tmp_path):
    root = copy_sample_store(tmp_path / "store")
    calls = []
    scan = Store(root).scan(lambda done, total: calls.append((done, total)))
    listed = len(scan.memories) + len(scan.history) + len(scan.errors)
    assert calls and calls[0] == (0, listed)
    assert all(total == listed and done < total for done, total in calls)


def test_isolated_first_scan_fills_the_cache_in_a_child(tmp_path, monkeypatch):
    import time

    from palinode_core.storage import child
    files = {f"notes/n{i:03d}.md": palinode_file({"title": f"note {i}", "status": "archived" if i % 7 == 0
                                                   else "active"}, f"note {i} body") for i in range(60)}
    root = copy_sample_store(tmp_path / "store")
    write_files(root, files)
    time.sleep(cache.RACY_SECONDS + 0.2)  # the child applies the racy rule with its own, unpatched clock
    monkeypatch.setattr(child, "ISOLATE_ABOVE", 10)
    calls = []
    scan = Store(root).scan(lambda done, total: calls.append((done, total)), isolate=True)
    fresh = _fresh(root)
    listed = len(fresh.memories) + len(fresh.history) + len(fresh.errors)
    assert calls and all(total == listed for _, total in calls)
    assert {r: m.summary for r, m in scan.memories.items()} == {r: m.summary for r, m in fresh.memories.items()}
    assert not any(m.text_read for m in scan.memories.values())  # the child parsed them, not us


def test_a_child_never_runs_code_the_store_carries(tmp_path, monkeypatch):
    """A store holding a palinode_core/ folder, opened from inside it (`cd store; palinode-tui .`
    with a relative cache folder): the low-priority child that scans or embeds for the app runs
    our code, never the store's (`python -m` put the working directory first on its path)."""
    from palinode_core.storage import child

    root = copy_sample_store(tmp_path / "store")
    write_files(root, {f"notes/n{i:03d}.md": palinode_file({"title": f"note {i}"}, f"note {i}") for i in range(30)})
    marker = tmp_path / "PWNED"
    (root / "palinode_core").mkdir()
    (root / "palinode_core" / "__init__.py").write_text("")
    (root / "palinode_core" / "__main__.py").write_text(f"open({str(marker)!r}, 'w').write('store code ran')\n")
    monkeypatch.chdir(root)
    monkeypatch.setattr(child, "ISOLATE_ABOVE", 10)
    store = Store(".", cache_dir=Path("../cache-beside"))
    scan = store.scan(isolate=True)
    assert not marker.exists()
    assert store.scan_cache is not None and store.scan_cache.notice is None  # the child ran, and was ours
    assert len(scan.memories) >= 30 and not any(m.text_read for m in scan.memories.values())


def test_cancelling_an_isolated_scan_stops_its_child(tmp_path, monkeypatch):
    import threading

    from palinode_core.storage import child
    from palinode_core.errors import Cancelled
    root = tmp_path / "store"
    write_files(root, {f"n/{i:04d}.md": palinode_file({"title": str(i)}, f"body {i}") for i in range(3000)})
    monkeypatch.setattr(child, "ISOLATE_ABOVE", 10)
    store = Store(root)
    started, outcome = threading.Event(), []

    def run():
        try:
            store.scan(lambda done, total: started.set(), isolate=True)
        except Cancelled:
            outcome.append("cancelled")
    worker = threading.Thread(target=run)
    worker.start()
    assert started.wait(60)
    store.cancel()
    worker.join(10)
    assert outcome == ["cancelled"] and not worker.is_alive()


def test_a_child_that_cannot_run_means_parsing_here(tmp_path, monkeypatch):
    import sys

    from palinode_core.storage import child
    root = copy_sample_store(tmp_path / "store")
    monkeypatch.setattr(child, "ISOLATE_ABOVE", 1)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-such-python"))
    store = Store(root)
    scan = store.scan(isolate=True)
    assert "could not start" in store.scan_cache.notice
    assert {r: m.summary for r, m in scan.memories.items()} == {r: m.summary for r, m in _fresh(root).memories.items()}


def test_a_big_first_scan_keeps_summaries_not_text_and_saves_as_it_goes(tmp_path, monkeypatch, trusting):
    """Memory stays flat on a first scan of thousands of files (each text is
    read again on first use, as from the cache), and what is parsed is in the
    cache before the scan ends: an interrupted first scan resumes there."""
    from palinode_core.errors import Cancelled
    from palinode_core.storage import child, store as store_mod

    monkeypatch.setattr(child, "ISOLATE_ABOVE", 20)
    monkeypatch.setattr(store_mod, "SAVE_EVERY", 25)
    root = tmp_path / "store"
    write_files(root, {f"n/{i:03d}.md": palinode_file({"title": f"n{i}"}, f"body {i}") for i in range(120)})
    store = Store(root)

    def stop_early(done: int, total: int) -> None:
        if done >= 25:
            store._cancel.set()

    with pytest.raises(Cancelled):
        store.scan(stop_early)
    kept = store.scan_cache.load()
    assert 25 <= len(kept) <= 75  # the batches parsed before the stop
    scan = Store(root).scan()
    fresh = _fresh(root)
    assert {r: m.summary for r, m in scan.memories.items()} == {r: m.summary for r, m in fresh.memories.items()}
    assert not any(m.text_read for m in scan.memories.values())  # summaries only, cached or not
    assert scan.memories["n/007.md"].body == fresh.memories["n/007.md"].body  # the text, read on first use


def test_the_snapshot_of_the_rows_follows_every_write_and_survives_damage(tmp_path, trusting):
    """The rows are read back from one marshal file while no write renewed their
    token; a write (this process or another) makes the next load read the rows
    again; a damaged, foreign or misplaced snapshot is never served."""
    import marshal

    root = copy_sample_store(tmp_path / "store")
    store = Store(root)
    store.scan()
    first = store.scan_cache.load()
    snapshot = store.scan_cache.path.with_suffix(".snapshot")
    assert first and snapshot.is_file()
    assert store.scan_cache.load() == first  # read back from the snapshot
    # another process's write renews the token: the next load reads the new row
    write_files(root, {"insights/new.md": palinode_file({"id": "new"}, "A new memory.")})
    Store(root).scan()
    expected = store.scan_cache.load()
    assert "insights/new.md" in expected and set(expected) - {"insights/new.md"} == set(first)
    token = sqlite3.connect(store.scan_cache.path).execute(
        "SELECT value FROM meta WHERE key='entries_token'").fetchone()[0]
    version = store.scan_cache._version
    for damaged in (
        marshal.dumps((version, "an old token", [])),  # kept before the last write
        marshal.dumps(("0:another release", token, [])),
        marshal.dumps((version, token, [(1, 2)])),  # rows of another shape
        b"\x00 not marshal",
    ):
        snapshot.write_bytes(damaged)
        assert store.scan_cache.load() == expected, damaged[:40]
    snapshot.unlink()
    snapshot.mkdir()
    assert store.scan_cache.load() == expected and snapshot.is_dir()  # a folder in its place is left alone


def test_a_load_never_waits_behind_another_writer_nor_drops_the_cache(tmp_path, trusting):
    root = copy_sample_store(tmp_path / "store")
    store = Store(root)
    store.scan()
    expected = store.scan_cache.load()
    other = sqlite3.connect(store.scan_cache.path, timeout=0)
    other.execute("BEGIN IMMEDIATE")  # another process mid-save
    try:
        store.scan_cache.path.with_suffix(".snapshot").unlink()  # the rows must come from the database
        assert store.scan_cache.load() == expected and store.scan_cache.notice is None
    finally:
        other.rollback()
    assert store.scan_cache.path.exists()


@pytest.mark.parametrize("kind", ["fifo", "link"])
def test_a_snapshot_that_is_no_regular_file_is_never_read(tmp_path, trusting, kind):
    root = copy_sample_store(tmp_path / "store")
    store = Store(root)
    store.scan()
    expected = store.scan_cache.load()
    snapshot = store.scan_cache.path.with_suffix(".snapshot")
    snapshot.unlink()
    if kind == "fifo":
        os.mkfifo(snapshot)  # opening it to read would wait for a writer forever
    else:
        snapshot.symlink_to("/dev/zero")  # reading it would never end
    again = Store(root)
    again.scan_cache.save([], ["nothing"])  # a write: the next load looks for a snapshot again
    assert again.scan_cache.load() == expected


def test_a_memory_made_from_the_cache_equals_one_made_by_its_constructor():
    """``Memory.from_cache`` skips the frozen dataclass's ``__init__`` (a reopen makes one per
    file); a field added to Memory and not to it fails here."""
    import dataclasses
    from functools import partial

    from palinode_core.storage.memory import Memory, Summary

    summary = Summary._make(range(len(Summary._fields)))
    reload = partial(print, "x")
    made = Memory("notes/a.md", "f" * 64, summary, (1, 2, 3, 4), reload=reload)
    cached = Memory.from_cache("notes/a.md", "f" * 64, summary, (1, 2, 3, 4), reload)
    assert cached == made and hash(cached) == hash(made)
    assert cached.__dict__ == made.__dict__ and set(cached.__dict__) == {f.name for f in dataclasses.fields(Memory)}
