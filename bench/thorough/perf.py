"""Planning one request with the thorough resolver on a 10,000-memory demo
store, warm (sentence vectors of the memories it reads already cached, as
after a first plan), against a single hybrid query on the same index.

    python -m bench.thorough.perf [--store DIR] [--size 10000] [--chunks 2000]
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from palinode_core.demo import build_demo_store
from palinode_core.forget import resolve, thorough, verify
from palinode_core.search.embed import Embedder
from palinode_core.search.index import SearchIndex
from palinode_core.storage.store import Store

REQUESTS = (("insights/forget-w.md", "I know Wilhelmina Cragg"),
            ("insights/forget-sneakers.md", "I collect vintage sneakers"))


def median(fn, reps: int = 7) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--store")
    ap.add_argument("--size", type=int, default=10000)
    ap.add_argument("--chunks", type=int, default=2000, help="chunk vectors to embed (as bench/run.py)")
    args = ap.parse_args(argv)
    tmp = tempfile.mkdtemp()
    root = Path(args.store) if args.store else Path(tmp) / "store"
    if not root.exists():
        t0 = time.perf_counter()
        build_demo_store(root, size=args.size)
        print(f"built {args.size} memories in {time.perf_counter() - t0:.0f}s", flush=True)
    store = Store(root)
    memories = store.scan().memories
    index = SearchIndex(store, Embedder())
    index.update_lexical(memories=memories)
    index.update_vectors(limit=args.chunks)
    rows = []
    for path, query in REQUESTS:
        index.search(query, 10)
        base = median(lambda q=query: index.search(q, 10))
        palinode = median(lambda p=path: resolve.plan_forget(store, index, p, memories))
        t0 = time.perf_counter()
        fplan = thorough.plan_thorough(store, index, path, memories)  # cold: embeds the sentences it reads
        cold = time.perf_counter() - t0
        warm = median(lambda p=path: thorough.plan_thorough(store, index, p, memories))
        # the recall verification Session.plan adds (issue 22): its own recall queries
        check = median(lambda f=fplan: verify.would_surface(index, f, memories))
        rows.append((path, len(memories), base, palinode, cold, warm, len(fplan.candidates), check))
    print("| request | memories | hybrid query | palinode plan | thorough cold | thorough warm | warm / query "
          "| goal | met | candidates | recall verification | warm + verification / query |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for path, n, base, pal, cold, warm, cands, check in rows:
        print(f"| {path} | {n:,} | {base * 1000:.1f} ms | {pal * 1000:.1f} ms | {cold:.1f} s | {warm * 1000:.1f} ms "
              f"| {warm / base:.2f} | <= 3.0 | {'yes' if warm / base <= 3.0 else 'no'} | {cands} "
              f"| {check * 1000:.1f} ms | {(warm + check) / base:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
