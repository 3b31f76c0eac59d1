"""The store's own hybrid search: BM25 over SQLite FTS5 (as Palinode 0.23's own
keyword arm: unicode61 tokens, content words OR-ed) plus MiniLM vectors, fused by
reciprocal rank fusion (k=60, equal weights), as Palinode ranks (spec §7).

The index lives in the store's cache folder (docs/cache.md), updated per changed
file; vectors are cached by text hash, so a search for text already embedded (a
request's preference) never loads the model. numpy is imported only with vectors.
"""

from __future__ import annotations

import re
import sqlite3
import sys
import threading
from array import array
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import Cancelled, EmbeddingUnavailable, PalinodeError
from ..storage.child import ISOLATE_ABOVE, Progress, run_audit
from ..storage.memory import Memory
from ..storage.store import Store
from ..text.words import content_words
from . import bm25, cascade, damage, derived
from .embed import DIM, VECTORS_EXTRA_NOTICE, Embedder
from .rank import Row, fuse, nearest
from .results import IndexStats, SearchMode, SearchResult
from .unit_index import UnitIndex
from .vectors import VectorCache

if TYPE_CHECKING:
    import numpy as np

# Below this many vectors, dot products in plain Python (double precision, ~13 ms
# per 1,000) cost less than importing numpy (~80 ms): a small store's plan needs no numpy.
NUMPY_ABOVE = 4096
RESCORE_POOL = 2000  # chunks a BM25 query ranks at most (FTS5's best first)
SEARCHABLE_BEHIND = 200  # versions to segment above which a plan need not wait for them (it reads them whole)
_TOKEN_RE = re.compile(r"\w+", re.UNICODE)


class SearchIndex:
    def __init__(self, store: Store, embedder: Embedder | None = None, cache_dir: Path | None = None):
        self.store = store
        self.embedder = embedder or Embedder()
        self.cache_dir = cache_dir or store.cache_dir
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._cancel = threading.Event()
        self._prefs: list[str] = []  # forget requests' preferences seen by the last update
        self.notice: str | None = None  # one line when a damaged index was discarded and rebuilt
        try:
            self._open()
        except Exception as exc:  # anything unreadable in a cache means: start over
            if not (damage.is_damage(exc) or self._unsound(exc)):
                raise
            self._discard(exc)
        self._matrix: derived.ChunkMatrix | None = None
        self.vectors_ready = False
        self.stats = IndexStats()
        self._known: dict[str, str] | None = None  # path -> fingerprint indexed (the files table)

    def cancel(self) -> None:
        """Stop an update running in another thread at its next document or batch."""
        self._cancel.set()

    def _open(self) -> None:
        self._db = sqlite3.connect(self.cache_dir / damage.INDEX_DB, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        # a cache: a power cut may lose its last commits, never its integrity
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA temp_store=MEMORY")  # statement journals (the triggers need them) off disk
        self._db.executescript(
            "CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, fingerprint TEXT, status TEXT);"
            "CREATE TABLE IF NOT EXISTS chunks (chunk_id TEXT PRIMARY KEY, path TEXT, section TEXT,"
            " status TEXT, hash TEXT, text TEXT, tokens INTEGER);"
            "CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path);"
        )
        bm25.open_terms(self._db, self.cache_dir / damage.WHOOSH_DIR)
        self._db.execute("SELECT COUNT(*) FROM chunk_terms WHERE chunk_terms MATCH 'x'").fetchone()  # damage fails here
        self.units = UnitIndex(self._db, self._lock, self._cancel)
        self._vectors = VectorCache(self._db, self._lock, self.embedder, self._cancel, self.units.vectors_added)
        derived.install(self._db)  # after every table it watches, and after a rebuild dropped their triggers

    def _unsound(self, exc: BaseException) -> bool:
        with self._lock:
            return damage.memory_error_is_damage(exc, getattr(self, "_db", None))

    def _discard(self, exc: BaseException) -> None:
        """Throw the damaged index away and open an empty one (the next update refills it)."""
        self.notice = f"search index was damaged ({damage.describe(exc)}); discarded and rebuilt from the store"
        try:
            if getattr(self, "_db", None) is not None:
                self._db.close()
        except Exception:  # it is being thrown away
            pass
        damage.discard(self.cache_dir)
        self._known = None
        self._matrix = None
        self._open()

    def _guarded(self, work: Callable[[], Any], refill: Callable[[], Any] | None = None) -> Any:
        """Run ``work``; on damage, discard the index, ``refill`` it, run ``work`` once more."""
        try:
            return work()
        except Exception as exc:
            if not (damage.is_damage(exc) or self._unsound(exc)):
                raise
            with self._lock:
                self._discard(exc)
            if refill is not None:
                refill()
            return work()

    # -- lexical -------------------------------------------------------------
    def update(self, progress: Progress | None = None, memories: dict[str, Memory] | None = None) -> IndexStats:
        """Bring BM25 up to date with the store (changed files only), then vectors."""
        self.update_lexical(progress, memories)
        self.update_vectors(progress)
        return self.stats

    def update_lexical(
        self,
        progress: Progress | None = None,
        memories: dict[str, Memory] | None = None,
        *,
        isolate: bool = False,
        searchable: Callable[[], None] | None = None,
        units: bool = True,
    ) -> None:
        self._guarded(lambda: self._update_lexical(progress, memories, isolate, searchable, units))

    def _update_lexical(
        self,
        progress: Progress | None,
        memories: dict[str, Memory] | None,
        isolate: bool,
        searchable: Callable[[], None] | None = None,
        units: bool = True,
    ) -> None:
        """Index changed files, drop removed ones. With ``isolate``, a big update
        (a first index) runs in a low-priority child process, so it does not
        compete with the caller's threads (an app's UI) for the GIL and CPU.
        ``searchable`` is called once the chunks are current when many versions
        are still to segment: a plan may run meanwhile (it reads those whole).
        Without ``units`` the sentences are left for a later update."""
        if memories is None:
            scan = self.store.scan()
            memories = scan.memories
            self.stats.errors = [f"{e.path}: {e.reason}" for e in scan.errors]
        # a request's preference is the query its plan searches: embed it with the chunks
        self._prefs = sorted({m.forget_pref for m in memories.values() if m.forget_pref})
        with self._lock:
            changed = self._changed(memories)
        if isolate and len(changed) > ISOLATE_ABOVE:
            try:  # the chunks alone first when a plan can start before the sentences are segmented
                self._update_in_child(progress, chunks_only=searchable is not None)
            except PalinodeError as exc:
                self.stats.errors.append(f"{exc}; indexed here instead")
            else:
                with self._lock:
                    changed = self._changed(memories)  # what changed while the child worked
        with self._lock:
            known = self._known_fingerprints()
            removed = [rel for rel in known if rel not in memories]
            total = len(changed) + len(removed)
            self.stats.files_reindexed = total
            if total:
                bm25.write_files(self._db, changed, removed, known, progress, self._cancel, self.stats.errors)
                self._matrix = None
            self.stats.chunks = self._chunk_sizes()[0]  # computed now when they changed: a plan reads it back
            self.stats.files = len(memories)
        if searchable is not None and self.units.behind(memories) > SEARCHABLE_BEHIND:
            searchable()
            if isolate:  # segmented on another core: the caller plans and draws meanwhile
                try:
                    self._update_in_child(progress)
                except PalinodeError as exc:
                    self.stats.errors.append(f"{exc}; segmented here instead")
        if units:
            self.units.sync(memories, progress)

    def _changed(self, memories: dict[str, Memory]) -> list[Memory]:
        known = self._known_fingerprints()
        return [m for rel, m in memories.items() if known.get(rel) != m.fingerprint]

    def _known_fingerprints(self) -> dict[str, str]:
        if self._known is None:
            self._known = dict(self._db.execute("SELECT path, fingerprint FROM files"))
        return self._known

    def _update_in_child(self, progress: Progress | None, chunks_only: bool = False) -> None:
        """``palinode-audit index --lexical`` (``--chunks-only``) in a child; our
        own update afterwards reconciles what changed meanwhile."""
        self._index_in_child(progress, "--lexical", *(["--chunks-only"] if chunks_only else []))

    def _index_in_child(self, progress: Progress | None, *flags: str, preempt: threading.Event | None = None) -> None:
        """``palinode-audit index <flags>`` on this store and cache in a low-priority child;
        whatever it wrote (files, vectors) is read afresh after, whether it ended or was stopped."""
        try:
            run_audit(
                ["index", str(self.store.root), *flags, "--cache-dir", str(self.cache_dir)],
                progress,
                self._cancel,
                preempt,
            )
        finally:
            with self._lock:
                self._known = None
                self._matrix = None

    def embed_everything(
        self, progress: Progress | None = None, *, isolate: bool = False, preempt: threading.Event | None = None
    ) -> bool:
        """Every chunk and unit text embedded (``update_vectors(full=True)``), for search by
        meaning beyond what plans need. With ``isolate``, when the cascade left many, they are
        embedded by ``palinode-audit index --full`` in a low-priority child (at 10k memories,
        about half an hour of CPU): the caller's plans and UI meanwhile compete with it for
        neither the GIL nor the index's lock. What it left or what changed since is then done here.
        ``preempt`` set (a memory written meanwhile, to cover in seconds) stops the child: False
        then, its vectors so far kept; a later call resumes."""
        embedded, units = self._guarded(self.units.coverage)
        if isolate and units - embedded >= cascade.BELOW:
            try:
                self._index_in_child(progress, "--full", preempt=preempt)
            except Cancelled:
                if self._cancel.is_set():
                    raise
                return False
            except PalinodeError as exc:
                self.stats.errors.append(f"{exc}; embedded here instead")
        return self.update_vectors(progress, full=True)

    def update_vectors(
        self,
        progress: Progress | None = None,
        limit: int | None = None,
        texts: Sequence[str] = (),
        on_likely: Callable[[], None] | None = None,
        *,
        full: bool = False,
        cover: Sequence[str] | None = None,
    ) -> bool:
        """Embed every forget request's preference and extra ``texts`` with no
        cached vector, then the unit texts plans need: those sharing a stem with
        a request first (``on_likely`` is called when they are done), then what
        the cascade picks as near the preferences ``cover`` (default: every
        request's; search.cascade). With ``full``, every chunk and every unit
        text instead (``limit``: at most that many chunks and nothing else, for
        a budgeted benchmark). The model loads only if something is missing.
        False (with ``embedder.notice`` set) when it cannot load."""
        return bool(
            self._guarded(
                lambda: self._update_vectors(progress, limit, texts, on_likely, full, cover),
                lambda: self.update_lexical(progress),
            )
        )

    def _update_vectors(
        self,
        progress: Progress | None,
        limit: int | None,
        texts: Sequence[str],
        on_likely: Callable[[], None] | None,
        full: bool,
        cover: Sequence[str] | None,
    ) -> bool:
        from ..text.stem import stems

        prefs = sorted(set(self._prefs if cover is None else cover))
        # every request covered before (a rerun, the app opening a store `index` covered): what was written since
        # is all the cascade would embed, and listing every text with no vector (10k: 0.7 s, the index locked) is not
        fresh = None
        if not full and limit is None and prefs and len(self.units.covered_prefs(prefs)) == len(prefs):
            fresh = self.units.fresh(cascade.BELOW - 1)
            with_vector, texts_in_all = self.units.coverage()
            if fresh is not None and texts_in_all - with_vector - len(fresh) < cascade.BELOW:
                fresh = None  # so few without a vector that every text is embedded (below): listed as before
        likely: list[tuple[str, str]] = []
        if fresh is not None:
            rest = fresh
        else:
            likely, rest = self.units.texts_missing_vectors({s for pref in prefs for s in stems(pref)})
        # every chunk and unit text when asked, or when the cascade's own work would not pay
        whole = full or limit is not None or (fresh is None and len(rest) < cascade.BELOW)
        missing = self._vectors.missing([*self._prefs, *prefs, *texts])
        if whole:
            missing += self.missing_vectors(limit)
        try:
            embedded = self._vectors.embed_pairs(missing, progress)
            first = {h for h, _ in missing}  # a one-sentence chunk is its sentence: embedded once
            likely, rest = [p for p in likely if p[0] not in first], [p for p in rest if p[0] not in first]
            if limit is None:  # then the unit texts, those sharing a stem with a request first
                total = len(likely) + (len(rest) if whole else 0)
                embedded += self._vectors.embed_pairs(likely, progress, "sentences", 0, total)
                if on_likely is not None and likely:
                    on_likely()
                far: list[str] = []
                if whole:
                    embedded += self._vectors.embed_pairs(rest, progress, "sentences", len(likely), total)
                else:
                    done, far = cascade.cover(self.units, self._vectors, prefs, rest, progress, self._cancel)
                    embedded += done
                self._scan_prefs()
                self.units.mark_screened(far, prefs)
        except EmbeddingUnavailable:
            self.vectors_ready = False
            return False
        self.stats.embedded_this_session += embedded
        with self._lock:
            self._matrix = None
            self.stats.vectors = self._vectors.count()
        # hybrid once every chunk has a vector (a budgeted benchmark's ``limit``: over those it embedded)
        self.vectors_ready = limit is not None or not self._a_vector_missing()
        return True

    def embed_fresh(self, progress: Progress | None = None) -> int:
        """Embed the sentences written since the cascade last covered the
        requests (a new memory's), when there are at most cascade.FRESH: a plan
        made then has its coverage back in seconds. How many were embedded."""
        fresh = self._guarded(lambda: self.units.fresh(cascade.FRESH))
        if not fresh:
            return 0
        try:
            return self._vectors.embed_pairs(fresh, progress, "sentences")
        except EmbeddingUnavailable:
            return 0

    def derive(self) -> None:
        """Compute now what a plan reads back (`palinode-audit index` ends with
        it): the first plan after an index is then a warm one."""
        self._guarded(
            lambda: (self._chunk_sizes(), self._a_vector_missing(), self._vector_table(), self.units.coverage())
        )

    def _scan_prefs(self) -> None:
        """Each request's similarities to every unit, stored now (one pass over
        the vectors for all of them): a plan after ``index`` looks them up
        instead of scanning every vector first."""
        blobs = self._vectors.cached_blobs(self._prefs)
        self.units.scan([(pref, vec) for pref, vec in zip(self._prefs, blobs, strict=True) if vec is not None])

    def missing_vectors(self, limit: int | None = None) -> list[tuple[str, str]]:
        """(content hash, text) of chunks with no cached vector, in embedding order."""
        with self._lock:
            return self._db.execute(
                "SELECT c.hash, c.text FROM chunks c LEFT JOIN vectors v ON v.hash = c.hash"
                " WHERE v.hash IS NULL OR length(v.vec) != ? GROUP BY c.hash"
                " ORDER BY MIN(c.path) LIKE '%/gen-%', MIN(c.chunk_id)" + (" LIMIT ?" if limit else ""),
                (DIM * 4, limit) if limit else (DIM * 4,),
            ).fetchall()

    def _a_vector_missing(self) -> bool:
        # no GROUP BY nor ORDER BY: stops at the first chunk without a vector (missing_vectors sorts them all)
        def look() -> str:
            found = self._db.execute(
                "SELECT 1 FROM chunks c LEFT JOIN vectors v ON v.hash = c.hash"
                " WHERE v.hash IS NULL OR length(v.vec) != ? LIMIT 1",
                (DIM * 4,),
            ).fetchone()
            return "missing" if found is not None else "complete"

        with self._lock:
            return (
                derived.cached_text(
                    self._db, "chunk_vectors", derived.CHUNKS, look, lambda v: v in ("missing", "complete")
                )
                != "complete"
            )

    def check_vectors(self) -> bool:
        """Mark vectors ready when every chunk has one (no model loaded): a
        store indexed earlier searches hybrid without embedding anything."""
        if not self.vectors_ready:
            self.vectors_ready = not self._guarded(self._a_vector_missing) and bool(self.stats.chunks)
        return self.vectors_ready

    def has_vector(self, text: str) -> bool:
        return not self._vectors.missing([text])

    # the vector cache's API (search.vectors), for any text
    def vectors_for(self, texts: Sequence[str]) -> tuple[np.ndarray, list[int]]:
        """Cached vectors of ``texts`` and the indices of those with none (zero rows); never loads the model."""
        return self._vectors.vectors_for(texts)

    def cached_blobs(self, texts: Sequence[str]) -> list[bytes | None]:
        """Each text's cached vector as float32 bytes, or None; never loads numpy or the model."""
        return self._vectors.cached_blobs(texts)

    def embed_missing(self, texts: Sequence[str], progress: Progress | None = None) -> int:
        """Embed and cache the texts with no vector; how many were embedded.
        EmbeddingUnavailable if the model cannot load."""
        return self._vectors.embed_missing(texts, progress)

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of ``texts``, embedding (and caching) those not cached yet."""
        return self._vectors.vectors(texts)

    def _vector_table(self) -> tuple[np.ndarray | list[array], list[int]]:
        with self._lock:
            # kept while the chunks' generation stands: another process may have rewritten the chunks
            gen = derived.generation(self._db, derived.CHUNKS)
            if self._matrix is None or self._matrix.generation != gen or gen < 0:
                # Only the chunks' vectors: the sentences' (tens of thousands) are never read here.
                self._matrix = derived.chunk_matrix(
                    self._db, self.cache_dir, lambda n: n > NUMPY_ABOVE or "numpy" in sys.modules
                )
                if self._matrix.damaged:  # a cache miss, never used: the next update embeds those texts again
                    self.notice = "vector cache had damaged rows; they are ignored and will be embedded again"
            return self._matrix.vectors, self._matrix.rowids

    # -- query ---------------------------------------------------------------
    def search(
        self,
        query: str,
        limit: int = 10,
        *,
        include_archived: bool = False,
        lexical_only: bool = False,
        fts_floor: float = 0.4,
        per_file: int = 1,
        daily_penalty: bool = True,
    ) -> SearchResult:
        """Ranked hits, best first. Scores are rank artifacts (normalised RRF)."""
        excluded = set() if include_archived else {s.lower() for s in self.store.config.exclude_status}
        pool = max(limit * 2 * 3, 20)
        bm25 = self._guarded(lambda: self._bm25(query, pool, excluded, fts_floor), self.update_lexical)
        notice = None
        vector: list[Row] = []
        similarity: dict[str, float] = {}
        mode: SearchMode = "lexical"
        if lexical_only:
            notice = "lexical search (vectors not requested)"
        elif not self.vectors_ready:
            notice = self.embedder.notice or (
                "not every chunk has a vector yet (`palinode-audit index --full` embeds them all; the app does so in"
                " the background): this search is by words for now"
                if self.embedder.installed
                else VECTORS_EXTRA_NOTICE
            )
        else:
            try:
                vector, similarity = self._vector(query, pool, excluded)
                mode = "hybrid"
            except EmbeddingUnavailable as exc:
                notice = str(exc)
        hits = fuse(bm25, vector, limit, per_file, daily_penalty, similarity)
        # a hit the word search left under its floor but that holds a word of the query is related all the
        # same: a mention is never listed as "unrelated" because a busier memory says the word more often
        words = content_words(query)
        hits = [h if h.related or not words & content_words(h.text) else replace(h, related=True) for h in hits]
        return SearchResult(hits, mode, notice)

    def _bm25(self, query: str, limit: int, excluded: set[str], floor: float) -> list[Row]:
        terms = sorted(content_words(query)) or sorted({t.lower() for t in _TOKEN_RE.findall(query)})
        if not terms:
            return []

        with self._lock:
            scored = bm25.ranked(self._db, terms, excluded, limit, max(limit, RESCORE_POOL), self._chunk_sizes())
        if not scored:
            return []
        top = scored[0][0] or 1.0
        return self._rows("chunk_id", [cid for score, cid, _path in scored if score >= floor * top])

    def _chunk_sizes(self) -> tuple[int, int]:
        """(chunks, their tokens), kept under the chunks' generation."""
        with self._lock:
            docs, tokens = derived.cached_text(
                self._db, "chunk_sizes", derived.CHUNKS, lambda: bm25.sizes(self._db), derived.two_counts
            ).split()
        return int(docs), int(tokens)

    def _rows(self, key: str, keys: Sequence[str | int]) -> list[Row]:
        """The chunks whose ``key`` column (chunk_id or rowid) is in ``keys``, in that order."""
        found = self._rows_by(key, keys)
        return [found[k] for k in keys if k in found]

    def _rows_by(self, key: str, keys: Sequence[str | int]) -> dict[str | int, Row]:
        """The chunks whose ``key`` column is in ``keys``, by that key."""
        if not keys:
            return {}
        with self._lock:
            return {
                r[0]: r[1:]
                for r in self._db.execute(
                    f"SELECT {key}, chunk_id, path, section, status, text FROM chunks"
                    f" WHERE {key} IN ({','.join('?' * len(keys))})",
                    list(keys),
                )
            }

    def _vector(self, query: str, limit: int, excluded: set[str]) -> tuple[list[Row], dict[str, float]]:
        """The nearest chunks, and each one's similarity to the query by chunk id."""
        matrix, rowids = self._vector_table()
        qvec = self._vectors.blob(query) if rowids else b""  # cached unless never embedded (a typed query)
        order, sims = nearest(matrix, qvec) if rowids else ([], [])
        picked: list[Row] = []
        similarity: dict[str, float] = {}
        for start in range(0, len(order), limit * 2):  # rows read only for the nearest, a batch at a time
            batch = order[start : start + limit * 2]
            found = self._rows_by("rowid", [rowids[i] for i in batch])
            for i in batch:
                row = found.get(rowids[i])
                if row is not None and row[3] not in excluded and len(picked) < limit:
                    picked.append(row)
                    similarity[row[0]] = sims[i]
            if len(picked) >= limit:
                break
        return picked, similarity

    def close(self) -> None:
        with self._lock:
            self._db.close()
