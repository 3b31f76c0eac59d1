"""A damaged search index (the whole database, FTS5's BM25 segments, the vector cache) is detected, discarded and rebuilt with one
line; never a traceback on this or any later run."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import make_git_store, palinode_file
from palinode_core.search.index import SearchIndex
from palinode_core.storage.store import Store

ANN = palinode_file({"id": "people-ann"}, "Ann Lee likes green tea in the morning.")
BOB = palinode_file({"id": "people-bob"}, "Bob plays chess on Sundays.")


@pytest.fixture
def indexed(tmp_path):
    root = make_git_store(tmp_path / "s", {"people/ann.md": ANN, "people/bob.md": BOB})
    store = Store(root)
    index = SearchIndex(store)
    index.update_lexical()
    index.close()
    return root, store.cache_dir


def _garble(path: Path) -> None:
    path.write_bytes(os.urandom(64))


def _search(root: Path) -> dict:
    proc = subprocess.run([sys.executable, "-m", "palinode_core", "--json", "search", str(root), "green tea",
                           "--lexical"], capture_output=True, text=True)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout)


def _garble_terms(path: Path, seed: int = 0) -> None:
    import random
    import sqlite3
    rng = random.Random(seed)
    db = sqlite3.connect(path)
    for (block,) in db.execute("SELECT id FROM chunk_terms_data WHERE id > 1").fetchall():  # FTS5's own segments
        db.execute("UPDATE chunk_terms_data SET block = ? WHERE id = ?", (rng.randbytes(64), block))
    db.commit()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # into the file itself: the test then drops the WAL
    db.close()


# Seed 33 garbles the segments into lengths so large that SQLite answers "out of
# memory" (a MemoryError, about 1 in 60 random garbles), seed 0 into a plain DatabaseError.
@pytest.mark.parametrize("damaged", ["database", "terms", "terms-read-as-out-of-memory"])
def test_damaged_index_is_rebuilt_with_one_line(indexed, damaged):
    root, cache = indexed
    garble = {"database": _garble, "terms": _garble_terms,
              "terms-read-as-out-of-memory": lambda p: _garble_terms(p, seed=33)}[damaged]
    garble(cache / "index.sqlite3")
    for suffix in ("-wal", "-shm"):
        (cache / f"index.sqlite3{suffix}").unlink(missing_ok=True)
    first = _search(root)
    assert "damaged" in (first["notice"] or "") and "rebuilt" in first["notice"]
    assert first["hits"] and first["hits"][0]["path"] == "people/ann.md"
    again = _search(root)  # the next run finds a sound index: no notice, same answer
    assert "damaged" not in (again["notice"] or "") and again["hits"][0]["path"] == "people/ann.md"


def test_damaged_vector_rows_are_dropped_not_fatal(indexed):
    root, cache = indexed
    index = SearchIndex(Store(root))
    hashes = [h for (h,) in index._db.execute("SELECT DISTINCT hash FROM chunks")]
    good = bytes(384 * 4)
    index._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?,?)",
                          [(h, good if i else b"\x01\x02\x03") for i, h in enumerate(hashes)])
    index._db.commit()
    matrix, rows = index._vector_table()
    assert len(matrix) == len(rows) == len(hashes) - 1 and all(len(vec) == 384 for vec in matrix)
    assert "damaged" in (index.notice or "")
    assert [h for h, _text in index.missing_vectors()] == [hashes[0]]  # embedded again on the next update


def test_deeply_nested_folders_scan_without_recursion_error(tmp_path):
    root = tmp_path / "deep"
    deep = str(root)
    os.mkdir(deep)
    for _ in range(1100):  # iteratively: pathlib's mkdir(parents=True) itself recurses
        deep += "/d"
        os.mkdir(deep)
    Path(deep, "m.md").write_text(ANN)
    (root / "top.md").write_text(BOB)
    try:
        scan = Store(root).scan()
        assert "top.md" in scan.memories and "/".join(["d"] * 1100) + "/m.md" in scan.memories
    finally:  # pytest's own clean-up of tmp dirs recurses per level: take the tree down here
        os.unlink(Path(deep, "m.md"))
        while deep != str(root):
            os.rmdir(deep)
            deep = os.path.dirname(deep)


def test_a_cache_from_the_whoosh_release_is_upgraded_in_place(indexed):
    """A cache written before BM25 moved to FTS5 keeps its chunks and vectors:
    the terms are indexed from the chunks it holds, the old folder goes."""
    import sqlite3
    root, cache = indexed
    db = sqlite3.connect(cache / "index.sqlite3")
    db.execute("DROP TABLE chunk_terms")
    db.commit()
    db.close()
    (cache / "whoosh").mkdir()
    (cache / "whoosh" / "_MAIN_1.toc").write_bytes(b"old")
    first = _search(root)
    assert not first["notice"] or "damaged" not in first["notice"]
    assert first["hits"][0]["path"] == "people/ann.md"
    assert not (cache / "whoosh").exists()
