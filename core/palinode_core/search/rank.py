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
# A hit the vector arm alone found is related to the query when at least this near it, and not far below the
# nearest hit (a share of its similarity). Query-to-memory cosines of the demo store: 'database' 0.30 to the
# database decision, 'judging' 0.27 to the judge of a panel; unrelated ones 0.08-0.2 ('poker' to sneakers 0.18),
# and a name's 0.27 to a profile that never names it is half of the 0.51 of the memory that does.
RELATED_SIM, RELATED_SHARE = 0.25, 0.6
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


def nearest(matrix: np.ndarray | list[array], qvec: bytes) -> tuple[list[int], list[float]]:
    """Row indices of ``matrix``, most similar to ``qvec`` first (ties keep
    row order: a stable sort, in both representations), and each row's similarity."""
    if isinstance(matrix, list):
        q = array("f", qvec)
        sims = [sum(map(operator.mul, row, q)) for row in matrix]
        return sorted(range(len(sims)), key=lambda i: -sims[i]), sims
    import numpy as np

    products = matrix @ np.frombuffer(qvec, dtype=np.float32)
    order: list[int] = np.argsort(-products, kind="stable").tolist()
    return order, products.tolist()


def fuse(
    bm25: list[Row],
    vector: list[Row],
    limit: int,
    per_file: int,
    daily_penalty: bool,
    similarity: dict[str, float] | None = None,
) -> list[Hit]:
    """Both arms fused by RRF, best first, at most ``per_file`` hits per path;
    scores normalised to the best (rank artifacts, not similarities: those,
    by chunk id, ride along for the vector arm's hits)."""
    similarity = similarity or {}
    floor = max(RELATED_SIM, RELATED_SHARE * max(similarity.values(), default=0.0))
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
        hits.append(
            Hit(
                path,
                cid,
                section,
                text,
                scores[cid] / best,
                ranks[cid][0],
                ranks[cid][1],
                status,
                similarity.get(cid),
                ranks[cid][0] is not None or similarity.get(cid, 0.0) >= floor,
            )
        )
        if len(hits) >= limit:
            break
    return hits
