"""Sentence vectors cached by text hash, behind the vector cache's API
(``vectors_for(texts) -> (array, missing)``, ``embed_missing(texts)``).

A search index that offers that API itself (one cache for chunks, requests
and sentences) is used as it is; otherwise this small cache keeps its own
table, ``sentence_vectors(hash TEXT PRIMARY KEY, vec BLOB)``, in the store's
cache directory: SHA-256 of the text's UTF-8 bytes, the L2-normalised
all-MiniLM-L6-v2 vector as native float32 bytes."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from ..search.embed import DIM, Embedder

_IN = 500
_CALL = 256


class VectorSource(Protocol):
    def vectors_for(self, texts: Sequence[str]) -> tuple[np.ndarray, list[int]]: ...

    def embed_missing(self, texts: Sequence[str]) -> int: ...


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class SentenceVectors:
    def __init__(self, cache_dir: Any, embedder: Embedder) -> None:
        self.embedder = embedder
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(cache_dir / "sentences.sqlite3"), check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS sentence_vectors (hash TEXT PRIMARY KEY, vec BLOB)")
        self._memo: dict[str, np.ndarray] = {}  # warm plans read memory, not sqlite

    def _cached(self, hashes: list[str]) -> dict[str, np.ndarray]:
        found = {h: self._memo[h] for h in hashes if h in self._memo}
        wanted = [h for h in dict.fromkeys(hashes) if h not in found]
        with self._lock:
            for i in range(0, len(wanted), _IN):
                part = wanted[i : i + _IN]
                for h, blob in self._db.execute(
                    f"SELECT hash, vec FROM sentence_vectors WHERE hash IN ({','.join('?' * len(part))})", part
                ):
                    if isinstance(blob, bytes) and len(blob) == DIM * 4:
                        found[h] = self._memo[h] = np.frombuffer(blob, dtype=np.float32)
        return found

    def vectors_for(self, texts: Sequence[str]) -> tuple[np.ndarray, list[int]]:
        hashes = [text_hash(t) for t in texts]
        found = self._cached(hashes)
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        missing = []
        for i, h in enumerate(hashes):
            vec = found.get(h)
            if vec is None:
                missing.append(i)
            else:
                out[i] = vec
        return out, missing

    def embed_missing(self, texts: Sequence[str]) -> int:
        _, missing = self.vectors_for(texts)
        todo = list(dict.fromkeys(texts[i] for i in missing))
        if not todo:
            return 0
        if not self.embedder.load():
            raise RuntimeError(self.embedder.notice or "the embedding model could not load")
        todo.sort(key=len)  # similar lengths batch with little padding
        for i in range(0, len(todo), _CALL):
            part = todo[i : i + _CALL]
            vecs = self.embedder.encode(part)
            rows = [(text_hash(t), v.astype(np.float32).tobytes()) for t, v in zip(part, vecs, strict=True)]
            with self._lock:
                self._db.executemany("INSERT OR REPLACE INTO sentence_vectors VALUES (?,?)", rows)
                self._db.commit()
        return len(todo)


def vector_source(index: Any) -> VectorSource:
    """The index's own vector cache when it has one, else this module's (one per index)."""
    if hasattr(index, "vectors_for") and hasattr(index, "embed_missing"):
        return index  # type: ignore[no-any-return,unused-ignore]
    source = getattr(index, "_sentence_vectors", None)
    if source is None:
        source = SentenceVectors(index.cache_dir, index.embedder)
        index._sentence_vectors = source
    return source  # type: ignore[no-any-return,unused-ignore]
