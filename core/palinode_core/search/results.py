"""What a search returns: ranked hits with the arm each came from, and the
index's counters."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

SearchMode = Literal["hybrid", "lexical"]


@dataclass(frozen=True)
class Hit:
    path: str
    chunk_id: str
    section: str
    text: str
    score: float
    bm25_rank: int | None  # 1-based rank in the BM25 arm, None if absent
    vector_rank: int | None
    status: str
    similarity: float | None = None  # the vector arm's cosine to the query; None for a lexical-only hit
    # carries the query's words (the lexical arm keeps those near its best) or is near it in meaning (rank.RELATED_SIM):
    # the vector arm ranks every memory, so its tail is there however unrelated
    related: bool = True

    @property
    def arms(self) -> str:
        return "+".join(a for a, r in (("bm25", self.bm25_rank), ("vector", self.vector_rank)) if r)


@dataclass
class SearchResult:
    hits: list[Hit]
    mode: SearchMode
    notice: str | None = None


@dataclass
class IndexStats:
    files: int = 0
    chunks: int = 0
    vectors: int = 0
    embedded_this_session: int = 0
    files_reindexed: int = 0  # BM25 files rewritten by the last update
    errors: list[str] = field(default_factory=list)
