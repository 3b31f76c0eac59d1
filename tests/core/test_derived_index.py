"""What the index derives from all of itself (the chunk vector matrix, whether
every chunk has a vector, the unit coverage counts) is kept between runs and
recomputed after any write to its tables, or when what was kept is damaged."""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time

import pytest
from helpers import make_git_store, palinode_file

from palinode_core.search import damage, derived
from palinode_core.search.index import SearchIndex
from palinode_core.storage.store import Store

pytestmark = [pytest.mark.model, pytest.mark.xdist_group("model")]

FILES = {
    "people/ann.md": palinode_file({"id": "people-ann"}, "Ann Lee likes green tea in the morning."),
    "people/bob.md": palinode_file({"id": "people-bob"}, "Bob plays chess on Sundays at the club."),
    "projects/roof.md": palinode_file({"id": "projects-roof"}, "The roof repair is booked for March."),
}
QUERY = "vegetable gardening"  # shares no word with any memory: only the vector arm answers


def _open(root, embedder) -> SearchIndex:
    index = SearchIndex(Store(root), embedder=embedder)
    index.update()
    assert index.vectors_ready
    return index


def _vector_hits(index: SearchIndex) -> list[tuple[str, int | None]]:
    return [(h.path, h.vector_rank) for h in index.search(QUERY, limit=5).hits]


def _matrix_files(index: SearchIndex) -> list:
    return sorted(index.cache_dir.glob(f"{derived.MATRIX_PREFIX}*.f32"))


def test_the_matrix_is_kept_between_runs_and_follows_every_write(tmp_path, embedder):
    root = make_git_store(tmp_path / "s", FILES)
    first = _open(root, embedder)
    before = _vector_hits(first)
    assert before and all(rank for _path, rank in before)
    (kept,) = _matrix_files(first)
    first.close()
    again = _open(root, embedder)
    assert _vector_hits(again) == before and _matrix_files(again) == [kept]  # read back, not rebuilt
    again.close()
    # a new memory: the generation moves, the next run's matrix holds its chunk
    (root / "people/carol.md").write_text(
        palinode_file({"id": "people-carol"}, "Carol grows tomatoes and courgettes in her allotment."))
    third = _open(root, embedder)
    after = _vector_hits(third)
    assert after[0][0] == "people/carol.md", after
    assert _matrix_files(third) != [kept] and len(_matrix_files(third)) == 1  # the old one is removed
    third.close()


@pytest.mark.parametrize("damage", ["truncated", "missing", "garbage row", "fifo", "link"])
def test_a_damaged_matrix_is_computed_again(tmp_path, embedder, damage):
    root = make_git_store(tmp_path / "s", FILES)
    index = _open(root, embedder)
    expected = _vector_hits(index)
    (kept,) = _matrix_files(index)
    index.close()
    if damage == "truncated":
        kept.write_bytes(kept.read_bytes()[:-7])
    elif damage == "missing":
        kept.unlink()
    elif damage == "fifo":  # a read would block forever
        kept.unlink()
        os.mkfifo(kept)
    elif damage == "link":  # never read through, and its target never written
        target = tmp_path / "elsewhere.f32"
        target.write_bytes(kept.read_bytes())
        kept.unlink()
        kept.symlink_to(target)
    else:
        db = sqlite3.connect(index.cache_dir / "index.sqlite3")
        db.execute("UPDATE derived SET value = x'0102030405' WHERE name = 'chunk_matrix'")
        db.execute("UPDATE derived SET value = 'twelve' WHERE name = 'unit_coverage'")
        db.commit()
        db.close()
    again = _open(root, embedder)
    assert _vector_hits(again) == expected
    if damage == "link":
        assert (tmp_path / "elsewhere.f32").read_bytes() and not _matrix_files(again)[0].is_symlink()
    embedded, total = again.units.coverage()
    assert embedded == total > 0
    assert again.check_vectors()
    again.close()


def test_completeness_and_coverage_follow_vectors_removed_behind_our_back(tmp_path, embedder):
    root = make_git_store(tmp_path / "s", FILES)
    index = _open(root, embedder)
    embedded, total = index.units.coverage()
    assert embedded == total > 0
    index.close()
    db = sqlite3.connect(index.cache_dir / "index.sqlite3")  # another process, say: the triggers see it
    db.execute("DELETE FROM vectors")
    db.execute("UPDATE unit_texts SET embedded = 0")
    db.commit()
    db.close()
    again = SearchIndex(Store(root), embedder=embedder)
    again.update_lexical()
    assert not again.check_vectors()
    assert again.units.coverage() == (0, total)
    again.close()


@pytest.mark.parametrize("damage", ["row deleted", "table of another shape", "negative count", "values table dropped",
                                    "trigger index dropped"])
def test_a_damaged_generation_count_never_serves_a_stale_value(tmp_path, embedder, damage):
    root = make_git_store(tmp_path / "s", FILES)
    index = _open(root, embedder)
    index.close()
    db = sqlite3.connect(index.cache_dir / "index.sqlite3")
    if damage == "row deleted":
        db.execute("DELETE FROM generation")
    elif damage == "table of another shape":
        db.executescript("DROP TABLE generation; CREATE TABLE generation (id INTEGER PRIMARY KEY CHECK (id = 0), n);"
                         "INSERT INTO generation VALUES (0, 0);")
    elif damage == "negative count":
        db.execute("UPDATE generation SET n = -5")
    elif damage == "values table dropped":
        db.execute("DROP TABLE derived")
    else:
        db.execute("DROP INDEX chunks_hash")
    db.commit()
    db.close()
    again = _open(root, embedder)  # no traceback; and a write is seen
    assert again.units.coverage()[1] > 0
    (root / "people/carol.md").write_text(
        palinode_file({"id": "people-carol"}, "Carol grows tomatoes and courgettes in her allotment."))
    again.update()
    assert _vector_hits(again)[0][0] == "people/carol.md"
    again.close()


def _count(index: SearchIndex) -> int:
    return index._db.execute("SELECT n FROM generation WHERE id = 0").fetchone()[0]


def test_a_count_started_over_never_names_a_matrix_kept_before(tmp_path, embedder):
    # from an attacker's review: deleted counts came back at 0 with the old values kept, and once
    # the count was back where it had been, the old matrix was read with the new chunks' rowids
    root = make_git_store(tmp_path / "s", FILES)
    index = _open(root, embedder)
    index.search(QUERY)
    old = _count(index)
    index.close()
    db = sqlite3.connect(index.cache_dir / "index.sqlite3")
    db.execute("DELETE FROM generation")
    db.commit()
    db.close()
    (root / "projects/roof.md").unlink()
    n = 0
    while True:
        index = _open(root, embedder)
        if _count(index) >= old:
            break
        index.close()
        n += 1
        text = "Carol grows tomatoes and courgettes in her allotment." if n == 1 else f"Filler note {n} on paperwork."
        (root / f"people/p{n}.md").write_text(palinode_file({"id": f"p{n}"}, text))
    index.close()
    again = _open(root, embedder)
    assert _vector_hits(again)[0][0] == "people/p1.md"
    again.close()


def test_a_process_on_a_discarded_database_never_writes_the_matrix_the_new_one_reads(tmp_path, embedder):
    root = make_git_store(tmp_path / "s", FILES)
    app = _open(root, embedder)  # the app: indexed, no vector search yet
    (root / "projects/roof.md").write_text(palinode_file({"id": "projects-roof"}, "Carol grows tomatoes and courgettes."))
    damage.discard(app.cache_dir)  # another process found it damaged and rebuilt it
    cli = _open(root, embedder)
    expected = _vector_hits(cli)
    assert expected[0][0] == "projects/roof.md"
    cli.close()
    app.search("anything at all")  # still on the unlinked database: writes a matrix of its own
    app.close()
    later = _open(root, embedder)
    assert _vector_hits(later) == expected
    later.close()


def test_a_matrix_held_in_memory_follows_another_process_rewriting_the_chunks(tmp_path, embedder):
    root = make_git_store(tmp_path / "s", FILES)
    app = _open(root, embedder)
    app.search("roof tiles")  # its matrix now held in memory
    (root / "projects/roof.md").unlink()  # another process: roof gone, a new memory takes its rowid
    (root / "people/carol.md").write_text(palinode_file({"id": "people-carol"}, "Carol bakes sourdough bread."))
    other = _open(root, embedder)
    expected = [(h.path, h.vector_rank) for h in other.search("fresh loaves from the oven", limit=3).hits]
    other.close()
    got = [(h.path, h.vector_rank) for h in app.search("fresh loaves from the oven", limit=3).hits]
    assert got == expected and expected[0][0] == "people/carol.md"  # each chunk scored by its own vector
    app.close()


@pytest.mark.parametrize("name", ["chunk-vectors-999.f32", ".chunk-vectors-5.1.tmp"])
def test_a_folder_named_like_a_matrix_file_is_left_alone(tmp_path, embedder, name):
    root = make_git_store(tmp_path / "s", FILES)
    index = SearchIndex(Store(root), embedder=embedder)
    (index.cache_dir / name).mkdir()
    index.update()
    assert _vector_hits(index)
    assert (index.cache_dir / name).is_dir()
    index.close()


def test_reading_never_waits_behind_another_process_writing(tmp_path, embedder):
    root = make_git_store(tmp_path / "s", FILES)
    index = _open(root, embedder)
    expected = _vector_hits(index)  # the query's vector is kept: nothing below needs to write one
    holder = subprocess.Popen([sys.executable, "-c", f"""
import sqlite3, sys, time
db = sqlite3.connect({str(index.cache_dir / "index.sqlite3")!r}, isolation_level=None)
db.execute("UPDATE chunks SET section = section || '' WHERE rowid = (SELECT MIN(rowid) FROM chunks)")
db.execute("UPDATE unit_texts SET refs = refs + 0 WHERE hash = (SELECT hash FROM unit_texts LIMIT 1)")
db.execute("BEGIN IMMEDIATE")
print("held", flush=True)
sys.stdin.read()
"""], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        SearchIndex(Store(root), embedder=embedder).close()  # opening writes nothing when all is in place
        index.vectors_ready = False
        assert index.check_vectors()
        assert index.units.coverage()[1] > 0
        assert _vector_hits(index) == expected  # the matrix read again (the chunks' count moved), not kept
        # values computed again are not kept while the database is busy; nothing waits out the 5 s timeout
        assert time.monotonic() - started < 2.5
    finally:
        holder.communicate("")
    index.close()


def test_bm25_scores_follow_chunks_added_by_another_process(tmp_path):
    """BM25's chunk count and total length are kept: a chunk another process
    adds moves them, so both processes score exactly as a fresh index does."""
    root = make_git_store(tmp_path / "s", FILES)
    cache = tmp_path / "cache"

    def scores(index: SearchIndex) -> dict[str, float]:
        return {h.path: round(h.score, 9) for h in index.search("tea chess roof", limit=5, lexical_only=True).hits}

    first = SearchIndex(Store(root), cache_dir=cache)
    first.update_lexical()
    before = scores(first)
    db = sqlite3.connect(first.cache_dir / damage.INDEX_DB)
    assert db.execute("SELECT value FROM derived WHERE name = 'chunk_sizes'").fetchone()[0] == "3 " + str(
        db.execute("SELECT SUM(tokens) FROM chunks").fetchone()[0])
    for n in range(6):  # another process adds memories about tea: "tea" is in most chunks now
        (root / f"people/t{n}.md").write_text(palinode_file({"id": f"t{n}"}, f"Tea number {n} of a long list."))
    other = SearchIndex(Store(root), cache_dir=cache)
    other.update_lexical()
    fresh = SearchIndex(Store(root), cache_dir=tmp_path / "fresh")
    fresh.update_lexical()
    assert scores(first) == scores(other) == scores(fresh) != before
    assert db.execute("SELECT value FROM derived WHERE name = 'chunk_sizes'").fetchone()[0].startswith("9 ")


def test_the_indexed_versions_read_inside_a_transaction_are_never_kept(tmp_path):
    """A version written in a transaction later rolled back is not served as
    indexed once another process brings the count to the same number."""
    root = make_git_store(tmp_path / "s", FILES)
    index = SearchIndex(Store(root), cache_dir=tmp_path / "cache")
    index.update_lexical()
    db, units = index._db, index.units
    db.execute("INSERT INTO unit_versions VALUES ('ghost', 0, 0)")  # uncommitted, this connection
    assert "ghost" in units.known()
    db.rollback()
    other = sqlite3.connect(index.cache_dir / damage.INDEX_DB)
    other.execute("INSERT INTO unit_versions VALUES ('real', 0, 0)")  # another process: the count moves by one too
    other.commit()
    known = units.known()
    assert "real" in known and "ghost" not in known


def test_derive_computes_every_value_a_plan_reads_back(tmp_path, embedder):
    """`palinode-audit index` ends with derive(): the first plan after it reads
    every derived value back instead of computing it."""
    root = make_git_store(tmp_path / "s", FILES)
    index = _open(root, embedder)
    db = sqlite3.connect(index.cache_dir / damage.INDEX_DB)
    db.execute("DELETE FROM derived")
    db.commit()
    index.derive()
    assert {r[0] for r in db.execute("SELECT name FROM derived")} >= {
        "chunk_vectors", "chunk_matrix", "unit_coverage", "chunk_sizes"}
