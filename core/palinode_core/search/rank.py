"""Ranking, pure: nearest chunks by cosine similarity (vectors are normalised,
so a dot product), and reciprocal rank fusion of the lexical and vector arms
(k=60, equal weights), as Palinode ranks."""

from __future__ import annotations

import operator
from array import array
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .results import Hit

if TYPE_CHECKING:
    import numpy as np

RRF_K = 60
# Below this many products pure Python beats importing numpy (about 0.08 s of CPU, the
# cost of ~7,000 products):
# a leak check after an apply compares a few dozen sentences.
PYTHON_PRODUCTS = 6_000


def similarities(rows: Sequence[bytes], queries: Sequence[bytes]) -> list[list[float]]:
    """Dot products (cosines: the vectors are normalised) of each row with
    each query, all float32 vectors as raw bytes: ``out[i][j]`` is row i with
    query j. Chosen by size alone, so the same inputs always take the same path."""
    if not rows or not queries:
        return [[] for _ in rows]
    width = len(queries[0])
    if any(len(v) != width for v in (*rows, *queries)) or width % 4:
        raise ValueError("vectors of different sizes")
    if len(rows) * len(queries) <= PYTHON_PRODUCTS:
        qs = [array("f", q) for q in queries]
        return [[sum(map(operator.mul, r, q)) for q in qs] for r in map(array, "f" * len(rows), rows)]
    import numpy as np

    mat = np.frombuffer(b"".join(rows), dtype=np.float32).reshape(len(rows), -1)
    qmat = np.frombuffer(b"".join(queries), dtype=np.float32).reshape(len(queries), -1)
    out: list[list[float]] = (mat @ qmat.T).tolist()
    return out


Row = tuple[str, str, str, str, str]  # chunk_id, path, section, status, text


def nearest(matrix: np.ndarray | list[array], qvec: bytes) -> list[int]:
    """Row indices of ``matrix``, most similar to ``qvec`` first; ties keep
    row order (a stable sort, in both representations)."""
    if isinstance(matrix, list):
        q = array("f", qvec)
        sims = [sum(map(operator.mul, row, q)) for row in matrix]
        return sorted(range(len(sims)), key=lambda i: -sims[i])
    import numpy as np

    order: list[int] = np.argsort(-(matrix @ np.frombuffer(qvec, dtype=np.float32)), kind="stable").tolist()
    return order


def fuse(bm25: list[Row], vector: list[Row], limit: int, per_file: int, daily_penalty: bool) -> list[Hit]:
    """Both arms fused by RRF, best first, at most ``per_file`` hits per path;
    scores normalised to the best (rank artifacts, not similarities)."""
    scores: dict[str, float] = {}
    info: dict[str, tuple[str, str, str, str]] = {}
    ranks: dict[str, list[int | None]] = {}
    for arm, rows in ((0, bm25), (1, vector)):
        for rank, (cid, path, section, status, text) in enumerate(rows):
            scores[cid] = scores.get(cid, 0.0) + 0.5 / (RRF_K + rank + 1)
            info[cid] = (path, section, status, text)
            ranks.setdefault(cid, [None, None])[arm] = rank + 1
    if daily_penalty:
        for cid, (path, *_rest) in info.items():
            if "daily" in path.split("/")[:-1]:
                scores[cid] *= 0.3
    best = max(scores.values(), default=1.0) or 1.0
    ordered = sorted(scores, key=lambda c: (-scores[c], info[c][0], c))
    per_path: dict[str, int] = {}
    hits: list[Hit] = []
    for cid in ordered:
        path, section, status, text = info[cid]
        if per_path.get(path, 0) >= per_file:
            continue
        per_path[path] = per_path.get(path, 0) + 1
        hits.append(Hit(path, cid, section, text, scores[cid] / best, ranks[cid][0], ranks[cid][1], status))
        if len(hits) >= limit:
            break
    return hits
