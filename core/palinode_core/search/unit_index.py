"""The unit index: every unit a preference can sit in (sentence, list item,
clause-bearing line, unstrikeable line, frontmatter field) of every memory
version the store holds now, keyed by the version's content fingerprint, with
its stems and entity words in an FTS5 table. A plan finds every unit sharing a
word with a preference by lookup instead of reading and segmenting the store;
a unit's vector lives in the vector cache (search.vectors) under its text hash,
like every other vector, so the semantic arm reads every unit that has one.

Tables, in the index's ``index.sqlite3`` (see docs/cache.md)::

    unit_versions(fingerprint PRIMARY KEY, units, strikeable)
    units(id PRIMARY KEY, fingerprint, seq, kind, field, line, hash, text)   (and, for a vector
        only, each sentence of a list item holding several: kind item_sentence, no terms)
    unit_terms  FTS5(stems, entities), rowid = units.id
    unit_texts(hash PRIMARY KEY, refs, embedded, screened)   distinct unit texts: how many units, has a
        vector, judged far from every covered preference by the cheap pass (search.cascade)
    pref_scans(pref PRIMARY KEY, vec, covered)   a preference (text hash), its vector, and whether
        the cascade has embedded every text it may be near
    pref_sims(pref, hash, sim)             every unit text whose vector is at least SIM_FLOOR near it

A preference's similarities are computed once, by one scan of every vector
when it is first planned, and kept current as vectors are added (in the same
transaction that stores them), so the semantic arm of a plan is a lookup too.

A version is written whole in one transaction, so an interrupted sync resumes
at the next version; versions no memory has any more are dropped by the sync.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import Cancelled
from ..storage.child import Progress
from ..storage.memory import Memory
from ..text.letters import fold, words
from ..text.stem import counted_stems
from ..text.units import memory_units, vector_pieces
from . import derived
from .chunks import text_hash
from .embed import DIM

if TYPE_CHECKING:
    import numpy as np


SCHEMA = """
CREATE TABLE IF NOT EXISTS unit_versions (fingerprint TEXT PRIMARY KEY, units INTEGER, strikeable INTEGER);
CREATE TABLE IF NOT EXISTS units (id INTEGER PRIMARY KEY, fingerprint TEXT NOT NULL, seq INTEGER, kind TEXT,
  field TEXT, line INTEGER, hash TEXT, text TEXT);
CREATE INDEX IF NOT EXISTS units_fingerprint ON units(fingerprint);
CREATE INDEX IF NOT EXISTS units_hash ON units(hash);
CREATE VIRTUAL TABLE IF NOT EXISTS unit_terms USING fts5(stems, entities, detail=none,
  tokenize="unicode61 remove_diacritics 0 categories 'L* N* Co M*'");
CREATE VIRTUAL TABLE IF NOT EXISTS unit_vocab USING fts5vocab(unit_terms, 'row');
CREATE TABLE IF NOT EXISTS unit_texts (hash TEXT PRIMARY KEY, refs INTEGER NOT NULL, embedded INTEGER NOT NULL,
  screened INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS unit_texts_embedded ON unit_texts(embedded, screened);
CREATE TABLE IF NOT EXISTS pref_scans (pref TEXT PRIMARY KEY, vec BLOB NOT NULL, covered INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS pref_sims (pref TEXT, hash TEXT, sim REAL, PRIMARY KEY (pref, hash)) WITHOUT ROWID;
"""
_MARK_EMBEDDED = "UPDATE unit_texts SET embedded = 1 WHERE hash = ?"
# A text nearer a preference than this is kept in pref_sims; below it evidence.fuse
# scores a unit sharing no word 0 whatever else holds, so nothing below is ever needed.
SIM_FLOOR = 0.3
# Bump when a unit table or how a unit is derived changes: the tables are rebuilt (vectors are kept).
# 4: the sentences of a list item holding several get vectors (rows of kind item_sentence);
# 5: Snowball stems of whole words in any script (a combining mark is part of its word);
# 6: the clauses of a sentence holding several get vectors too (text.units.vector_pieces);
# 7: which texts the cascade screened and which preferences it covered (search.cascade)
SCHEMA_VERSION = 7
# versions per transaction: the unit of resuming an interrupted sync. Each commit rewrites the
# hash-keyed pages its units touch all over the tables: at 200, a first sync of 10k memories
# spent 8.6 s in system calls (of 28.5 s); at 500, 4.3 s (of 22.2 s), 12 MB more held.
COMMIT_EVERY = 500
BLOCK = 8192  # vectors per block of the semantic scan: memory stays flat at any store size
_LISTING_PAGE = 20000  # texts with no vector listed per hold of the index lock
_OPENER_RE = re.compile(r"[.!?:\-*#|]\s*")  # a sentence or list-item opener and the blanks after it


_ASCII_NAME_RE = re.compile(r"(?<![A-Za-z])[A-Z][a-z][A-Za-z]*")


def entity_words(text: str) -> set[str]:
    """Capitalised words (any script) not opening the text: the names a unit mentions."""
    out: set[str] = set()
    if text.isascii() and _ASCII_NAME_RE.search(text, 1) is None:
        return out  # no capitalised word past the first letter: nothing to walk (most units)
    # the openers are walked in step with the names: the text before each name, copied to look
    # at its end, was quadratic (a 1 MB run of Titlecase words took 2.6 s, 2 MB 18 s)
    openers = _OPENER_RE.finditer(text)
    opened = -1  # where the last opener looked at, with the blanks after it, ends
    for m in words(text):
        w = m.group()
        if m.start() == 0 or len(w) < 2 or not (w[0].isupper() and w[1].islower()):
            continue
        while opened < m.start():
            opener = next(openers, None)
            opened = opener.end() if opener else len(text) + 1
        if opened == m.start():
            continue  # a sentence or list-item opener, not a name
        out.add(fold(w))
    return out


# a row for a vector only (a list item's sentence, a sentence's clause): not a unit of its own, no terms
ITEM_SENTENCE = "item_sentence"


def _in_an_address(text: str, start: int, end: int) -> bool:
    """A word inside an e-mail address, a URL, a path or an identifier ("dana@startup.com")
    is no use of it as a common word."""
    before = text[start - 1] if start else " "
    after = text[end] if end < len(text) else " "
    return before in "@./_\\:" or after in "@_/\\" or (after == "." and end + 1 < len(text) and text[end + 1].isalnum())


def indexable(memory: Memory) -> bool:
    return not memory.is_history


def fts_query(terms: Iterable[str], prefix: bool = True) -> str | None:
    """An FTS5 query matching any of ``terms`` (any term starting with one, by default)."""
    # a term is one word as the tokenizer reads it (letters and marks, any script): quoted, it is data
    kept = [t for t in ("".join(m.group() for m in words(fold(p))) for p in terms) if t]
    star = "*" if prefix else ""
    return " OR ".join(f'"{t}"{star}' for t in sorted(set(kept))) or None


@dataclass
class UnitStats:
    versions: int = 0  # versions indexed now
    added: int = 0  # versions segmented by the last sync
    dropped: int = 0  # versions removed by the last sync
    units: int = 0
    unreadable: int = 0


class _Changed(Exception):
    """The file no longer holds the version the scan saw."""


def _version_units(memory: Memory) -> list[tuple[str, str | None, int, str, bool]]:
    """(kind, field, line, text, strikeable) of each unit of the memory's
    version, read now; _Changed when the file holds another version."""
    # a memory from the scan cache is read here and not kept: memory stays flat
    if memory.text_read or memory.reload is None:
        doc = memory.doc
    else:
        fresh = memory.reload()
        if fresh.fingerprint != memory.fingerprint:
            raise _Changed(memory.rel)
        doc = fresh.doc
    return [(u.kind, u.field, u.line, u.text, u.strikeable) for u in memory_units(doc.body, doc.meta)]


class UnitIndex:
    def __init__(self, db: sqlite3.Connection, lock: threading.RLock, cancel: threading.Event) -> None:
        self._db = db
        self._lock = lock
        self._cancel = cancel
        self.stats = UnitStats()
        self.notice: str | None = None  # one line when rows that did not match their file were rebuilt
        self._known: tuple[int, frozenset[str]] | None = None
        with lock:
            if db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                # another layout (an older release): the unit tables are rebuilt from the store, in one
                # transaction, so a second process sees the old tables or the new ones, never none
                db.commit()
                db.execute("BEGIN IMMEDIATE")
                try:
                    if db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:  # not done meanwhile
                        for table in (
                            "unit_vocab",
                            "unit_versions",
                            "units",
                            "unit_terms",
                            "unit_texts",
                            "pref_scans",
                            "pref_sims",
                        ):
                            db.execute(f"DROP TABLE IF EXISTS {table}")
                        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                        for statement in SCHEMA.split(";"):
                            if statement.strip():
                                db.execute(statement)
                    db.commit()
                except BaseException:
                    db.rollback()
                    raise
            db.executescript(SCHEMA)

    # -- keeping it current ---------------------------------------------------------
    def known(self) -> frozenset[str]:
        """The versions indexed, read again only when the units' generation moves
        (10,000 rows: a sync and a plan both ask)."""
        with self._lock:
            gen = derived.generation(self._db, derived.UNITS)
            if self._known is None or self._known[0] != gen or gen < 0 or self._db.in_transaction:
                rows = frozenset(r[0] for r in self._db.execute("SELECT fingerprint FROM unit_versions"))
                # rows of a transaction still open may be rolled back: never kept
                self._known = None if self._db.in_transaction else (gen, rows)
                return rows
            return self._known[1]

    def behind(self, memories: Mapping[str, Memory]) -> int:
        """Versions of ``memories`` not indexed yet."""
        known = self.known()
        return len({m.fingerprint for m in memories.values() if indexable(m)} - known)

    def sync(self, memories: Mapping[str, Memory], progress: Progress | None = None) -> UnitStats:
        """Segment the versions not indexed yet (only those), drop the ones no memory has."""
        wanted: dict[str, Memory] = {}
        for memory in memories.values():
            if indexable(memory):
                wanted.setdefault(memory.fingerprint, memory)
        known = self.known()
        todo = [m for fp, m in wanted.items() if fp not in known]
        gone = [fp for fp in known if fp not in wanted]
        self.stats.added = self.stats.dropped = 0
        if gone:
            with self._lock:
                for fp in gone:
                    self._drop(fp)
                self._db.commit()
            self.stats.dropped = len(gone)
        skipped = 0  # changed since the scan: left for the next sync
        batch: list[tuple[Memory, list[tuple[str, str | None, int, str, bool]]]] = []
        for done, memory in enumerate(todo, start=1):
            if self._cancel.is_set():
                self._write(batch)
                raise Cancelled()
            try:
                units = _version_units(memory)
            except _Changed:  # read whole by plans until the next sync indexes it (gather.candidate_paths)
                self.stats.unreadable += 1
                skipped += 1
                continue
            except Exception:  # unreadable: retried by the next sync
                self.stats.unreadable += 1
                continue
            batch.append((memory, units))
            if len(batch) >= COMMIT_EVERY:
                self._write(batch)
                batch = []
            if progress and (done % 100 == 0 or done == len(todo)):
                progress("segmenting", done, len(todo))
        self._write(batch)
        self.stats.added = len(todo) - skipped
        with self._lock:
            self.stats.versions = self._db.execute("SELECT COUNT(*) FROM unit_versions").fetchone()[0]
            # each version records its count: a COUNT(*) of every unit row took 10 ms warm at 10k, 330 ms cold
            self.stats.units = int(self._db.execute("SELECT TOTAL(units) FROM unit_versions").fetchone()[0])
        return self.stats

    def rebuild(self, memories: Iterable[Memory]) -> int:
        """Segment these versions again and write their rows anew (rows found
        not to match the file they were read from: gather.candidate_paths
        checks what a lookup leaves out); how many were rewritten."""
        batch = []
        for memory in memories:
            try:
                batch.append((memory, _version_units(memory)))
            except Exception:  # unreadable or changed now: the next sync decides
                continue
        self._write(batch)
        self.notice = (
            f"the unit index's rows for {len(batch)} memory version(s) did not match the file (damaged or altered);"
            " rebuilt from the file"
        )
        return len(batch)

    def take_notice(self) -> str | None:
        """The line about rows rebuilt since it was last taken (each repair is said once)."""
        notice, self.notice = self.notice, None
        return notice

    def _drop(self, fingerprint: str) -> None:
        hashes = self._db.execute("SELECT hash FROM units WHERE fingerprint=?", (fingerprint,)).fetchall()
        if hashes:
            self._db.executemany("UPDATE unit_texts SET refs = refs - 1 WHERE hash = ?", hashes)
            # only the texts this version referenced: a scan of every text per version would be quadratic
            self._db.executemany("DELETE FROM unit_texts WHERE hash = ? AND refs <= 0", hashes)
            self._db.execute(
                "DELETE FROM unit_terms WHERE rowid IN (SELECT id FROM units WHERE fingerprint=?)", (fingerprint,)
            )
            self._db.execute("DELETE FROM units WHERE fingerprint=?", (fingerprint,))
        self._db.execute("DELETE FROM unit_versions WHERE fingerprint=?", (fingerprint,))

    def _write(self, batch: list[tuple[Memory, list[tuple[str, str | None, int, str, bool]]]]) -> None:
        if not batch:
            return
        with self._lock:
            for memory, _units in batch:
                self._drop(memory.fingerprint)  # a half-written version (another writer) is replaced whole
            next_id = (self._db.execute("SELECT MAX(id) FROM units").fetchone()[0] or 0) + 1
            unit_rows, term_rows, text_rows, version_rows = [], [], [], []
            for memory, units in batch:
                fp = memory.fingerprint
                for seq, (kind, field, line, text, _strikeable) in enumerate(units):
                    h = text_hash(text)
                    unit_rows.append((next_id, fp, seq, kind, field, line, h, text))
                    # every stem lexical evidence counts: a unit the lookup misses is never read
                    term_rows.append(
                        (next_id, " ".join(sorted(counted_stems(text))), " ".join(sorted(entity_words(text))))
                    )
                    text_rows.append((h, h, DIM * 4))
                    next_id += 1
                    # each sentence of an item holding several gets a vector too (no terms: the item has
                    # its stems), so a sentence struck inside an item is judged by its own meaning
                    for piece in vector_pieces(kind, text):
                        ph = text_hash(piece)
                        unit_rows.append((next_id, fp, seq, ITEM_SENTENCE, None, line, ph, piece))
                        text_rows.append((ph, ph, DIM * 4))
                        next_id += 1
                version_rows.append((fp, len(units), sum(1 for u in units if u[4])))
            self._db.executemany(
                "INSERT INTO units (id, fingerprint, seq, kind, field, line, hash, text) VALUES (?,?,?,?,?,?,?,?)",
                unit_rows,
            )
            self._db.executemany("INSERT INTO unit_terms (rowid, stems, entities) VALUES (?,?,?)", term_rows)
            text_rows.sort()  # in key order: each page of the hash-keyed table is visited once (6.8 -> 3.9 s at 10k)
            self._db.executemany(
                "INSERT INTO unit_texts (hash, refs, embedded) VALUES (?, 1, EXISTS (SELECT 1 FROM vectors WHERE hash=? AND"
                " length(vec) = ?)) ON CONFLICT(hash) DO UPDATE SET refs = refs + 1",
                text_rows,
            )
            self._db.executemany("INSERT OR REPLACE INTO unit_versions VALUES (?,?,?)", version_rows)
            self._db.commit()

    # -- lookups ------------------------------------------------------------------------
    def lexical_hits(self, stems: Iterable[str]) -> list[tuple[str, str]]:
        """(fingerprint, unit text) of every unit holding one of ``stems``. Exactly: lexical
        evidence counts only a unit's own stems that equal the preference's (every
        inflection stems alike), and a prefix ("tea"*) read every memory about a team."""
        query = fts_query(stems, prefix=False)
        if query is None:
            return []
        with self._lock:
            return self._db.execute(
                "SELECT u.fingerprint, u.text FROM unit_terms JOIN units u ON u.id = unit_terms.rowid"
                " WHERE unit_terms MATCH ?",
                (query,),
            ).fetchall()

    def stem_frequencies(self, stems: Iterable[str]) -> tuple[dict[str, int], int]:
        """How many units hold each stem, and how many units there are: how
        specific a word is in this store (forget.judgment weighs shared words by it)."""
        wanted = sorted({fold(s) for s in stems if s})
        with self._lock:
            total = int(self._db.execute("SELECT TOTAL(units) FROM unit_versions").fetchone()[0])
            found: dict[str, int] = {}
            for i in range(0, len(wanted), 500):
                part = wanted[i : i + 500]
                found.update(
                    self._db.execute(
                        f"SELECT term, doc FROM unit_vocab WHERE term IN ({','.join('?' * len(part))})", part
                    ).fetchall()
                )
        return {s: int(found.get(s, 0)) for s in wanted}, total

    def remembered(self, name: str, compute: Callable[[], str]) -> str:
        """``compute()``, kept until a version is indexed or dropped (what is derived
        from the memories the index holds: read once, not per command)."""
        with self._lock:
            return derived.cached_text(self._db, name, derived.UNITS, compute, lambda _value: True)

    def used_lowercase(self, word: str, limit: int = 200) -> bool:
        """Whether the store writes ``word`` in lower case somewhere ("home", "weekends"):
        a common word, so a sentence opening with it names nobody."""
        low = fold(word)
        return any(
            m.group() == low and not _in_an_address(text, m.start(), m.end())
            for text in self._texts_holding(low, limit)
            for m in words(text)
        )

    def used_as_name(self, word: str, limit: int = 200) -> bool:
        """Whether the store writes ``word`` with a capital inside a sentence ("met
        Manning at the pub"): a name, so a sentence opening with it may name someone."""
        low = fold(word)
        return any(low in entity_words(text) for text in self._texts_holding(low, limit))

    def _texts_holding(self, low: str, limit: int) -> list[str]:
        """Up to ``limit`` unit texts holding ``low``'s stem."""
        query = fts_query(counted_stems(low), prefix=False)
        if query is None:
            return []
        with self._lock:
            rows = self._db.execute(
                "SELECT u.text FROM unit_terms JOIN units u ON u.id = unit_terms.rowid WHERE unit_terms MATCH ? LIMIT ?",
                (query, limit),
            ).fetchall()
        return [text for (text,) in rows]

    def texts_missing_vectors(self, first: Iterable[str] = ()) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        """(hash, text) of distinct unit texts with no cached vector, split in
        those holding one of the stems ``first`` (pending requests' stems), to
        embed first as the likeliest evidence, and the rest."""
        query = fts_query(first, prefix=False)
        rows: list[tuple[str, str]] = []
        after = ""
        while True:  # a page at a time, the index unlocked between (10k: 0.7 s in all): a plan meanwhile waits not
            with self._lock:
                page = self._db.execute(
                    "SELECT t.hash, (SELECT text FROM units u WHERE u.hash = t.hash LIMIT 1) FROM unit_texts t"
                    " WHERE t.hash > ? AND NOT t.embedded ORDER BY t.hash LIMIT ?",
                    (after, _LISTING_PAGE),
                ).fetchall()
            rows += page
            if len(page) < _LISTING_PAGE:
                break
            after = page[-1][0]
        with self._lock:
            likely: set[str] = set()
            if query and rows:
                # a matching unit, and the sentences of it when it is a list item (their rows share its seq)
                likely = {
                    r[0]
                    for r in self._db.execute(
                        "SELECT s.hash FROM unit_terms JOIN units u ON u.id = unit_terms.rowid"
                        " JOIN units s ON s.fingerprint = u.fingerprint AND s.seq = u.seq WHERE unit_terms MATCH ?",
                        (query,),
                    )
                }
        return [r for r in rows if r[0] in likely], [r for r in rows if r[0] not in likely]

    # -- what the cascade has done (search.cascade) ------------------------------------------
    def screened(self, hashes: Iterable[str]) -> set[str]:
        """Those of ``hashes`` the cascade has judged far from every preference it covered."""
        return self._of_hashes("hash", hashes, "AND screened", table="unit_texts")

    def mark_screened(self, hashes: Iterable[str], prefs: Iterable[str]) -> None:
        """The cascade is done: ``hashes`` are far from every preference, each of ``prefs`` is covered."""
        keys = [text_hash(p) for p in prefs]
        rows = [(h,) for h in hashes]
        with self._lock:
            if rows:  # judged far from these preferences only: any other one covered before is covered no more
                self._db.execute(
                    f"UPDATE pref_scans SET covered = 0 WHERE pref NOT IN ({','.join('?' * len(keys))})", keys
                )
            self._db.executemany("UPDATE unit_texts SET screened = 1 WHERE hash = ?", rows)
            self._db.executemany("UPDATE pref_scans SET covered = 1 WHERE pref = ?", [(k,) for k in keys])
            self._db.commit()

    def fresh(self, limit: int) -> list[tuple[str, str]] | None:
        """(hash, text) of the unit texts with no vector the cascade never screened
        (written since it last ran), once it has covered a preference; None when it
        never has or there are more than ``limit``."""
        with self._lock:
            if self._db.execute("SELECT 1 FROM pref_scans WHERE covered LIMIT 1").fetchone() is None:
                return None
            rows = self._db.execute(
                "SELECT t.hash, (SELECT text FROM units u WHERE u.hash = t.hash LIMIT 1) FROM unit_texts t"
                " WHERE embedded = 0 AND screened = 0 LIMIT ?",
                (limit + 1,),
            ).fetchall()
        return rows if len(rows) <= limit else None

    def covered_prefs(self, prefs: Iterable[str]) -> set[str]:
        """Those of ``prefs`` the cascade has covered (whatever has been added since)."""
        wanted = {text_hash(p): p for p in prefs}
        with self._lock:
            found = {
                r[0] for r in self._db.execute("SELECT pref FROM pref_scans WHERE covered").fetchall() if r[0] in wanted
            }
        return {wanted[h] for h in found}

    def covered(self, pref: str) -> bool:
        """Every unit text that may be near ``pref`` has a vector: every text has one, or the
        cascade covered ``pref`` and each text with none was judged far since."""
        with self._lock:
            return bool(
                self._db.execute(
                    "SELECT NOT EXISTS (SELECT 1 FROM unit_texts WHERE embedded = 0 AND screened = 0) AND"
                    " (NOT EXISTS (SELECT 1 FROM unit_texts WHERE embedded = 0)"
                    " OR EXISTS (SELECT 1 FROM pref_scans WHERE pref = ? AND covered))",
                    (text_hash(pref),),
                ).fetchone()[0]
            )

    def coverage(self) -> tuple[int, int]:
        """(distinct unit texts with a vector, distinct unit texts)."""

        def count() -> str:
            # counted on the small index (embedded, hash): the table read whole took 25 ms at 10k
            total = self._db.execute("SELECT COUNT(*) FROM unit_texts INDEXED BY unit_texts_embedded").fetchone()[0]
            embedded = self._db.execute("SELECT COUNT(*) FROM unit_texts WHERE embedded = 1").fetchone()[0]
            return f"{int(embedded)} {int(total)}"

        with self._lock:
            embedded, total = derived.cached_text(
                self._db, "unit_coverage", derived.UNITS, count, derived.two_counts
            ).split()
        return int(embedded), int(total)

    def _vector_blocks(self) -> Iterator[tuple[list[str], np.ndarray]]:
        import numpy as np

        # the unit texts' only: a chunk's vector (embedded by `index --full`, not by the cascade) is no unit,
        # and counted among a preference's nearest it would make a plan depend on which were embedded
        cur = self._db.execute(
            "SELECT v.hash, v.vec FROM unit_texts t JOIN vectors v ON v.hash = t.hash WHERE length(v.vec) = ?",
            (DIM * 4,),
        )
        while True:
            rows = cur.fetchmany(BLOCK)
            if not rows:
                return
            yield [r[0] for r in rows], np.frombuffer(b"".join(r[1] for r in rows), np.float32).reshape(-1, DIM)

    def near(self, pref: str, qvec: bytes) -> dict[str, float]:
        """Text hash -> similarity of every vector at least SIM_FLOOR near
        ``pref`` (its vector as float32 bytes): stored ones, or one scan of every
        vector (a block at a time) the first time this preference is asked for,
        stored for the next. Only that scan imports numpy."""
        self.scan([(pref, qvec)])
        with self._lock:
            return dict(self._db.execute("SELECT hash, sim FROM pref_sims WHERE pref=?", (text_hash(pref),)).fetchall())

    def scan(self, prefs: list[tuple[str, bytes]]) -> None:
        """Store the similarities of each of ``prefs`` (text, vector bytes) never
        scanned, all in one pass over the vectors."""
        with self._lock:
            keys = {text_hash(p): bytes(v) for p, v in prefs if len(v) == DIM * 4}
            scanned = self._scanned(keys)
            if all(k in scanned for k in keys):
                return
            import numpy as np

            self._db.commit()
            self._db.execute("BEGIN IMMEDIATE")  # no other writer adds vectors mid-scan
            try:
                todo = [k for k in keys if k not in self._scanned(keys)]
                queries = np.frombuffer(b"".join(keys[k] for k in todo), np.float32).reshape(-1, DIM)
                rows: list[tuple[str, str, float]] = []
                for hashes, block in self._vector_blocks():
                    sims = block @ queries.T
                    rows.extend(
                        (todo[j], hashes[i], float(sims[i, j]))
                        for i, j in zip(*(sims >= SIM_FLOOR).nonzero(), strict=True)
                    )
                self._db.executemany("INSERT OR REPLACE INTO pref_sims VALUES (?,?,?)", rows)
                self._db.executemany(
                    "INSERT OR REPLACE INTO pref_scans (pref, vec) VALUES (?,?)", [(k, keys[k]) for k in todo]
                )
                self._db.commit()
            except BaseException:
                self._db.rollback()
                raise

    def _scanned(self, keys: Iterable[str]) -> set[str]:
        wanted = list(keys)
        return {
            r[0]
            for r in self._db.execute(
                f"SELECT pref FROM pref_scans WHERE pref IN ({','.join('?' * len(wanted))})", wanted
            ).fetchall()
        }

    def vectors_added(self, hashes: list[str], vecs: np.ndarray) -> None:
        """The vector cache's insert hook (its lock held, its transaction
        open): similarities of the new vectors to every preference scanned."""
        import numpy as np

        units = [i for i, h in enumerate(hashes) if self._db.execute(_MARK_EMBEDDED, (h,)).rowcount]
        prefs = self._db.execute("SELECT pref, vec FROM pref_scans WHERE length(vec) = ?", (DIM * 4,)).fetchall()
        if not prefs or not units:  # only unit texts are a preference's neighbours (_vector_blocks)
            return
        hashes = [hashes[i] for i in units]
        qmat = np.frombuffer(b"".join(p[1] for p in prefs), np.float32).reshape(-1, DIM)
        sims = np.asarray(vecs, np.float32)[units] @ qmat.T
        rows = [
            (prefs[j][0], hashes[i], float(sims[i, j])) for i, j in zip(*(sims >= SIM_FLOOR).nonzero(), strict=True)
        ]
        self._db.executemany("INSERT OR REPLACE INTO pref_sims VALUES (?,?,?)", rows)

    def vectors_of(self, hashes: list[str]) -> tuple[list[str], list[bytes]]:
        """The cached vectors (float32 bytes) of these text hashes (those that have one), in order."""
        found: dict[str, bytes] = {}
        with self._lock:
            for i in range(0, len(hashes), 500):
                part = hashes[i : i + 500]
                found.update(
                    self._db.execute(
                        f"SELECT hash, vec FROM vectors WHERE length(vec) = ? AND hash IN ({','.join('?' * len(part))})",
                        [DIM * 4, *part],
                    ).fetchall()
                )
        kept = [h for h in hashes if h in found]
        return kept, [found[h] for h in kept]

    def units_of(self, hashes: Iterable[str]) -> list[tuple[str, str, str]]:
        """(text hash, fingerprint, text) of every unit whose text has one of ``hashes``."""
        wanted = list(dict.fromkeys(hashes))
        out: list[tuple[str, str, str]] = []
        with self._lock:
            for i in range(0, len(wanted), 500):
                part = wanted[i : i + 500]
                sql = f"SELECT hash, fingerprint, text FROM units WHERE hash IN ({','.join('?' * len(part))})"
                out.extend(self._db.execute(sql, part).fetchall())
        return out

    def unit_hashes(self, hashes: Iterable[str]) -> set[str]:
        """Those of ``hashes`` that are the text of a unit (not only of a list item's sentence)."""
        return self._of_hashes("hash", hashes, f"AND kind != '{ITEM_SENTENCE}'")

    def fingerprints_of(self, hashes: Iterable[str]) -> set[str]:
        return self._of_hashes("fingerprint", hashes)

    def _of_hashes(self, column: str, hashes: Iterable[str], where: str = "", table: str = "units") -> set[str]:
        """A column of the rows of ``table`` (the unit rows) holding any of ``hashes``, 500 bound values a query."""
        wanted = list(dict.fromkeys(hashes))
        out: set[str] = set()
        with self._lock:
            for i in range(0, len(wanted), 500):
                part = wanted[i : i + 500]
                sql = f"SELECT DISTINCT {column} FROM {table} WHERE hash IN ({','.join('?' * len(part))}) {where}"
                out.update(r[0] for r in self._db.execute(sql, part))
        return out
