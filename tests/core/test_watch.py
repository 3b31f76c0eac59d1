"""The real watchdog observer: bursts coalesce, git's churn is ignored."""
from __future__ import annotations

import threading
import time

from helpers import Clock, make_git_store, palinode_file
from palinode_core.ops import lifecycle
from palinode_core.ops.apply import apply
from palinode_core.storage.store import Store
from palinode_core.storage.watch import StoreWatcher, is_relevant


def wait_for(predicate, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def reported(batches: list[set[str]]) -> set[str]:
    return set().union(*list(batches))


def sentinel(root, batches: list[set[str]], name: str, timeout: float = 10.0) -> None:
    """Write a memory file and wait until the watcher reports it. Events arrive in
    order, so once it is reported every earlier change has been reported too;
    this replaces "sleep and hope". Rewritten every two seconds in case the
    observer was not yet listening for the first write."""
    path = root / "sentinel" / name
    path.parent.mkdir(exist_ok=True)
    deadline = time.monotonic() + timeout
    n = 0
    while time.monotonic() < deadline:
        path.write_text(f"sentinel {n}")
        n += 1
        if wait_for(lambda: f"sentinel/{name}" in reported(batches), timeout=2.0):
            return
    raise AssertionError(f"the watcher never reported sentinel/{name} within {timeout} s")


def test_relevance_filter():
    assert is_relevant("people/ann.md") and is_relevant(".palinode-audit/ledger.jsonl")
    for rel in (".git/index", ".git/objects/ab/cdef", "people/.ann.md.x1.tmp", "logs/x.md", "specs/a.md",
                ".palinode/pending/x.md", "people/notes.txt"):
        assert not is_relevant(rel), rel


def test_a_burst_of_1000_writes_coalesces_and_the_final_state_matches(tmp_path):
    root = make_git_store(tmp_path / "s", {"people/seed.md": palinode_file({"id": "seed"}, "seed")})
    batches: list[set[str]] = []
    lock = threading.Lock()

    def on_change(paths: set[str]) -> None:
        with lock:
            batches.append(paths)

    watcher = StoreWatcher(root, on_change, debounce=0.2)
    watcher.start()
    try:
        (root / "burst").mkdir()
        for i in range(1000):
            (root / f"burst/note-{i:04d}.md").write_text(palinode_file({"id": f"n{i}"}, f"note {i}"))
        wanted = {f"burst/note-{i:04d}.md" for i in range(1000)}
        assert wait_for(lambda: set().union(*batches) >= wanted if batches else False)
        assert len(batches) <= 20, len(batches)  # thousands of events, a handful of refreshes
    finally:
        watcher.stop()
    store = Store(root)
    first = store.scan()
    refreshed = store.refresh(first, set().union(*batches))
    assert set(refreshed.memories) == set(first.memories) and len(refreshed.memories) == 1001


def test_a_commit_fires_no_refresh_beyond_the_files_it_wrote(tmp_path):
    root = make_git_store(tmp_path / "s", {"people/ann.md": palinode_file({"id": "a"}, "Ann Lee runs.")})
    batches: list[set[str]] = []
    watcher = StoreWatcher(root, batches.append, debounce=0.15)
    watcher.start()
    try:
        sentinel(root, batches, "listening.md")  # the observer is up before acting
        batches.clear()
        store = Store(root, clock=Clock())
        apply(store, lifecycle.plan_archive(store, "people/ann.md"))
        assert wait_for(lambda: bool(batches))
        sentinel(root, batches, "after-commit.md")  # everything the commit fired has been reported
        ours = {"sentinel/listening.md", "sentinel/after-commit.md"}
        assert reported(batches) - ours == {"people/ann.md", "people/ann-history.md"}
    finally:
        watcher.stop()


def test_reading_the_store_is_not_a_change(tmp_path):
    """Scans read every file; a watcher that saw reads as changes would rescan forever."""
    root = make_git_store(tmp_path / "s", {f"people/p{i}.md": palinode_file({"id": f"p{i}"}, "x") for i in range(50)})
    batches: list[set[str]] = []
    watcher = StoreWatcher(root, batches.append, debounce=0.1)
    watcher.start()
    try:
        sentinel(root, batches, "listening.md")
        batches.clear()
        Store(root).scan()
        for path in root.rglob("*.md"):
            path.read_bytes()
        sentinel(root, batches, "after-reads.md")  # every event the reads raised has been delivered
        # (a late echo of the first sentinel is ours, not a read)
        assert reported(batches) - {"sentinel/listening.md"} == {"sentinel/after-reads.md"}
        batches.clear()
        (root / "people/p3.md").write_text("changed")
        assert wait_for(lambda: batches == [{"people/p3.md"}])
    finally:
        watcher.stop()
