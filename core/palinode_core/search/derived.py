"""Values computed from the whole index and kept until it changes: the chunk
vector matrix the vector arm ranks against, whether every chunk has a vector,
the unit coverage counts, and BM25's chunk count and total length. At 10k
memories each took 0.014-0.3 s to compute from the tables on every plan (the
last on every query); read back they take milliseconds.

Triggers bump a generation count (one for the chunks, one for the units) on
any write to the tables these come from, inside the writer's own transaction,
whichever process writes. A value is used only when it was computed at the
current generation; anything else (an older value, a missing or damaged
matrix file) is computed again."""

from __future__ import annotations

import contextlib
import os
import secrets
import sqlite3
import stat
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .vectors import DIM

if TYPE_CHECKING:
    import numpy as np

MATRIX_PREFIX = "chunk-vectors-"  # + a token + ".f32": the matrix, raw float32 rows
CHUNKS, UNITS = 0, 1  # two generations: new sentence vectors leave the chunk matrix valid
_CHUNK_VECTOR = "EXISTS (SELECT 1 FROM chunks WHERE hash = {row}.hash)"  # not a query's or a sentence's vector
_SOURCES = (  # table, its columns whose change counts, generation, which rows count ({row}: NEW or OLD)
    ("chunks", "chunk_id, path, section, status, hash, text", CHUNKS, None),  # not tokens (BM25's lengths)
    ("vectors", "hash, vec", CHUNKS, _CHUNK_VECTOR),
    ("unit_versions", "fingerprint, units, strikeable", UNITS, None),
    ("unit_texts", "hash, refs, embedded", UNITS, None),
)


def _statements() -> list[str]:
    statements = [
        "CREATE TABLE IF NOT EXISTS generation (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)",
        "CREATE TABLE IF NOT EXISTS derived (name TEXT PRIMARY KEY, generation INTEGER NOT NULL, value BLOB)",
        "CREATE INDEX IF NOT EXISTS chunks_hash ON chunks(hash)",  # the vectors triggers' lookup
    ]
    for table, columns, gen, when in _SOURCES:
        for op, what, row in (
            ("insert", "INSERT", "NEW"),
            ("delete", "DELETE", "OLD"),
            ("update", f"UPDATE OF {columns}", "NEW"),
        ):
            only = f" WHEN {when.format(row=row)}" if when else ""
            statements.append(
                f"CREATE TRIGGER IF NOT EXISTS {table}_{op}_bumps AFTER {what} ON {table}{only}"
                f" BEGIN UPDATE generation SET n = n + 1 WHERE id = {gen}; END"
            )
    return statements


def _counts_sound(db: sqlite3.Connection) -> bool:
    try:
        counts = dict(db.execute("SELECT id, n FROM generation").fetchall())
    except sqlite3.OperationalError:  # no such table
        return False
    return set(counts) == {CHUNKS, UNITS} and all(isinstance(n, int) and n >= 0 for n in counts.values())


def _triggers(db: sqlite3.Connection) -> int:
    """The triggers in place; -1 when the values' table or the triggers' index is missing (install it all)."""
    names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE name IN ('derived', 'chunks_hash')")}
    if names != {"derived", "chunks_hash"}:
        return -1
    return int(
        db.execute("SELECT COUNT(*) FROM sqlite_master WHERE type = 'trigger' AND name LIKE '%_bumps'").fetchone()[0]
    )


def install(db: sqlite3.Connection) -> None:
    """The counters, the values' table and the triggers (again after a unit-table rebuild dropped theirs).
    Writes nothing when all is in place: opening the index never waits behind another process's writes."""
    have = _triggers(db)
    sound = _counts_sound(db)
    if sound and have == 3 * len(_SOURCES):
        return
    db.executescript(";".join(_statements()) + ";")
    if not sound:  # missing or damaged: the count starts over, and nothing kept under the old one is trusted
        db.executescript(
            "DROP TABLE IF EXISTS generation; CREATE TABLE generation (id INTEGER PRIMARY KEY, n INTEGER NOT NULL);"
            f"INSERT INTO generation VALUES ({CHUNKS}, 0), ({UNITS}, 0); DELETE FROM derived;"
        )
    if have < 3 * len(_SOURCES):  # tables were written with no trigger watching (rebuilt, or an older release)
        db.execute("UPDATE generation SET n = n + 1")
    db.commit()


def two_counts(text: str) -> bool:
    """A sound value of two counts ("12 345")."""
    parts = text.split()
    return len(parts) == 2 and all(p.isascii() and p.isdigit() for p in parts)


def generation(db: sqlite3.Connection, which: int) -> int:
    """-1 when the count is gone (deleted under us): nothing is kept or trusted at -1."""
    row = db.execute("SELECT n FROM generation WHERE id = ?", (which,)).fetchone()
    return int(row[0]) if row is not None and isinstance(row[0], int) and row[0] >= 0 else -1


def cached_text(
    db: sqlite3.Connection, name: str, which: int, compute: Callable[[], str], sound: Callable[[str], bool]
) -> str:
    """``compute()`` at the current generation ``which``, stored for the next
    caller (a stored value that is not ``sound`` is computed again)."""
    gen = generation(db, which)
    row = db.execute("SELECT generation, value FROM derived WHERE name = ?", (name,)).fetchone()
    if gen >= 0 and row is not None and row[0] == gen and isinstance(row[1], str) and sound(row[1]):
        return row[1]
    value = compute()
    if generation(db, which) == gen:  # not computed across someone else's write
        _store(db, name, gen, value)
    return value


def _store(db: sqlite3.Connection, name: str, gen: int, value: str | bytes) -> None:
    """Kept if the database is free now: a value is never worth waiting behind another process's writes."""
    if gen < 0 or db.in_transaction:
        return
    patience = db.execute("PRAGMA busy_timeout").fetchone()[0]
    db.execute("PRAGMA busy_timeout = 0")
    try:
        db.execute("INSERT OR REPLACE INTO derived VALUES (?,?,?)", (name, gen, value))
        db.commit()
    except sqlite3.OperationalError:  # locked by a writer: computed again next time
        if db.in_transaction:
            db.rollback()
    finally:
        db.execute(f"PRAGMA busy_timeout = {int(patience)}")


@dataclass(frozen=True)
class ChunkMatrix:
    vectors: np.ndarray | list[array]  # every chunk's vector with one, in chunk order
    rowids: list[int]  # each vector's chunk row
    generation: int  # the chunks' generation it was read at
    damaged: bool  # a stored vector was of the wrong size: ignored, embedded again by the next update


_TOKEN = 16  # hex characters naming one write of the matrix file


def chunk_matrix(db: sqlite3.Connection, cache_dir: Path, use_numpy: Callable[[int], bool]) -> ChunkMatrix:
    """Every chunk's vector in chunk order with its rowid. Above a few thousand
    chunks it is kept in a file of its own, named by a token that only the
    ``derived`` row of the database that wrote it names: a file another
    database wrote (one discarded as damaged and rebuilt) is never read."""
    gen = generation(db, CHUNKS)
    row = db.execute("SELECT generation, value FROM derived WHERE name = 'chunk_matrix'").fetchone()
    if gen >= 0 and row is not None and row[0] == gen and isinstance(row[1], bytes) and _sound(row[1]):
        token, rowids = row[1][:_TOKEN].decode(), array("q", row[1][_TOKEN:])
        kept = _read_matrix(cache_dir / f"{MATRIX_PREFIX}{token}.f32", len(rowids)) if use_numpy(len(rowids)) else None
        if kept is not None:
            return ChunkMatrix(kept, rowids.tolist(), gen, False)
    own = not db.in_transaction
    if own:
        db.execute("BEGIN")  # one snapshot: the generation and the rows it stands for
    try:
        gen = generation(db, CHUNKS)
        joined = db.execute(
            "SELECT c.rowid, v.vec FROM chunks c JOIN vectors v ON v.hash = c.hash ORDER BY c.chunk_id"
        ).fetchall()
    finally:
        if own:
            db.commit()
    rows = [r for r in joined if isinstance(r[1], bytes) and len(r[1]) == DIM * 4]
    damaged = len(rows) != len(joined)
    ids = [r[0] for r in rows]
    if not use_numpy(len(rows)):
        return ChunkMatrix([array("f", r[1]) for r in rows], ids, gen, damaged)
    import numpy as np

    blob = b"".join(r[1] for r in rows)
    token = secrets.token_hex(_TOKEN // 2)
    if not damaged and gen >= 0 and _write_matrix(cache_dir, token, blob):
        _store(db, "chunk_matrix", gen, token.encode() + array("q", ids).tobytes())
    return ChunkMatrix(np.frombuffer(blob, dtype=np.float32).reshape(len(rows), DIM), ids, gen, damaged)


def _sound(value: bytes) -> bool:
    token = value[:_TOKEN]
    return len(token) == _TOKEN and all(c in b"0123456789abcdef" for c in token) and (len(value) - _TOKEN) % 8 == 0


def _read_matrix(path: Path, rows: int) -> np.ndarray | None:
    import numpy as np

    try:
        # read, not mapped (a file truncated under a mapping kills the process); only a regular file (a FIFO
        # put there would block the read forever)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                return None
            blob = f.read(rows * DIM * 4 + 1)
    except OSError:
        return None
    if len(blob) != rows * DIM * 4:
        return None  # damaged or half written: computed again
    return np.frombuffer(blob, dtype=np.float32).reshape(rows, DIM)


def _write_matrix(cache_dir: Path, token: str, blob: bytes) -> bool:
    final = cache_dir / f"{MATRIX_PREFIX}{token}.f32"
    tmp = cache_dir / f".{MATRIX_PREFIX}{token}.{os.getpid()}.tmp"
    try:
        tmp.unlink(missing_ok=True)  # left by a killed run; never written through (a link placed there)
        with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600), "wb") as f:
            f.write(blob)
        os.replace(tmp, final)
    except OSError:  # a full or read-only cache: the matrix is computed each time instead
        tmp.unlink(missing_ok=True)
        return False
    for old in [*cache_dir.glob(f"{MATRIX_PREFIX}*.f32"), *cache_dir.glob(f".{MATRIX_PREFIX}*.tmp")]:
        if old != final and not _being_written(old):
            with contextlib.suppress(OSError):  # not ours to remove (a folder of that name, say): left alone
                old.unlink(missing_ok=True)
    return True


def _being_written(path: Path) -> bool:
    """A temporary file whose writer is still running (its pid is in the name)."""
    pid = path.name.split(".")[-2] if path.suffix == ".tmp" else ""
    if not pid.isdigit() or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except OSError:  # alive, someone else's
        return True
    return True
