"""Semantic coverage without embedding every sentence (issue 43): a cheap pass
over every unit text picks, for each request's preference, those the exact
model may put near it, and the exact model embeds only those.

The cheap pass is the model with each word piece's context averaged out. The
exact model's sentence vector is the normalised mean of its last layer's output
at each word piece; the table here holds, for each word piece, the mean of
those outputs over a sample of this store's texts the exact model embeds first
(SAMPLE of them, the smallest hashes: the same draw on a rerun), or, for a piece
none of them holds, its output alone ([CLS] piece [SEP]). A text's cheap vector
is the normalised mean of its pieces' rows, [CLS] and [SEP] included, as the
model pools. Per preference the texts whose cheap vector is nearest are
embedded exactly: TOP_SHARE of those left, at least TOP_MIN.

Measured against the exact model's nearest 20 per preference over every unit
text (bench/cascade_coverage.py, bench/README.md): the input word-piece table
alone kept 0.64 of them in its top 2,000 on the 1k demo store; `index` with this
cascade keeps 0.99 (the worst preference 0.95), embedding 20,820 of 44,631
sentences in 0.30x the CPU of embedding them all.

Only numpy and the embedder; the tables are the unit index's (search.unit_index).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import Cancelled
from ..storage.child import Progress
from .embed import DIM, Embedder
from .minilm import VOCAB

if TYPE_CHECKING:
    import numpy as np

    from .unit_index import UnitIndex
    from .vectors import VectorCache

SAMPLE = 3000  # texts embedded at random for the table (at 1k, 1,000-4,000 kept the same share)
TOP_SHARE = 0.08  # per preference, this share of the texts not embedded is embedded exactly ...
TOP_MIN = 2000  # ... and at least this many
BELOW = 12000  # fewer texts left than this: all are embedded (the cascade's own work would not pay)
FRESH = 2000  # a plan embeds the sentences written since the last cascade when at most this many (about 3 s)
SCREEN_CALL = 8192  # texts cut into word pieces and scored at a time (the unit of progress and cancelling)
_BLOCK = 1 << 13  # word pieces per block of cheap vectors: their rows (12 MB) held at once


class PieceTable:
    """Sums of the last-layer outputs at each word piece, and how many were
    summed: an ``Embedder.encode`` sink (its batches may run in two threads)."""

    def __init__(self, vocab: int) -> None:
        import numpy as np

        self.sums = np.zeros((vocab, DIM), np.float32)
        self.counts = np.zeros(vocab, np.int64)
        self._lock = threading.Lock()

    def add(self, tokens: np.ndarray, mask: np.ndarray, hidden: np.ndarray) -> None:
        import numpy as np

        kept = mask.astype(bool)
        ids, rows = tokens[kept], hidden[kept]
        order = np.argsort(ids, kind="stable")
        pieces, starts = np.unique(ids[order], return_index=True)
        sums = np.add.reduceat(rows[order], starts, axis=0)
        counts = np.diff(np.append(starts, len(ids)))
        with self._lock:
            self.sums[pieces] += sums
            self.counts[pieces] += counts


class CheapModel:
    """Cheap vectors from a ``PieceTable``: each piece's mean output, or, for a
    piece the table never saw, its output alone (the model runs on those, three
    pieces each, as texts need them)."""

    def __init__(self, table: PieceTable, embedder: Embedder) -> None:

        self.embedder = embedder
        self._around = embedder.tokens([""])[0]  # [CLS] and [SEP]: a piece alone is read between them
        self.ready = table.counts > 0
        self.rows = table.sums  # the sums become the means in place (the table is not added to after)
        self.rows[self.ready] /= table.counts[self.ready, None]

    def vectors(self, ids: Sequence[Sequence[int]]) -> np.ndarray:
        """The normalised mean of each text's pieces' rows ([CLS] and [SEP] included,
        as the model pools), a block at a time (at most _BLOCK pieces' rows at once)."""
        import numpy as np

        lengths = np.fromiter((len(x) for x in ids), np.int64, len(ids))
        flat = np.fromiter((p for x in ids for p in x), np.int64, int(lengths.sum()))
        unseen = np.unique(flat[~self.ready[flat]])
        if len(unseen):
            first, last = self._around
            self.embedder.encode_ids([[first, int(p), last] for p in unseen], _Alone(self.rows))
            self.ready[unseen] = True
        out = np.zeros((len(ids), DIM), np.float32)
        ends = np.cumsum(lengths)
        start = 0
        while start < len(ids):
            base = ends[start - 1] if start else 0
            end = max(start + 1, int(np.searchsorted(ends, base + _BLOCK, side="right")))
            span = lengths[start:end]
            filled = span > 0
            if filled.any():
                starts = (np.concatenate(([0], np.cumsum(span)[:-1])))[filled]
                block = self.rows[flat[base : base + int(span.sum())]]
                out[start:end][filled] = np.add.reduceat(block, starts, axis=0) / span[filled, None]
            start = end
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)


class _Alone:
    """A sink keeping the output at each input's middle piece: the piece alone."""

    def __init__(self, rows: np.ndarray) -> None:
        self.rows = rows

    def add(self, tokens: np.ndarray, mask: np.ndarray, hidden: np.ndarray) -> None:
        self.rows[tokens[:, 1]] = hidden[:, 1]


def per_query(count: int) -> int:
    """How many of ``count`` texts are embedded for each preference."""
    return min(count, max(TOP_MIN, int(count * TOP_SHARE)))


def nearest(scores: np.ndarray, k: int) -> np.ndarray:
    """Rows among the ``k`` highest of any column of ``scores`` (texts x queries),
    each row's best rank first."""
    import numpy as np

    rows, queries = scores.shape
    if not rows or not queries or k <= 0:
        return np.zeros(0, np.int64)
    k = min(k, rows)
    best = np.full(rows, k, np.int64)
    for column in scores.T:
        top = np.argpartition(-column, k - 1)[:k]
        ranks = np.empty(k, np.int64)
        ranks[np.argsort(-column[top], kind="stable")] = np.arange(k)
        best[top] = np.minimum(best[top], ranks)
    picked = np.nonzero(best < k)[0]
    return picked[np.argsort(best[picked], kind="stable")]


def cover(
    units: UnitIndex,
    vectors: VectorCache,
    prefs: Sequence[str],
    rest: list[tuple[str, str]],
    progress: Progress | None,
    cancel: threading.Event,
) -> tuple[int, list[str]]:
    """Embed what covering ``prefs`` (their vectors cached) needs of ``rest``
    (hash, text of the unit texts with no vector): a preference not covered
    yet is screened against all of them, a covered one against those never
    screened (added since). Fewer than BELOW to screen are all embedded.
    Returns how many were embedded and the texts judged far from every
    preference (to mark screened once the preferences' similarities are stored)."""
    import numpy as np

    covered = units.covered_prefs(prefs)
    screened = units.screened(h for h, _ in rest)
    fresh = {h for h, _ in rest if h not in screened}
    pool = rest if len(covered) < len(prefs) else [pair for pair in rest if pair[0] in fresh]
    if len(pool) < BELOW:
        return vectors.embed_pairs(pool, progress, "sentences"), []
    # the table, from texts drawn at random (the smallest hashes: the same draw on a rerun)
    table = PieceTable(VOCAB)
    sample = sorted(pool)[:SAMPLE]
    done = vectors.embed_pairs(sample, progress, "sample", pieces=table)
    drawn = {h for h, _ in sample}
    pool = [pair for pair in pool if pair[0] not in drawn]
    model = CheapModel(table, vectors.embedder)
    queries, _missing = vectors.vectors_for(list(prefs))  # all cached: embedded before the sentences
    scores = np.zeros((len(pool), len(prefs)), np.float32)
    if progress:
        progress("screening", 0, len(pool))
    for start in range(0, len(pool), SCREEN_CALL):
        if cancel.is_set():
            raise Cancelled()
        part = pool[start : start + SCREEN_CALL]
        scores[start : start + len(part)] = model.vectors(vectors.embedder.tokens([t for _, t in part])) @ queries.T
        if progress:
            progress("screening", start + len(part), len(pool))
    new_cols = [j for j, p in enumerate(prefs) if p not in covered]
    old_cols = [j for j, p in enumerate(prefs) if p in covered]
    picked = [int(i) for i in nearest(scores[:, new_cols], per_query(len(pool)))]
    rows = np.array([i for i, (h, _) in enumerate(pool) if h in fresh], np.int64)
    if old_cols and len(rows):
        picked += [
            int(rows[i]) for i in nearest(scores[np.ix_(rows, np.array(old_cols, np.int64))], per_query(len(rows)))
        ]
    chosen = list(dict.fromkeys(picked))  # the likeliest first: an interrupted run has embedded them
    done += vectors.embed_pairs([pool[i] for i in chosen], progress, "candidates")
    taken = set(chosen)
    return done, [h for i, (h, _) in enumerate(pool) if i not in taken]
