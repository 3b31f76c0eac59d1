"""The vector cache: one embedding per distinct text, whatever the text is (a
chunk, a forget request's preference, a sentence, a typed query).

Format, in the index's ``index.sqlite3`` (beside ``files`` and ``chunks``)::

    vectors(hash TEXT PRIMARY KEY, vec BLOB)

``hash`` is ``text_hash(text)``: the SHA-256 hex digest of the text's UTF-8
bytes, exactly as embedded (no normalisation: "I live in Berlin" and "i live
in berlin" are two rows). ``vec`` is the text's L2-normalised
all-MiniLM-L6-v2 embedding, ``DIM`` (384) float32 values in native byte
order (``ndarray.tobytes()``). A chunk row's ``chunks.hash`` is the same hash
of its text, so chunk vectors join on it. A row of the wrong size (a damaged
cache) counts as missing and is rewritten.

API (``SearchIndex`` has the same methods; the layers above use those):

- ``vectors_for(texts) -> (array, missing)``: a ``len(texts) x DIM`` float32
  array of the cached vectors and the indices (into ``texts``) of those with
  none, whose rows are zero. Never loads the model.
- ``embed_missing(texts, progress=None) -> int``: embed and cache every text
  that has no vector (loading the model only then; ``Embedder.on_load`` fires
  first) and return how many were embedded. Raises ``EmbeddingUnavailable``
  when the model cannot load.
- ``vectors(texts) -> array``: both in one call.
- ``blob(text) -> bytes``: one text's vector as raw float32 bytes, embedded
  first if needed; numpy is imported only by the array-returning calls.
- ``cached_blobs(texts) -> list[bytes | None]``: each text's cached vector as
  raw bytes, or None; no numpy, no model (for ``rank.similarities``).

What is embedded ahead of need: every chunk, and every forget request's
preference (``Memory.forget_pref``), whenever the index's vectors are updated,
so planning a request reads cached vectors and never imports torch. The
thorough resolver caches its sentences the same way: ``embed_missing`` once
(at index time or when first needed), ``vectors_for`` after.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..errors import Cancelled, EmbeddingUnavailable
from ..storage.child import Progress, ProgressPhase
from .chunks import text_hash
from .embed import DIM, Embedder

if TYPE_CHECKING:
    import numpy as np

    from .embed import PieceSink

# One encode call per CALL texts: the unit of cancelling, progress and commits.
CALL = 256
# Texts are sorted by length within windows of this many and cut into calls, so each batch
# pads little (the model sorts only within one call); a window bounds the memory it holds.
WINDOW = 4096
SCHEMA = "CREATE TABLE IF NOT EXISTS vectors (hash TEXT PRIMARY KEY, vec BLOB);"
_IN_LIMIT = 500  # parameters per IN (...) query, under SQLite's limit


def spread_order(count: int) -> list[int]:
    """0..count-1 in bit-reversed order (0, 8, 4, 12, 2, ...): each prefix takes
    evenly from the whole range. The calls of a window are sorted by length
    (little padding) but run in this order, so the rate measured so far is the
    rate of what is left and an ETA from it holds: run longest first, the
    1k store's chunk ETA was 1.8-17x the time left; in this order, on the
    same calls, 1.0-1.55x from the second call on (bench/README.md)."""
    bits = max(1, (count - 1).bit_length())
    return [i for i in sorted(range(1 << bits), key=lambda i: int(f"{i:0{bits}b}"[::-1], 2)) if i < count]


class VectorCache:
    def __init__(
        self,
        db: sqlite3.Connection,
        lock: threading.RLock,
        embedder: Embedder,
        cancel: threading.Event | None = None,
        on_insert: Callable[[list[str], np.ndarray], None] | None = None,
    ) -> None:
        self._db = db
        self._lock = lock
        self.embedder = embedder
        self._cancel = cancel or threading.Event()
        # called with each batch's hashes and vectors in the transaction that stores them,
        # so what is derived from new vectors (unit_index's similarities) is never behind them
        self._on_insert = on_insert
        with lock:
            db.executescript(SCHEMA)

    def _cached(self, hashes: Sequence[str]) -> dict[str, bytes]:
        distinct = list(dict.fromkeys(hashes))
        found: dict[str, bytes] = {}
        with self._lock:
            for start in range(0, len(distinct), _IN_LIMIT):
                part = distinct[start : start + _IN_LIMIT]
                found.update(
                    self._db.execute(f"SELECT hash, vec FROM vectors WHERE hash IN ({','.join('?' * len(part))})", part)
                )
        return {h: v for h, v in found.items() if isinstance(v, bytes) and len(v) == DIM * 4}

    def cached_blobs(self, texts: Sequence[str]) -> list[bytes | None]:
        hashes = [text_hash(t) for t in texts]
        found = self._cached(hashes)
        return [found.get(h) for h in hashes]

    def vectors_for(self, texts: Sequence[str]) -> tuple[np.ndarray, list[int]]:
        import numpy as np

        hashes = [text_hash(t) for t in texts]
        found = self._cached(hashes)
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        missing: list[int] = []
        for i, h in enumerate(hashes):
            blob = found.get(h)
            if blob is None:
                missing.append(i)
            else:
                out[i] = np.frombuffer(blob, dtype=np.float32)
        return out, missing

    def missing(self, texts: Sequence[str]) -> list[tuple[str, str]]:
        """(hash, text) of the distinct texts with no cached vector, in order."""
        pairs = {text_hash(t): t for t in texts}
        found = self._cached(list(pairs))
        return [(h, t) for h, t in pairs.items() if h not in found]

    def embed_missing(self, texts: Sequence[str], progress: Progress | None = None) -> int:
        return self.embed_pairs(self.missing(texts), progress)

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        out, missing = self.vectors_for(texts)
        if missing:
            self.embed_missing([texts[i] for i in missing])
            out, missing = self.vectors_for(texts)
        return out

    def blob(self, text: str) -> bytes:
        """One text's vector as float32 bytes (no numpy), embedding it first if it has none."""
        key = text_hash(text)
        found = self._cached([key]).get(key)
        if found is None:
            self.embed_pairs([(key, text)])
            found = self._cached([key])[key]
        return found

    def embed_pairs(
        self,
        pairs: Sequence[tuple[str, str]],
        progress: Progress | None = None,
        phase: ProgressPhase = "vectors",
        before: int = 0,
        total: int | None = None,
        pieces: PieceSink | None = None,
    ) -> int:
        """Embed (hash, text) pairs known to be missing and cache them.

        Progress: ``("model", 0, 1)`` and ``("model", 1, 1)`` around loading the
        model when it loads here (its own step: its seconds are not in the rate),
        then ``(phase, before + done, total)`` from ``done`` 0, once the model is
        ready, after each call (``before`` and ``total`` let several calls count
        as one phase). ``pieces``: the embedder's word-piece sink (search.cascade)."""
        if not pairs:
            return 0
        loading = progress is not None and not self.embedder.ready
        if loading and progress is not None:
            progress("model", 0, 1)
        if not self.embedder.load():
            raise EmbeddingUnavailable(self.embedder.notice or "the embedding model could not load")
        if progress is not None:
            if loading:
                progress("model", 1, 1)
            progress(phase, before, total or len(pairs))
        done = 0
        for window_start in range(0, len(pairs), WINDOW):
            window = sorted(pairs[window_start : window_start + WINDOW], key=lambda p: -len(p[1]))
            calls = [window[start : start + CALL] for start in range(0, len(window), CALL)]
            for part in (calls[i] for i in spread_order(len(calls))):
                if self._cancel.is_set():
                    raise Cancelled()
                batch = [text for _, text in part]
                vecs = self.embedder.encode(batch) if pieces is None else self.embedder.encode(batch, pieces)
                with self._lock:
                    self._db.executemany(
                        "INSERT OR REPLACE INTO vectors VALUES (?,?)",
                        [(h, v.tobytes()) for (h, _), v in zip(part, vecs, strict=False)],
                    )
                    if self._on_insert is not None:
                        self._on_insert([h for h, _ in part], vecs)
                    self._db.commit()
                done += len(part)
                if progress:
                    progress(phase, before + done, total or len(pairs))
        return done

    def count(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0]
