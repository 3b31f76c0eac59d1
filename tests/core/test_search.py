"""Hybrid search on real Whoosh indexes and the real model."""
from __future__ import annotations

import pytest

from helpers import make_git_store, palinode_file
from palinode_core.ops import lifecycle
from palinode_core.ops.apply import apply
from palinode_core.search.embed import Embedder
from palinode_core.storage.cache import store_cache_dir
from palinode_core.search.chunks import chunk_memory
from palinode_core.search.index import SearchIndex
from palinode_core.storage.store import Store

# Tests that take the real model are marked one by one; the rest build indexes with a model that cannot load.
model, one_worker = pytest.mark.model, pytest.mark.xdist_group("model")

TOPICS = ["garden tomatoes", "river kayaking", "tax filing", "piano practice", "bread baking",
          "chess openings", "bike repair", "bird watching", "pottery glaze", "star gazing"]


def _memory_text(i: int) -> str:
    topic = TOPICS[i % len(TOPICS)]
    return f"Note {i} about {topic}. Spent session {i} on {topic} with friend number {i % 37}."


@pytest.fixture
def big_store(tmp_path):
    files = {f"insights/note-{i:04d}.md": palinode_file({"id": f"insights-note-{i}"}, _memory_text(i))
             for i in range(1000)}
    return make_git_store(tmp_path / "big", files)


@model
@one_worker
def test_reopen_reembeds_only_the_edited_file(big_store, embedder, tmp_path):
    cache = tmp_path / "cache"
    store = Store(big_store)
    first = SearchIndex(store, embedder, cache_dir=cache)
    start = embedder.encoded
    first.update()
    embedded, units = first.units.coverage()
    assert embedded == units > 1000  # every sentence, not only the 1,000 chunks
    assert embedder.encoded - start == first._vectors.count()  # each distinct text once
    first.close()

    edited = big_store / "insights/note-0007.md"
    edited.write_text(palinode_file({"id": "insights-note-7"}, "Note 7 is now about sourdough starters."))
    reopened = SearchIndex(Store(big_store), embedder, cache_dir=cache)
    before = embedder.encoded
    reopened.update()
    assert embedder.encoded - before == 1  # one text: the edited file's chunk, which is also its one sentence
    assert reopened.stats.files_reindexed == 1
    assert reopened.units.stats.added == 1 and reopened.units.stats.dropped == 1  # its new version, its old one
    hits = reopened.search("sourdough starters", 3).hits
    assert hits[0].path == "insights/note-0007.md"


@model
@one_worker
def test_struck_text_is_projected_out_and_archived_excluded(tmp_path, embedder):
    root = make_git_store(tmp_path / "s", {
        "p/a.md": palinode_file({"id": "a"}, "Zebulon Quark built the\nlighthouse. The harbour is calm."),
        "p/b.md": palinode_file({"id": "b"}, "Zebulon Quark paints lighthouses."),
    })
    store = Store(root)
    index = SearchIndex(store, embedder, cache_dir=tmp_path / "c")
    index.update()
    assert {h.path for h in index.search("Zebulon Quark", 5, lexical_only=True).hits} == {"p/a.md", "p/b.md"}
    apply(store, lifecycle.plan_retract(store, "p/a.md", "I know Zebulon Quark"))  # crosses a line break
    apply(store, lifecycle.plan_archive(store, "p/b.md"))
    index.update()
    assert index.search("Zebulon Quark", 5, lexical_only=True).hits == []
    assert [h.path for h in index.search("Zebulon Quark", 5, lexical_only=True, include_archived=True).hits] == ["p/b.md"]
    chunk = chunk_memory(store.load("p/a.md"))[0]
    assert "Zebulon" not in chunk.text and "harbour is calm" in chunk.text


@model
@one_worker
def test_hits_say_which_arm_matched(tmp_path, embedder):
    root = make_git_store(tmp_path / "s", {
        "p/a.md": palinode_file({"id": "a"}, "The cat sleeps on the warm windowsill."),
        "p/b.md": palinode_file({"id": "b"}, "Quarterly revenue grew by nine percent."),
    })
    index = SearchIndex(Store(root), embedder, cache_dir=tmp_path / "c")
    index.update()
    result = index.search("kitten napping in the sun", 5)
    assert result.mode == "hybrid"
    assert result.hits[0].path == "p/a.md" and result.hits[0].arms == "vector"
    both = index.search("cat windowsill", 5).hits[0]
    assert both.arms == "bm25+vector" and both.bm25_rank == 1


def test_model_failure_degrades_to_lexical_with_a_notice(tmp_path):
    root = make_git_store(tmp_path / "s", {"p/a.md": palinode_file({"id": "a"}, "Harbour lighthouse keeper.")})
    broken = Embedder(model_path=str(tmp_path / "no-such-model"))
    index = SearchIndex(Store(root), broken, cache_dir=tmp_path / "c")
    index.update()
    result = index.search("lighthouse", 5)
    assert result.mode == "lexical" and "could not load" in result.notice
    assert [h.path for h in result.hits] == ["p/a.md"]


def test_long_bodies_chunk_on_sections(tmp_path):
    body = "Intro line.\n\n" + "\n\n".join(f"## Part {i}\n" + ("word " * 120) for i in range(4)) + "\n\n## Part 0\nagain"
    root = make_git_store(tmp_path / "s", {"p/long.md": palinode_file({"id": "l"}, body)})
    chunks = chunk_memory(Store(root).load("p/long.md"))
    assert [c.section for c in chunks] == ["root", "part-0", "part-1", "part-2", "part-3", "part-0-2"]


def test_two_stores_never_share_a_cache(tmp_path):
    a = make_git_store(tmp_path / "a" / "store", {})
    b = make_git_store(tmp_path / "b" / "store", {})
    assert store_cache_dir(a) != store_cache_dir(b)
    assert not str(store_cache_dir(a)).startswith(str(a))


def test_an_update_can_be_cancelled_from_another_thread(tmp_path):
    from palinode_core.errors import Cancelled
    files = {f"p/n{i:03d}.md": palinode_file({"id": f"n{i}"}, f"note {i} about rivers") for i in range(300)}
    root = make_git_store(tmp_path / "s", files)
    index = SearchIndex(Store(root), Embedder(model_path=str(tmp_path / "none")), cache_dir=tmp_path / "c")
    calls = []

    def progress(phase, done, total):
        calls.append(done)
        if done >= 200:
            index.cancel()
    with pytest.raises(Cancelled):
        index.update_lexical(progress)
    assert max(calls) < 300
    fresh = SearchIndex(Store(root), Embedder(model_path=str(tmp_path / "none")), cache_dir=tmp_path / "c")
    fresh.update_lexical()  # the files done before the cancel were kept: a later update indexes only the rest
    assert fresh.stats.files_reindexed == 300 - 200
    assert len(fresh.search("rivers", 500, lexical_only=True, per_file=1).hits) == 300


def _child_running(marker: str) -> bool:
    """Is a process whose command line names ``marker`` still alive?"""
    import os
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                if marker.encode() in handle.read():
                    return True
        except OSError:
            continue
    return False


def test_isolated_update_builds_the_same_index_in_a_child(tmp_path, monkeypatch):
    from palinode_core.search import index as search
    files = {f"p/n{i:03d}.md": palinode_file({"id": f"n{i}"}, f"note {i} about {TOPICS[i % 10]}") for i in range(60)}
    root = make_git_store(tmp_path / "s", files)
    no_model = Embedder(model_path=str(tmp_path / "none"))
    inline = SearchIndex(Store(root), no_model, cache_dir=tmp_path / "inline")
    inline.update_lexical()
    monkeypatch.setattr(search, "ISOLATE_ABOVE", 10)
    events = []
    store = Store(root)
    isolated = SearchIndex(store, no_model, cache_dir=tmp_path / "isolated")
    isolated.update_lexical(lambda *e: events.append(e), memories=store.scan().memories, isolate=True)
    assert ("lexical", 60, 60) in events  # relayed from the child
    assert isolated.stats.files_reindexed == 0  # the child did it all; nothing left for us
    assert isolated._known_fingerprints() == inline._known_fingerprints()
    for query in TOPICS:
        mine = [(h.path, h.bm25_rank) for h in isolated.search(query, 20, lexical_only=True).hits]
        theirs = [(h.path, h.bm25_rank) for h in inline.search(query, 20, lexical_only=True).hits]
        assert mine == theirs and mine


def test_cancelling_an_isolated_update_stops_its_child(tmp_path, monkeypatch):
    import threading

    from palinode_core.search import index as search
    from palinode_core.errors import Cancelled
    files = {f"p/n{i:04d}.md": palinode_file({"id": f"n{i}"}, _memory_text(i)) for i in range(2300)}
    root = make_git_store(tmp_path / "s", files)
    monkeypatch.setattr(search, "ISOLATE_ABOVE", 10)
    store = Store(root)
    cache = tmp_path / "cancel-cache"
    index = SearchIndex(store, Embedder(model_path=str(tmp_path / "none")), cache_dir=cache)
    outcome = []
    started = threading.Event()

    def run():
        try:
            index.update_lexical(lambda *e: started.set(), memories=store.scan().memories, isolate=True)
        except Cancelled:
            outcome.append("cancelled")
    worker = threading.Thread(target=run)
    worker.start()
    assert started.wait(60), "the child never reported progress"
    assert _child_running(str(cache))
    index.cancel()
    worker.join(10)
    assert outcome == ["cancelled"] and not worker.is_alive()
    for _ in range(100):  # SIGKILL is delivered asynchronously: give the dying a moment
        if not _child_running(str(cache)):
            break
        threading.Event().wait(0.05)
    assert not _child_running(str(cache)), "a child or one of its workers outlived the cancel"
    # and no write lock went with them: a new update writes at once, keeping what the child committed
    fresh = SearchIndex(Store(root), Embedder(model_path=str(tmp_path / "none")), cache_dir=cache)
    fresh._db.execute("PRAGMA busy_timeout = 1000")
    fresh.update_lexical(memories=store.scan().memories)
    assert fresh.stats.chunks == len(files)


def test_an_index_child_that_cannot_run_means_indexing_here(tmp_path, monkeypatch):
    import sys

    from palinode_core.search import index as search
    files = {f"p/n{i:03d}.md": palinode_file({"id": f"n{i}"}, f"note {i} about {TOPICS[i % 10]}") for i in range(30)}
    root = make_git_store(tmp_path / "s", files)
    monkeypatch.setattr(search, "ISOLATE_ABOVE", 1)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-such-python"))
    store = Store(root)
    index = SearchIndex(store, Embedder(model_path=str(tmp_path / "none")), cache_dir=tmp_path / "ix")
    index.update_lexical(memories=store.scan().memories, isolate=True)
    assert any("could not start" in e for e in index.stats.errors)
    assert index.stats.files_reindexed == 30
    assert len(index.search("river kayaking", 50, lexical_only=True).hits) == 3


def test_a_hit_the_vector_arm_alone_found_is_related_only_when_near_the_query_and_the_nearest():
    """The vector arm ranks every chunk: its tail is listed by the app only when Hit.related says so."""
    from palinode_core.search.rank import RELATED_SIM, fuse

    def row(cid: str) -> tuple[str, str, str, str, str]:
        return (cid, f"notes/{cid}.md", "", "active", "text")

    sims = {"named": 0.7, "near": 0.5, "half": 0.4, "noise": 0.15}
    hits = {h.chunk_id: h for h in fuse([row("named")], [row(c) for c in sims], 10, 1, True, sims)}
    assert [c for c, h in hits.items() if h.related] == ["named", "near"]  # 'half' is under 0.6 of the nearest
    assert hits["noise"].similarity == 0.15 and not hits["noise"].related
    lone = fuse([], [row("close")], 10, 1, True, {"close": RELATED_SIM})
    assert lone[0].related and not fuse([], [row("far")], 10, 1, True, {"far": RELATED_SIM - 0.01})[0].related
    assert all(h.related and h.similarity is None for h in fuse([row("a"), row("b")], [], 10, 1, True))
