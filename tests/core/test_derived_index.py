"""What the index derives from all of itself (the chunk vector matrix, whether
every chunk has a vector, the unit coverage counts) is kept between runs and
recomputed after any write to its tables, or when what was kept is damaged."""
from __future__ import annotations

import os
import sqlite3

import pytest
from helpers import make_git_store, palinode_file

from palinode_core.search import derived
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


@pytest.mark.parametrize("damage", ["row deleted", "table of another shape", "negative count"])
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
    else:
        db.execute("UPDATE generation SET n = -5")
    db.commit()
    db.close()
    again = _open(root, embedder)  # no traceback; and a write is seen
    (root / "people/carol.md").write_text(
        palinode_file({"id": "people-carol"}, "Carol grows tomatoes and courgettes in her allotment."))
    again.update()
    assert _vector_hits(again)[0][0] == "people/carol.md"
    again.close()
