"""BM25 scoring of chunks, as Whoosh's BM25F scored them (B 0.75, K1 1.2,
IDF log(N / (df + 1)) + 1): every term keeps a positive weight, so a small
store ranks by what a chunk shares with the query. SQLite FTS5 finds the
chunks; its own ``bm25()`` clamps the IDF of a term in more than half the
chunks to almost nothing, which on a store of a few memories drops every
memory sharing the preference's words with the request itself."""

from __future__ import annotations

import math
import re
import shutil
import sqlite3
import threading
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from ..errors import Cancelled, PalinodeError
from ..storage.child import Progress
from ..storage.memory import Memory
from .chunks import Chunk, chunk_memory

B = 0.75
K1 = 1.2
COMMIT_EVERY = 500  # files per transaction while indexing: the unit of resuming an interrupted update
TOKEN_RE = re.compile(r"\w+", re.UNICODE)  # the tokens a chunk's length counts


def token_count(text: str) -> int:
    return len(TOKEN_RE.findall(text))


def idf(docs: int, df: int) -> float:
    return math.log(docs / (df + 1)) + 1


def scores(
    rows: Iterable[tuple[str, str, str, int]], weights: Mapping[str, float], avg_length: float
) -> list[tuple[float, str, str]]:
    """(score, chunk id, path) of each (chunk id, path, text, length) row
    holding a weighted term, in the rows' order; ``weights`` maps each query
    term (lowercase) to its IDF."""
    out = []
    norm = avg_length or 1.0
    for chunk_id, path, text, length in rows:
        counts = Counter(w for w in TOKEN_RE.findall(text.lower()) if w in weights)
        if not counts:
            continue
        damp = K1 * ((1 - B) + B * (length or 0) / norm)
        out.append((sum(weights[t] * tf * (K1 + 1) / (tf + damp) for t, tf in counts.items()), chunk_id, path))
    return out


def open_terms(db: sqlite3.Connection, old_whoosh: Path) -> None:
    """Create the chunks' FTS5 terms (external content: they index the chunks
    table's own text, kept in step by rowid); a cache from before FTS5 gains
    each chunk's token count and its terms from the chunks it already holds,
    and its Whoosh folder goes."""
    if "tokens" not in {r[1] for r in db.execute("PRAGMA table_info(chunks)")}:
        db.execute("ALTER TABLE chunks ADD COLUMN tokens INTEGER")
        db.executemany(
            "UPDATE chunks SET tokens=? WHERE rowid=?",
            [(token_count(t or ""), r) for r, t in db.execute("SELECT rowid, text FROM chunks")],
        )
        db.commit()
    had_terms = db.execute("SELECT 1 FROM sqlite_master WHERE name='chunk_terms'").fetchone()
    db.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS chunk_terms USING fts5(text, content='chunks', content_rowid='rowid',"
        " tokenize='unicode61')"
    )
    if not had_terms:
        db.execute("INSERT INTO chunk_terms(chunk_terms) VALUES ('rebuild')")
        db.commit()
        shutil.rmtree(old_whoosh, ignore_errors=True)


def _phrase(term: str) -> str:  # quoted: no store or query text is ever FTS5 syntax
    return '"' + term.replace('"', '""') + '"'


def sizes(db: sqlite3.Connection) -> str:
    """ "chunks tokens": BM25's N and, over N, the average chunk length (a scan
    of every chunk: 14 ms at 10,000 memories, so kept as a derived value)."""
    docs, total = db.execute("SELECT COUNT(*), SUM(tokens) FROM chunks").fetchone()
    return f"{int(docs or 0)} {int(total or 0)}"


def ranked(
    db: sqlite3.Connection, terms: list[str], excluded: set[str], limit: int, pool: int, sizes: tuple[int, int]
) -> list[tuple[float, str, str]]:
    """The ``limit`` chunks best scored for ``terms``, best first: (score, chunk_id, path).
    FTS5 finds them (its own order only bounds a huge match); our BM25 ranks them.
    ``sizes``: what ``sizes()`` says."""
    docs, total = sizes
    if not docs:
        return []
    weights = {
        t: idf(
            docs, db.execute("SELECT COUNT(*) FROM chunk_terms WHERE chunk_terms MATCH ?", (_phrase(t),)).fetchone()[0]
        )
        for t in terms
    }
    skip = sorted(excluded)
    rows = db.execute(
        "SELECT c.chunk_id, c.path, c.text, c.tokens FROM chunk_terms JOIN chunks c"
        " ON c.rowid = chunk_terms.rowid WHERE chunk_terms MATCH ?"
        + (f" AND c.status NOT IN ({','.join('?' * len(skip))})" if skip else "")
        + " ORDER BY bm25(chunk_terms) LIMIT ?",
        [" OR ".join(map(_phrase, terms)), *skip, pool],
    ).fetchall()
    return sorted(scores(rows, weights, (total or 0) / docs), key=lambda r: -r[0])[:limit]


def drop_chunks(cur: sqlite3.Cursor, rel: str) -> None:
    # An external-content FTS5 table forgets a row only when told its old text.
    cur.execute(
        "INSERT INTO chunk_terms (chunk_terms, rowid, text) SELECT 'delete', rowid, text FROM chunks WHERE path=?",
        (rel,),
    )
    cur.execute("DELETE FROM chunks WHERE path=?", (rel,))


def replace_chunks(cur: sqlite3.Cursor, rel: str, status: str, chunks: Sequence[Chunk], next_rowid: int) -> int:
    """The path's chunks and their terms, in place of its old ones, from row id
    ``next_rowid`` on; the next free row id."""
    drop_chunks(cur, rel)
    rows = [
        (next_rowid + i, c.chunk_id, rel, c.section, status, c.content_hash, c.text, token_count(c.text))
        for i, c in enumerate(chunks)
    ]
    cur.executemany(
        "INSERT OR REPLACE INTO chunks (rowid, chunk_id, path, section, status, hash, text, tokens)"
        " VALUES (?,?,?,?,?,?,?,?)",
        rows,
    )
    cur.executemany("INSERT INTO chunk_terms (rowid, text) VALUES (?,?)", [(r[0], r[6]) for r in rows])
    return next_rowid + len(rows)


def write_files(
    db: sqlite3.Connection,
    changed: list[Memory],
    removed: list[str],
    known: dict[str, str],
    progress: Progress | None,
    cancel: threading.Event,
    errors: list[str],
) -> None:
    """Write the chunks and their BM25 terms, a batch of files per
    transaction (an interrupt keeps the batches done); a file that cannot be
    read now (changed or gone since the scan) is left out (said in ``errors``)
    and retried on the next update. ``known``: path -> fingerprint, kept current."""
    cur = db.cursor()
    for rel in removed:
        drop_chunks(cur, rel)
        cur.execute("DELETE FROM files WHERE path=?", (rel,))
        known.pop(rel, None)
    db.commit()
    next_rowid = (cur.execute("SELECT MAX(rowid) FROM chunks").fetchone()[0] or 0) + 1
    for done, memory in enumerate(changed, start=1):
        if cancel.is_set():
            db.commit()
            raise Cancelled()
        try:
            chunks = chunk_memory(memory)
        except PalinodeError as exc:
            errors.append(f"{memory.rel}: {exc}")
            continue
        status = memory.status.lower()
        next_rowid = replace_chunks(cur, memory.rel, status, chunks, next_rowid)
        cur.execute("INSERT OR REPLACE INTO files VALUES (?,?,?)", (memory.rel, memory.fingerprint, status))
        known[memory.rel] = memory.fingerprint
        if done % COMMIT_EVERY == 0:
            db.commit()
        if progress and (done % 200 == 0 or done == len(changed)):
            progress("lexical", done, len(changed))
    db.commit()
