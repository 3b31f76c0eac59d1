"""The first-embedding comparison for ``bench/fast_commands.py``, in one process
so both arms share the machine's state: today's pipeline (before issue 15:
chunks in path order, encode calls of 256 at batch 32) against the index's
(``VectorCache.embed_pairs`` with the default ``Embedder``), on the same
chunks, then the top-10 neighbour agreement of a fixed query set.

    python -m bench.embed_compare STORE N   # prints one JSON line last
"""
from __future__ import annotations

import json
import os
import sqlite3
import sys
import threading
import time

import numpy as np
from palinode_core.search.chunks import chunk_memory, text_hash
from palinode_core.search.embed import Embedder
from palinode_core.search.vectors import VectorCache
from palinode_core.storage.store import Store

ROUNDS = int(os.environ.get("BENCH_EMBED_ROUNDS", "2"))


def today(embedder: Embedder, chunks: list) -> np.ndarray:
    ordered = sorted(range(len(chunks)), key=lambda i: ("/gen-" in chunks[i].path, chunks[i].chunk_id))
    out = np.zeros((len(chunks), 384), dtype=np.float32)
    for start in range(0, len(ordered), 256):
        part = ordered[start:start + 256]
        out[part] = embedder.encode([chunks[i].text for i in part])
    return out


def ours(embedder: Embedder, chunks: list) -> np.ndarray:
    db = sqlite3.connect(":memory:", check_same_thread=False)
    cache = VectorCache(db, threading.RLock(), embedder)
    pairs = list({text_hash(c.text): c.text for c in chunks}.items())
    cache.embed_pairs(pairs)
    vectors, missing = cache.vectors_for([c.text for c in chunks])
    assert not missing
    return vectors


def main() -> None:
    root, n = sys.argv[1], int(sys.argv[2])
    memories = sorted(Store(root).scan().memories.values(), key=lambda m: m.rel)
    chunks = [c for m in memories for c in chunk_memory(m)]
    sample = chunks[::max(1, len(chunks) // n)][:n]  # spread over the whole store
    queries = sorted({m.forget_pref for m in memories if m.forget_pref})
    queries += [m.title for m in memories[::max(1, len(memories) // 40)]]
    arms = {"today": (Embedder(batch_size=32), today), "ours": (Embedder(), ours)}
    best: dict[str, float] = {}
    per_cpu: dict[str, float] = {}  # chunks per CPU-second (all threads): steadier on a shared machine
    vectors: dict[str, np.ndarray] = {}
    for embedder, _ in arms.values():
        embedder.encode([c.text for c in sample[:8]])  # load and warm; the goal is throughput
    for _ in range(ROUNDS):  # alternate arms so both see the same machine
        for name, (embedder, fn) in arms.items():
            start, cpu = time.perf_counter(), time.process_time()
            vectors[name] = fn(embedder, sample)
            rate = len(sample) / (time.perf_counter() - start)
            best[name] = max(best.get(name, 0.0), rate)
            per_cpu[name] = max(per_cpu.get(name, 0.0), len(sample) / (time.process_time() - cpu))
            print(f"{name}: {rate:.1f} chunks/s", file=sys.stderr, flush=True)
    tops = {}
    for name, (embedder, _) in arms.items():
        sims = embedder.encode(queries) @ vectors[name].T
        tops[name] = np.argsort(-sims, axis=1, kind="stable")[:, :10]
    agree = float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(tops["today"], tops["ours"])]))
    print(json.dumps({"chunks": len(sample), "today": best["today"], "ours": best["ours"], "agree": agree,
                      "queries": len(queries), "today_per_cpu_s": per_cpu["today"], "ours_per_cpu_s": per_cpu["ours"]}))


if __name__ == "__main__":
    main()
