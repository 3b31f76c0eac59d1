"""A damaged search index is a cache, never a source of truth: detected,
discarded and rebuilt from the store with one line, as the scan cache is."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from ..errors import Cancelled, PalinodeError

INDEX_DB = "index.sqlite3"
WHOOSH_DIR = "whoosh"  # the BM25 index of releases before FTS5: removed when found


def is_damage(exc: BaseException) -> bool:
    """True when ``exc`` says the index files are unreadable (not a lock held
    by another process, a cancel, or one of our own deliberate errors)."""
    if not isinstance(exc, Exception) or isinstance(exc, (Cancelled, PalinodeError, MemoryError)):
        return False
    return not (isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc))


def memory_error_is_damage(exc: BaseException, db: sqlite3.Connection | None) -> bool:
    """SQLite says "out of memory" (a MemoryError) when it reads garbled FTS5
    segments as huge lengths; that is damage only if the index then fails its
    own integrity checks (a real shortage of memory is not)."""
    if not isinstance(exc, MemoryError) or db is None:
        return False
    try:
        if db.execute("PRAGMA quick_check").fetchone() != ("ok",):
            return True
        db.execute("INSERT INTO chunk_terms(chunk_terms) VALUES ('integrity-check')")
    except (sqlite3.Error, MemoryError):  # the check itself cannot read the segments
        return True
    return False


def describe(exc: BaseException) -> str:
    """One line: the kind of damage, whole (never cut mid-sentence)."""
    text = " ".join(str(exc).split())
    if len(text) > 160:
        text = text[:160].rsplit(" ", 1)[0] + " …"
    return f"{exc.__class__.__name__}: {text}" if text else exc.__class__.__name__


def discard(cache_dir: Path) -> None:
    """Remove the index database (chunks, BM25 terms, units, vectors) and any old Whoosh folder."""
    shutil.rmtree(cache_dir / WHOOSH_DIR, ignore_errors=True)
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(OSError):
            os.unlink(cache_dir / f"{INDEX_DB}{suffix}")


def sound_vector_rows(db: sqlite3.Connection, rows: list[Any]) -> tuple[list[Any], str | None]:
    """Rows whose vector blob (the last column) has the common, whole-float
    size; the others are deleted from the cache, to be embedded again."""
    sizes = [len(r[-1] or b"") for r in rows]
    size = max(set(sizes), key=sizes.count) if rows else 0
    if not size % 4 and all(n == size for n in sizes):
        return rows, None
    db.execute("DELETE FROM vectors WHERE vec IS NULL OR length(vec) != ?", (size if not size % 4 else -1,))
    db.commit()
    kept = [r for r, n in zip(rows, sizes, strict=False) if n == size and not size % 4]
    return kept, "vector cache had damaged rows; they were discarded and will be embedded again"
